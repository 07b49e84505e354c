/*
 * btl-ofi atomics (btl_ofi_atomics.c): the capability probe and the three BTL
 * atomic entry points.
 */

#ifndef MCA_BTL_OFI_ATOMICS_H
#define MCA_BTL_OFI_ATOMICS_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/**
 * Learn from fi_*atomicvalid what the provider does natively, choose between
 * that and atomics as messages (btl_ofi_atomics, rail->atomics_as_messages);
 * set btl_atomic_flags. Call after mca_btl_ofi_am_start.
 *
 * @param casless_as_messages (IN) whether a provider that names FI_ATOMIC but has
 *        no 64-bit compare-and-swap gets atomics as messages (auto), instead of
 *        being refused so that the caller tries the next provider first
 * @retval OPAL_SUCCESS, or OPAL_ERR_NOT_SUPPORTED (nothing recorded) when the
 *         atomics can be served neither natively (64-bit compare-and-swap) nor
 *         as messages (FI_MSG), as the setting allows
 */
int mca_btl_ofi_atomics_probe(mca_btl_ofi_rail_t *rail, bool casless_as_messages);

/** The btl_atomic_flags of the most a rail can serve (every op, as messages). */
uint32_t mca_btl_ofi_atomics_most(void);

/**
 * Non-fetching atomic: (*remote_address) = (*remote_address) op operand.
 * Native when fi_atomicvalid says so, else a compare-and-swap loop.
 *
 * @param op    (IN) MCA_BTL_ATOMIC_*
 * @param flags (IN) MCA_BTL_ATOMIC_FLAG_32BIT / _FLOAT select the datatype
 * @retval as mca_btl_ofi_put; OPAL_ERR_NOT_SUPPORTED when neither the op nor a
 *         compare-and-swap of that width exists
 */
int mca_btl_ofi_rail_aop(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *remote_handle,
                         mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/**
 * Fetching atomic: as mca_btl_ofi_aop, and the previous value is stored in
 * local_address (4 or 8 bytes) before cbfunc runs.
 */
int mca_btl_ofi_rail_afop(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                          void *local_address, uint64_t remote_address,
                          struct mca_btl_base_registration_handle_t *local_handle,
                          struct mca_btl_base_registration_handle_t *remote_handle,
                          mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                          mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/**
 * Compare-and-swap: stores value if *remote_address == compare; the previous
 * value goes to local_address. 64-bit, or 32-bit with MCA_BTL_ATOMIC_FLAG_32BIT.
 *
 * @retval as mca_btl_ofi_put; OPAL_ERR_NOT_SUPPORTED without a provider CAS of that width
 */
int mca_btl_ofi_rail_acswap(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                            void *local_address, uint64_t remote_address,
                            struct mca_btl_base_registration_handle_t *local_handle,
                            struct mca_btl_base_registration_handle_t *remote_handle,
                            uint64_t compare, uint64_t value, int flags,
                            mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                            void *cbdata);

END_C_DECLS

#endif /* MCA_BTL_OFI_ATOMICS_H */
