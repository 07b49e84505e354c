/*
 * btl-ofi routes (btl_ofi_route.c): the calls Open MPI makes on the module,
 * each sent to the rail its peer's endpoint names (the node-local rail for a
 * peer on this node, the network rail for the others, split over the NICs for
 * large puts and gets: btl_ofi_stripe.c). The contract of each is btl.h's.
 */

#ifndef MCA_BTL_OFI_ROUTE_H
#define MCA_BTL_OFI_ROUTE_H

#include "btl_ofi_module.h"

BEGIN_C_DECLS

/**
 * Create (or find) the endpoint of each process and mark the reachable ones: a peer on this
 * node through the node-local rail where both have one, every other peer through the network
 * rail (with its endpoints on the further NICs).
 *
 * @param procs     (IN)  processes, possibly including this one
 * @param peers     (OUT) endpoint per process, NULL when unreachable
 * @param reachable (OUT) bit i set when procs[i] is reachable (may be NULL)
 * @retval OPAL_SUCCESS
 */
int mca_btl_ofi_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable);
/** Endpoints stay until finalize (osc/rdma may still hold them): nothing to do. */
int mca_btl_ofi_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers);

/** btl_put: mca_btl_ofi_rail_put on the peer's rail (split over the NICs when large). */
int mca_btl_ofi_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);
/** btl_get: as mca_btl_ofi_put, in the other direction. */
int mca_btl_ofi_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);

/** btl_atomic_op: mca_btl_ofi_rail_aop on the rail that carries the peer's atomics. */
int mca_btl_ofi_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/** btl_atomic_fop: as mca_btl_ofi_aop, fetching. */
int mca_btl_ofi_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/** btl_atomic_cswap: as mca_btl_ofi_aop, compare-and-swap. */
int mca_btl_ofi_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/**
 * btl_flush: every rail the operations to that peer (or to all) took, each drained and its
 * remote completion proven (mca_btl_ofi_rail_flush).
 *
 * @retval OPAL_SUCCESS, or the first rail's error
 */
int mca_btl_ofi_flush(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint);

/**
 * btl_register_mem: [base, base + size) registered on the network rail and, for peers'
 * access, on every other rail too, each rail's handle in its slot of the handle returned.
 *
 * @retval the handle to share with peers, or NULL if a provider refused
 */
struct mca_btl_base_registration_handle_t *
mca_btl_ofi_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags);
/** btl_deregister_mem: every rail's registration of a handle from mca_btl_ofi_register_mem.
 *  @retval OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM for a NULL handle */
int mca_btl_ofi_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);

/** btl_register_error: keep the PML's callback for a NIC that fails (ob1 ends the job). */
int mca_btl_ofi_register_error(struct mca_btl_base_module_t *btl,
                               mca_btl_base_module_error_cb_fn_t cbfunc);

END_C_DECLS

#endif /* MCA_BTL_OFI_ROUTE_H */
