/*
 * btl-ofi endpoints (btl_ofi_endpoint.c): one per peer, made from its modex
 * data by add_procs.
 */

#ifndef MCA_BTL_OFI_ENDPOINT_H
#define MCA_BTL_OFI_ENDPOINT_H

#include "btl_ofi_module.h"

#include "opal/class/opal_object.h"
#include "opal/util/proc.h"

#include "btl_ofi_mr.h"

BEGIN_C_DECLS

/** One peer as seen by this BTL. Endpoints live until the module finalizes. */
struct mca_btl_base_endpoint_t {
    opal_object_t super;
    struct opal_proc_t *proc;
    /** the module whose domain reaches this peer: the one Open MPI sees, or its
     *  node-local one (module->local) */
    mca_btl_ofi_module_t *module;
    /** a peer on this node reached through the node-local domain whose atomics travel on
     *  the network one (!local_atomics): its endpoint there; else NULL */
    struct mca_btl_base_endpoint_t *twin;
    /** a peer on another node: its endpoints on the further NICs (module->nics), in order;
     *  stripes of them (set once, by the add_procs that made this endpoint) */
    struct mca_btl_base_endpoint_t *stripe[MCA_BTL_OFI_STRIPES_MAX - 1];
    int stripes;
    fi_addr_t peer_addr;
    /** the peer's proof word, read by flush to prove remote completion */
    mca_btl_base_registration_handle_t proof_handle;
    /** non-fetching atomics issued since the last remote-completion proof */
    atomic_bool unproven;
    /* btl_ofi_coalesce.c, under its lock: */
    struct mca_btl_ofi_batch_t *batch; /**< puts being gathered for this peer, or NULL */
    /** batches and tracked puts to this peer in flight (counted up under coalescing's
     *  lock, down when one is done: mca_btl_ofi_op_release for a tracked put) */
    atomic_int co_in_flight;
    bool co_bursty; /**< the last batch to this peer gathered a burst: gather lone puts too */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_base_endpoint_t);

/**
 * Publish this process's libfabric address, provider name and proof-word handle.
 *
 * @param module (IN) the opened module
 * @retval OPAL_SUCCESS, or an OPAL error after mca_btl_ofi_decline
 */
int mca_btl_ofi_modex_send(mca_btl_ofi_module_t *module);
/**
 * Create (or find) the endpoint of each process and mark the reachable ones.
 * A node-local provider reaches only processes on this node; a peer that
 * published another provider is unreachable.
 *
 * @param procs     (IN)  processes, possibly including this one
 * @param peers     (OUT) endpoint per process, NULL when unreachable
 * @param reachable (OUT) bit i set when procs[i] is reachable (may be NULL)
 * @retval OPAL_SUCCESS
 */
int mca_btl_ofi_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable);
int mca_btl_ofi_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers);
/**
 * The endpoint of the process with this name, made from its modex data if
 * add_procs has not seen it yet.
 *
 * @retval the endpoint, or NULL when the process is unknown or unreachable
 */
mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_by_name(mca_btl_ofi_module_t *module,
                                                      const opal_process_name_t *name);
/** Release every endpoint (at finalize). */
void mca_btl_ofi_endpoints_release(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_ENDPOINT_H */
