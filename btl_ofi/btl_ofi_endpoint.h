/*
 * btl-ofi endpoints (btl_ofi_endpoint.c): one per peer, made from its modex
 * data by add_procs.
 */

#ifndef MCA_BTL_OFI_ENDPOINT_H
#define MCA_BTL_OFI_ENDPOINT_H

#include "btl_ofi_rail.h"

#include "opal/class/opal_object.h"
#include "opal/util/proc.h"

#include "btl_ofi_mr.h"

BEGIN_C_DECLS

/** One peer as seen by this BTL. Endpoints live until their rail closes. */
struct mca_btl_base_endpoint_t {
    opal_object_t super;
    struct opal_proc_t *proc;
    /** the rail that reaches this peer (the module routes each operation to the rail its
     *  endpoint names: btl_ofi_route.c) */
    mca_btl_ofi_rail_t *rail;
    /** a peer on this node reached through the node-local rail whose atomics travel on the
     *  network rail (the module's local_atomics is false): its endpoint there; else NULL */
    struct mca_btl_base_endpoint_t *twin;
    /** a peer on another node: its endpoints on the module's further NICs, in order;
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
 * @param rail (IN) the opened rail
 * @retval OPAL_SUCCESS, or an OPAL error after mca_btl_ofi_decline
 */
int mca_btl_ofi_modex_send(mca_btl_ofi_rail_t *rail);
/**
 * The endpoint of a process on rail, made from its modex data the first time.
 *
 * @retval the endpoint, or NULL when the peer published no address there, uses another
 *         provider, or its address cannot be inserted
 */
mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_get(mca_btl_ofi_rail_t *rail,
                                                  struct opal_proc_t *proc);
/**
 * Whether MPI's two-sided traffic has no BTL to proc under pml ob1, so that btl-ofi must
 * leave it unreachable (said once per process, with the BTL list; NOTES.txt section 10).
 *
 * @param on_node (IN) proc runs on this node
 */
bool mca_btl_ofi_peer_unsent(const struct opal_proc_t *proc, bool on_node);
/**
 * The endpoint of the process with this name, made from its modex data if
 * add_procs has not seen it yet.
 *
 * @retval the endpoint, or NULL when the process is unknown or unreachable
 */
mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_by_name(mca_btl_ofi_rail_t *rail,
                                                      const opal_process_name_t *name);
/** Release every endpoint (at finalize). */
void mca_btl_ofi_endpoints_release(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_ENDPOINT_H */
