/*
 * btl-ofi MCA parameters: where their values live, their registration, and
 * the parsing of those Open MPI would read too leniently.
 */

#include "btl_ofi_params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"

#include "btl_ofi_report.h"

mca_btl_ofi_params_t mca_btl_ofi_params;

const mca_base_var_enum_value_t mca_btl_ofi_completion_values[] = {
    {MCA_BTL_OFI_COMPLETION_AUTO, "auto"},
    {MCA_BTL_OFI_COMPLETION_DELIVERY, "delivery"},
    {MCA_BTL_OFI_COMPLETION_READ_PROOF, "read_proof"},
    {MCA_BTL_OFI_COMPLETION_LOCAL, "local"},
    {0, NULL},
};

const mca_base_var_enum_value_t mca_btl_ofi_path_values[] = {
    {MCA_BTL_OFI_PATH_AUTO, "auto"},
    {MCA_BTL_OFI_PATH_NATIVE, "native"},
    {MCA_BTL_OFI_PATH_MESSAGES, "messages"},
    {0, NULL},
};

const mca_base_var_enum_value_t mca_btl_ofi_local_atomics_values[] = {
    {MCA_BTL_OFI_LOCAL_ATOMICS_AUTO, "auto"},
    {MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL, "local"},
    {MCA_BTL_OFI_LOCAL_ATOMICS_NETWORK, "network"},
    {0, NULL},
};

/*
 * Integer parameters. They are registered as strings and parsed here, because
 * Open MPI reads a non-numeric value of an int variable as the number its
 * leading digits make ("lots" -> 0) without a word. A value that is not an
 * integer in [min, max] disables the component with a message.
 */
typedef struct mca_btl_ofi_int_param_t {
    const char *name;
    const char *help;
    const char *default_text;
    int level; /**< ompi_info level: 4 for users, 9 for tuning and debug */
    int min, max;
    int *value; /**< parsed at init */
    char *text; /**< MCA storage */
} mca_btl_ofi_int_param_t;

