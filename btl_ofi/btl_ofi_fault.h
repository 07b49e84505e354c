/*
 * btl-ofi: a NIC that fails while operations are in flight on it (btl_ofi_fault.c).
 *
 * A network rail is watched where a failure can be told: its domain is a network
 * interface whose link state the kernel shows (tcp, sockets: /sys/class/net/<domain>), or
 * btl_ofi_nic_timeout gives it a time limit (by default where the provider progresses data
 * on its own, as NICs do: there a NIC that completes nothing for a minute while operations
 * wait is not waiting for a busy peer). On a watched rail every operation taken is kept
 * on a list until it is released, and a CQ read that finds nothing while operations wait
 * counts towards a stall; at every MCA_BTL_OFI_FAULT_CLOCK_EVERY-th such read the clock is
 * looked at. The NIC is taken for failed when, during a stall, its link is down (looked at
 * once a second) or the stall lasts btl_ofi_nic_timeout seconds.
 *
 * Then mca_btl_ofi_nic_fail tells the rail's owner, which shuts it (mca_btl_ofi_rail_shut): the
 * provider is stopped from writing any buffer or CQ entry of ours. Where it moves data on its own
 * (data_progress FI_PROGRESS_AUTO, a NIC) its endpoint is closed. Where it moves data only inside
 * our calls (FI_PROGRESS_MANUAL: tcp;ofi_rxm, sockets), calling it no more is enough, and its
 * endpoint is left open (the rail is quarantined) and is not closed at finalize either: closing an
 * ofi_rxm endpoint whose connection has a transfer cut off by a dead link flushes the core's queues
 * into an error completion without a context, which rxm_handle_comp_error dereferences
 * (libfabric 1.17 to 2.1, rxm_cq.c; seen as a SIGSEGV in fi_close, 1 run in 10 to 30). Then every
 * listed operation is completed with OPAL_ERR_UNREACH through its own handler, as an error
 * completion would complete it (puts with their proof reads, emulated atomics, gets by messages,
 * parts of striped transfers), and every later put, get, atomic or flush on the rail returns
 * OPAL_ERR_UNREACH at once. A further NIC's striped parts are posted again on the first
 * NIC instead (btl_ofi_stripe.c), and the transfers complete. Where the first NIC fails,
 * nothing can carry them: osc/rdma (4.1, 5.0) retries a put or get a BTL refused for ever
 * and ignores the status of their callbacks, so no MPI call would return. btl-ofi then
 * reports a fatal error through the callback Open MPI's PML registered (btl_register_error),
 * as btl/tcp and btl/openib do when a link dies; ob1 ends the job with its text.
 */

#ifndef MCA_BTL_OFI_FAULT_H
#define MCA_BTL_OFI_FAULT_H

#include "btl_ofi_op.h"

BEGIN_C_DECLS

/** Defaults, before the rail's provider is known (at the start of device_open). */
void mca_btl_ofi_fault_construct(mca_btl_ofi_rail_t *rail);

/** After negotiation: whether the rail is watched, and how (see above). */
void mca_btl_ofi_fault_init(mca_btl_ofi_rail_t *rail);

/** At finalize. */
void mca_btl_ofi_fault_destruct(mca_btl_ofi_rail_t *rail);

/** Keep op on the rail's list (a watched rail's op_alloc). */
void mca_btl_ofi_fault_list(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op);

/** Take op off the list (op_release of a listed operation). */
void mca_btl_ofi_fault_unlist(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op);

/** A CQ read of a watched rail found nothing: a stall that lasts is looked into. */
void mca_btl_ofi_fault_empty_read(mca_btl_ofi_rail_t *rail);

/**
 * Take the rail's NIC for failed (once) and tell its owner (hooks.failed), which says what
 * that means and shuts the rail (mca_btl_ofi_rail_shut); without an owner's hook, fail what
 * was posted on it.
 *
 * @param why (IN) what showed it, for the message
 */
void mca_btl_ofi_nic_fail(mca_btl_ofi_rail_t *rail, const char *why);

/**
 * A failed rail's deferred posts dropped and every operation taken on it completed with
 * OPAL_ERR_UNREACH (after its provider was stopped: mca_btl_ofi_rail_shut).
 */
void mca_btl_ofi_fault_fail_posted(mca_btl_ofi_rail_t *rail);

/** Whether the rail's NIC failed. */
static inline bool mca_btl_ofi_nic_failed(const mca_btl_ofi_rail_t *rail)
{
    return OPAL_UNLIKELY(atomic_load_explicit(&rail->failed, memory_order_relaxed));
}

END_C_DECLS

#endif /* MCA_BTL_OFI_FAULT_H */
