/*
 * btl-ofi operations as messages (btl_ofi_am.c): atomics and gets that the
 * provider cannot do (no FI_ATOMIC or no 64-bit compare-and-swap, no FI_READ),
 * or that btl_ofi_atomics / btl_ofi_gets send as messages, are carried out by
 * the target's progress and answered.
 */

#ifndef MCA_BTL_OFI_AM_H
#define MCA_BTL_OFI_AM_H

#include "btl_ofi_rail.h"

#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"

BEGIN_C_DECLS

/** What an atomic message asks of the target. */
enum mca_btl_ofi_am_kind_t {
    MCA_BTL_OFI_AM_OP = 0, /**< apply the op, answer when done */
    MCA_BTL_OFI_AM_FOP,    /**< apply the op, answer with the old value */
    MCA_BTL_OFI_AM_CSWAP,  /**< compare-and-swap, answer with the old value */
};

/**
 * After the message channel started: take the atomic and get messages of
 * peers (whatever this process's own paths are) and set rail->am_ready;
 * decide rail->gets_as_messages (mca_btl_ofi_gets_by_messages).
 *
 * @retval OPAL_SUCCESS; OPAL_ERR_NOT_SUPPORTED, with the reason recorded
 *         (mca_btl_ofi_decline), when gets must be messages but there is no
 *         message channel
 */
int mca_btl_ofi_am_start(mca_btl_ofi_rail_t *rail);

/**
 * new = old op operand, on raw 4- or 8-byte patterns of datatype index dt
 * (bit 0: 32-bit, bit 1: floating point). Shared by the compare-and-swap loop
 * (btl_ofi_atomics.c) and the target of atomic messages.
 */
uint64_t mca_btl_ofi_atomic_apply(mca_btl_base_atomic_op_t op, int dt, uint64_t old,
                                  uint64_t operand);

/**
 * Send an atomic to the target as a message. op was taken by the caller
 * (counted outstanding, its callback and local address set); its callback runs
 * when the target's answer arrives: the old value is then in op->local_address
 * for the fetching kinds, and a refusal (unknown key, out of bounds,
 * misaligned) gives it OPAL_ERROR.
 *
 * @retval OPAL_SUCCESS sent or queued; otherwise op was released:
 *         OPAL_ERR_OUT_OF_RESOURCE (try again) or OPAL_ERROR
 */
int mca_btl_ofi_am_atomic(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                          enum mca_btl_ofi_am_kind_t kind, mca_btl_base_atomic_op_t mca_op, int dt,
                          uint64_t operand, uint64_t compare, const mca_btl_ofi_target_t *target);

/**
 * Send a get to the target as a request; the target answers with the data in
 * pieces no larger than this process's receive buffers, copied into
 * local_address as they arrive. cbfunc runs when all of it did (or with
 * OPAL_ERROR when the target refused).
 *
 * @retval as the BTL's get
 */
int mca_btl_ofi_am_get(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
                       const mca_btl_ofi_target_t *target, size_t size,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

END_C_DECLS

#endif /* MCA_BTL_OFI_AM_H */