static mca_btl_ofi_int_param_t mca_btl_ofi_int_params[] = {
    {
        .name = "progress_batch",
        .level = OPAL_INFO_LVL_9,
        .help = "Completion-queue entries read per progress call",
        .default_text = "32",
        .min = 1,
        .max = MCA_BTL_OFI_MAX_CQ_BATCH,
        .value = &mca_btl_ofi_params.progress_batch,
    },
    {
        .name = "op_free_list_max",
        .level = OPAL_INFO_LVL_9,
        .help = "Most operation contexts kept at once (-1: unlimited); a full list makes posts "
                "return OPAL_ERR_OUT_OF_RESOURCE",
        .default_text = "-1",
        .min = -1,
        .max = 1 << 24,
        .value = &mca_btl_ofi_params.op_free_list_max,
    },
    {
        .name = "atomic_nofetch_as_fetch",
        .level = OPAL_INFO_LVL_9,
        .help = "Post non-fetching atomics as fetching ones into a scratch word: -1 where the "
                "provider needs it (shm with delivery-complete, whose non-fetching atomics "
                "release an inject buffer twice and so corrupt later operations), 0 never "
                "(debug), 1 always",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.nofetch_as_fetch,
    },
    {
        .name = "put_coalesce",
        .level = OPAL_INFO_LVL_9,
        .help = "Gather small puts to a peer that already has a put in flight into one "
                "message, which the peer's progress writes into the window after checking key "
                "and bounds, and acknowledges once for all of them: -1 where every put costs a "
                "message anyway (tcp, tcp;ofi_rxm), 0 never, 1 on any provider (a lone put "
                "is an fi_write unless the peer just had a burst)",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.put_coalesce,
    },
    {
        .name = "stripe_min",
        .level = OPAL_INFO_LVL_4,
        .help = "Puts and gets of at least this many bytes to a peer on another node are split "
                "over every NIC of the provider (0: never)",
        .default_text = "262144",
        .min = 0,
        .max = INT32_MAX,
        .value = &mca_btl_ofi_params.stripe_min,
    },
    {
        .name = "idle_poll_ratio",
        .level = OPAL_INFO_LVL_9,
        .help = "Where one process uses several domains (peers on this node over "
                "btl_ofi_local_provider, further NICs): a network completion queue with "
                "nothing of this process's own in flight is left unread for this many times "
                "what one read of it costs (tcp: a system call; a NIC: a memory read), so its "
                "reads take at most 1/(N+1) of a loop that waits for on-node operations. A "
                "peer on another node whose operations this process's progress applies (tcp, "
                "sockets) is served that much later at most, and at every pass while its "
                "operations keep coming. 0: read at every pass",
        .default_text = "8",
        .min = 0,
        .max = 1024,
        .value = &mca_btl_ofi_params.idle_poll_ratio,
    },
    {
        .name = "local_busy_poll_us",
        .level = OPAL_INFO_LVL_9,
        .help = "While the node-local domain is at work (operations of this process's own in "
                "flight on it, or a peer on this node served lately), the idle network "
                "completion queue beside it is read once every this many microseconds: a "
                "network read (tcp: a system call) in the wait of an on-node operation costs "
                "that operation more than the read's own time. A peer on another node whose "
                "operations this process's progress applies (tcp, sockets) waits that long at "
                "most for the first after a quiet spell, while this process is busy on its "
                "node. 0: no longer than btl_ofi_idle_poll_ratio's pause",
        .default_text = "20",
        .min = 0,
        .max = 1000000,
        .value = &mca_btl_ofi_params.local_busy_poll_us,
    },
    {
        .name = "wake",
        .level = OPAL_INFO_LVL_9,
        .help = "Where a network completion queue is read at the pace of "
                "btl_ofi_idle_poll_ratio and btl_ofi_local_busy_poll_us, and its provider "
                "applies peers' operations only in this process's calls (tcp, sockets): 1 "
                "opens it with a wait descriptor (FI_WAIT_FD), and once two reads in a row "
                "find nothing and the provider says nothing is left to do (fi_trywait), "
                "leaves it unread, the clock unread too, until a poll of that descriptor "
                "submitted to an io_uring of the module's own completes (a peer's request, a "
                "completion); then reads it at the next progress call; all the same once 64 "
                "calls and a millisecond have gone by. On-node operations then meet no "
                "network read. 0: the pace alone. -1 (auto): 1 with libfabric 2 and later, "
                "0 before (libfabric 1.17's tcp makes a completion queue with a wait "
                "descriptor cost operations to other nodes 10-15%; NOTES.txt 2c). Linux "
                "io_uring only (refused: the pace alone, said at verbose 10)",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.wake,
    },
    {
        .name = "nic_timeout",
        .level = OPAL_INFO_LVL_4,
        .help = "Seconds a NIC may complete nothing while operations wait on it before it is "
                "taken for failed (-1: 60 where the provider progresses on its own, else never; "
                "0: never)",
        .default_text = "-1",
        .min = -1,
        .max = 86400,
        .value = &mca_btl_ofi_params.nic_timeout,
    },
    {
        .name = "put_coalesce_max",
        .level = OPAL_INFO_LVL_9,
        .help = "The largest put, in bytes, that btl_ofi_put_coalesce gathers",
        .default_text = "512",
        .min = 1,
        .max = MCA_BTL_OFI_COALESCE_PUT_MAX,
        .value = &mca_btl_ofi_params.put_coalesce_max,
    },
    {
        .name = "rcache_size",
        .level = OPAL_INFO_LVL_9,
        .help = "Local registrations (buffers registered for one put or get, without remote "
                "access) kept after use while their memory stays mapped, so that a repeated "
                "operation pays no registration; 0 turns the cache off",
        .default_text = "64",
        .min = 0,
        .max = 1 << 20,
        .value = &mca_btl_ofi_params.rcache_size,
    },
    {
        .name = "debug_inject_eagain",
        .level = OPAL_INFO_LVL_9,
        .help = "Debug fault injection: per 1000 puts, gets and atomics, how many are refused "
                "as if the provider returned -FI_EAGAIN",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? 1000 : 0, /* 0: built without the check */
        .value = &mca_btl_ofi_params.debug_inject_eagain_permille,
    },
    {
        .name = "debug_inject_cq_error",
        .level = OPAL_INFO_LVL_9,
        .help = "Debug fault injection (0: off): post every Nth put or get with a corrupted "
                "remote key. What follows is the provider's: sockets reports an error "
                "completion, tcp;ofi_rxm drops the connection to that peer, shm never completes "
                "the operation (see NOTES.txt)",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? INT32_MAX : 0,
        .value = &mca_btl_ofi_params.debug_inject_cq_error_every,
    },
    {
        .name = "debug_inject_stale_handle",
        .level = OPAL_INFO_LVL_9,
        .help = "Debug fault injection (0: off): every Nth put, get or atomic takes the "
                "registration handle it was given as one that does not cover it, so the "
                "peer is asked which registration does (as when osc/rdma rewrote the handle: "
                "NOTES.txt section 3c)",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? INT32_MAX : 0,
        .value = &mca_btl_ofi_params.inject_stale_every,
    },
};

