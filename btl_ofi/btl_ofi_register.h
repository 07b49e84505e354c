/*
 * btl-ofi registrations on one rail as its owner asks for them
 * (btl_ofi_register.c); the module registers on every rail (btl_ofi_route.c).
 */

#ifndef MCA_BTL_OFI_REGISTER_H
#define MCA_BTL_OFI_REGISTER_H

#include "btl_ofi_mr.h"

BEGIN_C_DECLS

/**
 * Register [base, base + size) on rail: for peers' access (flags with a REMOTE bit: on
 * the live list, found by key) or for local use only (cached, or a bare record where the
 * provider needs no local registration).
 *
 * @param flags (IN) MCA_BTL_REG_FLAG_*; every access is granted
 * @retval the registration, or NULL if the provider refused (said once per process)
 */
mca_btl_ofi_reg_t *mca_btl_ofi_rail_register(mca_btl_ofi_rail_t *rail, void *base, size_t size,
                                             uint32_t flags);
/** Deregister a registration made by mca_btl_ofi_rail_register on rail. */
void mca_btl_ofi_rail_deregister(mca_btl_ofi_rail_t *rail, mca_btl_ofi_reg_t *reg);

END_C_DECLS

#endif /* MCA_BTL_OFI_REGISTER_H */
