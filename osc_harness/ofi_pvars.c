/* MPI_T reader for btl-ofi's counters (see ofi_pvars.h). */
#include "ofi_pvars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OSC_HARNESS_COMPONENT
#define OSC_HARNESS_COMPONENT "ofi"
#endif

static const char *const suffixes[OFI_PVAR_COUNT] = {
    [OFI_PVAR_PUTS] = "put_count",
    [OFI_PVAR_GETS] = "get_count",
    [OFI_PVAR_PUT_BYTES] = "put_bytes",
    [OFI_PVAR_GET_BYTES] = "get_bytes",
    [OFI_PVAR_ATOMICS] = "atomic_count",
    [OFI_PVAR_ATOMICS_EMULATED] = "atomic_emulated_count",
    [OFI_PVAR_CQ_ENTRIES] = "cq_entries",
    [OFI_PVAR_CQ_ERRORS] = "cq_errors",
    [OFI_PVAR_FLUSHES] = "flush_count",
    [OFI_PVAR_REGISTRATIONS] = "registrations",
    [OFI_PVAR_REGISTRATIONS_LIVE] = "registrations_live",
    [OFI_PVAR_REFUSED] = "refused_count",
    [OFI_PVAR_POST_EAGAIN] = "post_eagain",
    [OFI_PVAR_INJECTED] = "injected_faults",
    [OFI_PVAR_PEERS] = "peers",
    [OFI_PVAR_WAKE_ARMED] = "cq_wake_armed",
    [OFI_PVAR_WAKE_READS] = "cq_wake_reads",
    [OFI_PVAR_STRIPES] = "stripe_count",
    [OFI_PVAR_LOCAL_PUTS] = "local_put_count",
};
static char names[OFI_PVAR_COUNT][96];

static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle handles[OFI_PVAR_COUNT];
static int found;

const char *ofi_component_name(void)
{
    const char *name = getenv("BTL_OFI_COMPONENT");
    return (name && *name) ? name : OSC_HARNESS_COMPONENT;
}

const char *ofi_pvar_name(enum ofi_pvar_id id)
{
    if ('\0' == names[id][0]) {
        snprintf(names[id], sizeof(names[id]), "btl_%s_%s", ofi_component_name(), suffixes[id]);
    }
    return names[id];
}

/* The valid performance variable at index whose name is one of our counters: its handle. */
static void ofi_pvar_bind(int index)
{
    char vname[256], desc[256];
    int name_len = sizeof(vname), desc_len = sizeof(desc), verbosity, var_class, bind, readonly,
        continuous, atomic, count;
    MPI_Datatype dtype;
    MPI_T_enum enumtype;

    /* get_info fails for invalid variables, e.g. those of a closed component */
    if (MPI_SUCCESS != MPI_T_pvar_get_info(index, vname, &name_len, &verbosity, &var_class, &dtype,
                                           &enumtype, desc, &desc_len, &bind, &readonly,
                                           &continuous, &atomic)) {
        return;
    }
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        if (MPI_T_PVAR_HANDLE_NULL == handles[i] && 0 == strcmp(vname, ofi_pvar_name(i)) &&
            MPI_SUCCESS == MPI_T_pvar_handle_alloc(session, index, NULL, &handles[i], &count)) {
            ++found;
        }
    }
}

int ofi_pvars_open(void)
{
    int level = MPI_THREAD_SINGLE, provided, num = 0;

    /*
     * MPI_T at the program's current thread level: Open MPI 4.1 applies MPI_T's level to the
     * whole library, so asking for less would silently downgrade an MPI_THREAD_MULTIPLE program.
     */
    MPI_Query_thread(&level);
    if (MPI_SUCCESS != MPI_T_init_thread(level, &provided) ||
        MPI_SUCCESS != MPI_T_pvar_session_create(&session)) {
        return -1;
    }
    found = 0;
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        handles[i] = MPI_T_PVAR_HANDLE_NULL;
    }
    MPI_T_pvar_get_num(&num);
    for (int index = 0; index < num; ++index) {
        ofi_pvar_bind(index);
    }
    return 0;
}

void ofi_pvars_read(ofi_pvars_t *out)
{
    memset(out, 0, sizeof(*out));
    out->present = (found == OFI_PVAR_COUNT);
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        if (MPI_T_PVAR_HANDLE_NULL != handles[i]) {
            MPI_T_pvar_read(session, handles[i], &out->value[i]);
        }
    }
}

void ofi_pvars_delta(const ofi_pvars_t *before, const ofi_pvars_t *after, unsigned long *delta)
{
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        delta[i] = after->value[i] - before->value[i];
    }
}

void ofi_pvars_close(void)
{
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        if (MPI_T_PVAR_HANDLE_NULL != handles[i]) {
            MPI_T_pvar_handle_free(session, &handles[i]);
        }
    }
    if (MPI_T_PVAR_SESSION_NULL != session) {
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
}