#define MCA_BTL_OFI_NUM_INT_PARAMS                                                                 \
    (sizeof(mca_btl_ofi_int_params) / sizeof(mca_btl_ofi_int_params[0]))

static void mca_btl_ofi_register_int_params(const mca_base_component_t *component)
{
    for (size_t i = 0; i < MCA_BTL_OFI_NUM_INT_PARAMS; ++i) {
        mca_btl_ofi_int_param_t *param = &mca_btl_ofi_int_params[i];
        char *help = NULL;

        param->text = (char *)param->default_text;
        if (asprintf(&help, "%s (an integer from %d to %d)", param->help, param->min, param->max) <
            0) {
            help = NULL;
        }
        (void)mca_base_component_var_register(component, param->name,
                                              help ? help : param->help, MCA_BASE_VAR_TYPE_STRING,
                                              NULL, 0, 0, param->level,
                                              MCA_BASE_VAR_SCOPE_READONLY, &param->text);
        free(help);
    }
}

/* The whole text must be one integer in range. */
static bool mca_btl_ofi_parse_int(const mca_btl_ofi_int_param_t *param, int *out)
{
    const char *text = param->text ? param->text : "";
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 10);
    if (end == text || '\0' != *end || 0 != errno || value < param->min || value > param->max) {
        return false;
    }
    *out = (int)value;
    return true;
}

