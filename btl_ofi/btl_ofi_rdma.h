/*
 * btl-ofi RMA on one rail (btl_ofi_rdma.c): put, get and flush. The module
 * routes Open MPI's calls here (btl_ofi_route.c).
 */

#ifndef MCA_BTL_OFI_RDMA_H
#define MCA_BTL_OFI_RDMA_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/**
 * Put size bytes from local_address to remote_address at endpoint, on rail (btl.h contract).
 *
 * @param endpoint      (IN) the peer as rail reaches it
 * @param local_handle  (IN) registration of the local buffer, or NULL
 * @param remote_handle (IN) rail's handle of the peer's registration covering the target range
 * @param cbfunc        (IN) called from progress once the data is visible at the target
 * @retval OPAL_SUCCESS               queued
 * @retval OPAL_ERR_OUT_OF_RESOURCE   provider busy (-FI_EAGAIN) or no context: try again
 * @retval OPAL_ERR_BAD_PARAM         missing endpoint/handle, range outside the
 *                                    registration, or size above rail's put limit
 * @retval OPAL_ERROR                 the provider refused the operation
 */
int mca_btl_ofi_rail_put(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *local_handle,
                         struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/** Get: as mca_btl_ofi_rail_put, in the other direction and bounded by the get limit. */
int mca_btl_ofi_rail_get(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *local_handle,
                         struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/**
 * Return once every operation posted on rail before the call is complete at its
 * target: waits for the outstanding count to drain and, without
 * delivery-complete, proves remote completion with ordered reads.
 *
 * @param endpoint (IN) peer to prove, or NULL for all (draining is always global)
 * @retval OPAL_SUCCESS, OPAL_ERR_UNREACH where rail's NIC failed, or an OPAL error if a
 *         proof read could not be posted
 */
int mca_btl_ofi_rail_flush(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint);

END_C_DECLS

#endif /* MCA_BTL_OFI_RDMA_H */
