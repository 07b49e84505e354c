/*
 * btl-ofi small-put coalescing (btl_ofi_coalesce.c): small puts to a peer
 * that is already busy are gathered into one message, which the peer's
 * progress writes into its registrations and acknowledges once.
 */

#ifndef MCA_BTL_OFI_COALESCE_H
#define MCA_BTL_OFI_COALESCE_H

#include "btl_ofi_rail.h"

#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"

BEGIN_C_DECLS

/**
 * Whether btl_ofi_put_coalesce asks for coalescing on this provider (it also
 * needs the message channel: mca_btl_ofi_coalesce_start says if it is off).
 */
bool mca_btl_ofi_coalesce_wanted(const struct fi_info *info);

/** The largest message coalescing sends, and the receive buffers it wants posted. */
size_t mca_btl_ofi_coalesce_message_size(void);
int mca_btl_ofi_coalesce_receive_buffers(void);

/**
 * After the message channel started (mca_btl_ofi_msg_start): take the
 * gathered-put messages and hook rail->co_progress (it sends gathered
 * puts). No channel, or a mode it cannot serve, leaves rail->coalesce false
 * with a message; Open MPI carries on with plain puts.
 */
void mca_btl_ofi_coalesce_start(mca_btl_ofi_rail_t *rail);

/** At finalize, after the endpoint is closed: free buffers and batches. */
void mca_btl_ofi_coalesce_stop(mca_btl_ofi_rail_t *rail);

/**
 * A put of size <= rail->coalesce_max with coalescing on: gather it if its
 * peer has a put or batch in flight, else leave it to the caller.
 *
 * @param target (IN) the translated remote address, as fi_write takes it
 * @retval OPAL_SUCCESS gathered: the callback runs when the peer acknowledged it;
 *         OPAL_ERR_NOT_AVAILABLE post it as an fi_write: endpoint->co_in_flight
 *         counts it already, so the operation's in_flight must point there
 *         (releasing the operation counts it down), or the caller counts it
 *         down if it makes no operation; OPAL_ERR_OUT_OF_RESOURCE try again
 */
int mca_btl_ofi_coalesce_put(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                             void *local_address, uint64_t target, uint64_t key, size_t size,
                             struct mca_btl_base_registration_handle_t *local_handle,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                             void *cbdata);

END_C_DECLS

#endif /* MCA_BTL_OFI_COALESCE_H */