static int mca_btl_ofi_register_string(const mca_base_component_t *component, const char *name,
                                       const char *help, char **storage)
{
    *storage = NULL;
    return mca_base_component_var_register(component, name, help,
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* A boolean parameter with its default, at an ompi_info level. */
static void mca_btl_ofi_register_bool(const mca_base_component_t *component, const char *name,
                                      const char *help, int level, bool value, bool *storage)
{
    *storage = value;
    (void)mca_base_component_var_register(component, name, help, MCA_BASE_VAR_TYPE_BOOL, NULL, 0,
                                          0, level, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* "auto, delivery, read_proof, local": the valid values of a choice (caller frees). */
static char *mca_btl_ofi_choice_names(const mca_base_var_enum_value_t *values)
{
    size_t len = 1;
    char *names;

    for (int i = 0; NULL != values[i].string; ++i) {
        len += strlen(values[i].string) + 2;
    }
    names = calloc(1, len);
    for (int i = 0; NULL != names && NULL != values[i].string; ++i) {
        strcat(strcat(names, i ? ", " : ""), values[i].string);
    }
    return names;
}

/*
 * btl_ofi_completion is registered as a string and matched here, like the
 * integer parameters: for an unknown value Open MPI's enumerator prints its own
 * message from every rank (through the show_help path that mpirun 4.1 mishandles,
 * NOTES.txt section 11) and silently keeps the default.
 */
static bool mca_btl_ofi_parse_choice(const mca_base_var_enum_value_t *values, const char *text,
                                     int *out)
{
    for (int i = 0; NULL != text && NULL != values[i].string; ++i) {
        if (0 == strcmp(text, values[i].string)) {
            *out = values[i].value;
            return true;
        }
    }
    return false;
}

/* A choice the user set, matched; an unknown value declines with the valid ones. */
static bool mca_btl_ofi_choice_valid(const char *param, const mca_base_var_enum_value_t *values,
                                     const char *text, int *out)
{
    char name[64], *names;

    if (mca_btl_ofi_parse_choice(values, text, out)) {
        return true;
    }
    names = mca_btl_ofi_choice_names(values);
    mca_btl_ofi_decline("bad-choice", mca_btl_ofi_param_name(param, name, sizeof(name)),
                        text ? text : "", names ? names : "?", NULL);
    free(names);
    return false;
}

/* A choice registered as a string (matched in mca_btl_ofi_params_valid), its help ending with
 * the valid values taken from the table itself, so that the two cannot drift apart. */
static void mca_btl_ofi_register_choice(const mca_base_component_t *component, const char *name,
                                        const char *help, const mca_base_var_enum_value_t *values,
                                        int level, const char *value, char **storage)
{
    char *names = mca_btl_ofi_choice_names(values), *text = NULL;

    *storage = (char *)value;
    if (0 > asprintf(&text, "%s (one of: %s)", help, names ? names : "?")) {
        text = NULL;
    }
    (void)mca_base_component_var_register(component, name, text ? text : help,
                                          MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
    free(text);
    free(names);
}

/* A read-only string that btl-ofi sets when it starts (an MPI_T control variable). */
static void mca_btl_ofi_register_report(const mca_base_component_t *component, const char *name,
                                        const char *help, char **storage)
{
    *storage = (char *)"";
    (void)mca_base_component_var_register(component, name, help, MCA_BASE_VAR_TYPE_STRING, NULL,
                                          0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
                                          MCA_BASE_VAR_SCOPE_CONSTANT, storage);
}

/* What a user sets: which provider and domains, the node-local provider, striping, how long a
 * silent NIC is trusted, and how atomics and gets travel (ompi_info level 3 and 4). */
static void mca_btl_ofi_register_user_params(const mca_base_component_t *component)
{
    mca_btl_ofi_register_string(component, "provider_include",
                                "Comma-separated libfabric providers to use, named as in "
                                "FI_PROVIDER (\"tcp\" stands for tcp;ofi_rxm; a leading ^ "
                                "excludes the names instead)",
                                &mca_btl_ofi_params.provider_include);
    mca_btl_ofi_register_string(component, "provider_exclude",
                                "Comma-separated libfabric providers never to use (a name "
                                "excludes every stack it is part of)",
                                &mca_btl_ofi_params.provider_exclude);
    mca_btl_ofi_register_string(component, "domain_include",
                                "Comma-separated libfabric domains or fabrics to use, as fi_info "
                                "names them; shell patterns allowed (\"cxi*\")",
                                &mca_btl_ofi_params.domain_include);
    mca_btl_ofi_register_string(component, "domain_exclude",
                                "Comma-separated libfabric domains or fabrics never to use",
                                &mca_btl_ofi_params.domain_exclude);
    mca_btl_ofi_register_bool(component, "domain_spread",
                              "Share a node's processes out over the provider's NICs by local "
                              "rank (false: every process takes the first)",
                              OPAL_INFO_LVL_4, true, &mca_btl_ofi_params.domain_spread);
    mca_btl_ofi_register_report(component, "domain_selected",
                                "Read-only: the provider, fabric and domain this process uses",
                                &mca_btl_ofi_params.domain_selected);

    mca_btl_ofi_params.local_provider = "shm";
    (void)mca_base_component_var_register(
        component, "local_provider",
        "In a job across nodes, the provider for the peers on this node (\"none\": the network "
        "provider carries them too)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.local_provider);
    mca_btl_ofi_register_report(component, "local_selected",
                                "Read-only: the provider, fabric and domain that carry the peers "
                                "on this node (empty: btl_ofi_domain_selected carries them)",
                                &mca_btl_ofi_params.local_selected);

    mca_btl_ofi_register_choice(component, "atomics",
                                "How atomics reach the target: the provider's (native), or "
                                "messages the target's CPU applies",
                                mca_btl_ofi_path_values, OPAL_INFO_LVL_4, "auto",
                                &mca_btl_ofi_params.atomics_text);
    mca_btl_ofi_register_choice(component, "gets",
                                "How gets reach the target: fi_read (native), or requests the "
                                "target's CPU answers (messages)",
                                mca_btl_ofi_path_values, OPAL_INFO_LVL_4, "auto",
                                &mca_btl_ofi_params.gets_text);
}

/* Tuning settings and the choices tests force (ompi_info level 9; NOTES.txt says what each
 * changes and why its default is what it is). */
static void mca_btl_ofi_register_tuning_params(const mca_base_component_t *component)
{
    mca_btl_ofi_params.mr_mode_text = "virt_addr,prov_key,allocated,local,endpoint";
    (void)mca_base_component_var_register(
        component, "mr_mode",
        "Memory-registration mode bits the BTL may accept: a comma-separated subset of "
        "virt_addr, prov_key, allocated, local, endpoint, or \"none\"",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.mr_mode_text);
    mca_btl_ofi_register_choice(component, "completion",
                                "How remote completion is proven (local breaks MPI semantics: "
                                "debug only)",
                                mca_btl_ofi_completion_values, OPAL_INFO_LVL_9, "auto",
                                &mca_btl_ofi_params.completion_text);
    mca_btl_ofi_register_choice(component, "local_atomics",
                                "Which domain carries atomics to peers on this node when a "
                                "node-local provider is in use",
                                mca_btl_ofi_local_atomics_values, OPAL_INFO_LVL_9, "auto",
                                &mca_btl_ofi_params.local_atomics_text);
    mca_btl_ofi_register_bool(component, "debug_atomic_emulation",
                              "Debug: serve every atomic except compare-and-swap through a "
                              "compare-and-swap loop",
                              OPAL_INFO_LVL_9, false, &mca_btl_ofi_params.debug_atomic_emulation);
    mca_btl_ofi_register_bool(component, "debug_proof_trusts_order",
                              "Debug, breaks MPI semantics: read_proof completion on a provider "
                              "without read-after-write ordering",
                              OPAL_INFO_LVL_9, false, &mca_btl_ofi_params.debug_proof_trusts_order);
}

void mca_btl_ofi_params_register(const mca_base_component_t *component)
{
    mca_btl_ofi_register_user_params(component);
    mca_btl_ofi_register_tuning_params(component);
    mca_btl_ofi_register_int_params(component);
}

bool mca_btl_ofi_params_valid(void)
{
    char name[64];

    if (!mca_btl_ofi_choice_valid("completion", mca_btl_ofi_completion_values,
                                  mca_btl_ofi_params.completion_text,
                                  &mca_btl_ofi_params.completion) ||
        !mca_btl_ofi_choice_valid("atomics", mca_btl_ofi_path_values,
                                  mca_btl_ofi_params.atomics_text,
                                  &mca_btl_ofi_params.atomics_path) ||
        !mca_btl_ofi_choice_valid("gets", mca_btl_ofi_path_values, mca_btl_ofi_params.gets_text,
                                  &mca_btl_ofi_params.gets_path) ||
        !mca_btl_ofi_choice_valid("local_atomics", mca_btl_ofi_local_atomics_values,
                                  mca_btl_ofi_params.local_atomics_text,
                                  &mca_btl_ofi_params.local_atomics)) {
        return false;
    }
    for (size_t i = 0; i < MCA_BTL_OFI_NUM_INT_PARAMS; ++i) {
        const mca_btl_ofi_int_param_t *param = &mca_btl_ofi_int_params[i];
        char min[16], max[16];

        if (!mca_btl_ofi_parse_int(param, param->value)) {
            snprintf(min, sizeof(min), "%d", param->min);
            snprintf(max, sizeof(max), "%d", param->max);
            mca_btl_ofi_decline("param-out-of-range",
                                mca_btl_ofi_param_name(param->name, name, sizeof(name)),
                                param->text ? param->text : "", min, max, NULL);
            return false;
        }
    }
    return true;
}

