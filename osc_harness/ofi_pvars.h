/*
 * Read btl-ofi's MPI_T performance variables from inside a rank: the proof
 * that window traffic went through this component and not another one.
 */
#ifndef OSC_HARNESS_OFI_PVARS_H
#define OSC_HARNESS_OFI_PVARS_H

#include <mpi.h>

enum ofi_pvar_id {
    OFI_PVAR_PUTS,
    OFI_PVAR_GETS,
    OFI_PVAR_PUT_BYTES,
    OFI_PVAR_GET_BYTES,
    OFI_PVAR_ATOMICS,
    OFI_PVAR_ATOMICS_EMULATED,
    OFI_PVAR_CQ_ENTRIES,
    OFI_PVAR_CQ_ERRORS,
    OFI_PVAR_FLUSHES,
    OFI_PVAR_REGISTRATIONS,
    OFI_PVAR_REGISTRATIONS_LIVE,
    OFI_PVAR_REFUSED,
    OFI_PVAR_POST_EAGAIN, /* resource pressure that was met */
    OFI_PVAR_INJECTED,    /* debug fault injection: proof that it fired */
    OFI_PVAR_PEERS,       /* a level: endpoints (address-vector entries) held */
    OFI_PVAR_WAKE_ARMED,  /* a network CQ left to its io_uring poll (btl_<c>_wake) */
    OFI_PVAR_WAKE_READS,  /* ... and read when that poll completed */
    OFI_PVAR_STRIPES,     /* puts and gets split over several NICs (btl_<c>_stripe_min) */
    OFI_PVAR_LOCAL_PUTS,  /* puts to peers on this node over the node-local domain */
    OFI_PVAR_COUNT,
};

/** Counter snapshot; present == 0 means our component is not loaded/selected. */
typedef struct ofi_pvars {
    int present;
    unsigned long value[OFI_PVAR_COUNT];
} ofi_pvars_t;

/**
 * The btl-ofi component's name: BTL_OFI_COMPONENT from the environment (the
 * env file sets it), else the name this harness was built with. Its counters
 * are btl_<name>_put_count etc.
 */
const char *ofi_component_name(void);

/**
 * Start an MPI_T session (call after MPI_Init). A COUNTER-class variable then
 * reads as the count since this call (Open MPI starts continuous handles at
 * allocation). Returns 0 on success.
 */
int ofi_pvars_open(void);
/** Read every counter into *out. */
void ofi_pvars_read(ofi_pvars_t *out);
/** after - before of every counter, this process only. */
void ofi_pvars_delta(const ofi_pvars_t *before, const ofi_pvars_t *after, unsigned long *delta);
/** Full names, for reports ("btl_<component>_put_count", ...). */
const char *ofi_pvar_name(enum ofi_pvar_id id);
void ofi_pvars_close(void);

#endif
