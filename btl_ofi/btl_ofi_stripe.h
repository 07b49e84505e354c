/*
 * btl-ofi stripes (btl_ofi_stripe.c): large puts and gets to a peer on another
 * node split over the network rail and the further NICs (btl_ofi_stripe_min).
 */

#ifndef MCA_BTL_OFI_STRIPE_H
#define MCA_BTL_OFI_STRIPE_H

#include "btl_ofi_module.h"

BEGIN_C_DECLS

/** A put or a get on one rail (mca_btl_ofi_rail_put, mca_btl_ofi_rail_get). */
typedef int (*mca_btl_ofi_rail_rma_fn_t)(mca_btl_ofi_rail_t *rail,
                                         struct mca_btl_base_endpoint_t *endpoint,
                                         void *local_address, uint64_t remote_address,
                                         struct mca_btl_base_registration_handle_t *local_handle,
                                         struct mca_btl_base_registration_handle_t *remote_handle,
                                         size_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                                         void *cbcontext, void *cbdata);

/**
 * A put or get of size bytes split into one part per NIC that has not failed (the network
 * rail's on endpoint, the others on endpoint->stripe), each a multiple of 4 KiB but the last.
 * Nothing is posted when the first part meets a full queue (OUT_OF_RESOURCE: Open MPI tries
 * again); a later part that meets one waits for room (every rail progresses meanwhile), so
 * that a call that posted something always completes, through cbfunc where there is one,
 * with the first error of a part if one failed. Without cbfunc (osc/rdma's puts: flush tells
 * it they are done) the flush of that peer covers every NIC, and the first NIC again after a
 * part moved there.
 *
 * @param rma (IN) mca_btl_ofi_rail_put or mca_btl_ofi_rail_get
 * @retval as btl_put
 */
int mca_btl_ofi_stripe_rma(mca_btl_ofi_rail_rma_fn_t rma, mca_btl_ofi_module_t *module,
                           struct mca_btl_base_endpoint_t *endpoint, char *local_address,
                           uint64_t remote_address,
                           struct mca_btl_base_registration_handle_t *local_handle,
                           struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/**
 * After the network rail's flush (its result rc): the flush of the further NICs the peer's
 * parts took (every NIC for endpoint NULL), then the first NIC's again where parts moved
 * there meanwhile.
 *
 * @retval rc, or the first error of those flushes
 */
int mca_btl_ofi_stripe_flush(mca_btl_ofi_module_t *module, struct mca_btl_base_endpoint_t *endpoint,
                             int rc);

END_C_DECLS

#endif /* MCA_BTL_OFI_STRIPE_H */
