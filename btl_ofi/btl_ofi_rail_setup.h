/*
 * btl-ofi rail setup (btl_ofi_rail_setup.c): a rail opened on one domain with
 * everything that belongs to it, published in the modex, shut when its NIC
 * fails, and closed in the reverse order of its opening.
 */

#ifndef MCA_BTL_OFI_RAIL_SETUP_H
#define MCA_BTL_OFI_RAIL_SETUP_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/**
 * Open a rail on info's domain: its fids, operation contexts, registrations, the messages
 * beside RMA and the atomics it serves, then publish its address in the modex.
 *
 * @param info     (IN)  the provider and domain; ownership passes to the rail
 * @param config   (IN)  how its owner uses it (copied)
 * @param caps     (IN)  what the owner asks of it at most (copied, then narrowed)
 * @param no_cswap (OUT) it failed only because its endpoint serves no atomics (no 64-bit
 *                       compare-and-swap, and no messages where config allows them)
 * @retval the rail, or NULL (everything undone, the reason recorded or at verbose 10)
 */
mca_btl_ofi_rail_t *mca_btl_ofi_rail_open(struct fi_info *info,
                                          const mca_btl_ofi_rail_config_t *config,
                                          const mca_btl_ofi_rail_caps_t *caps, bool *no_cswap);

/** Wait for the rail's operations to complete, within a bound (a vanished peer must not hang
 *  finalize), and stop watching its NIC. */
void mca_btl_ofi_rail_drain(mca_btl_ofi_rail_t *rail);

/** Drain, deregister, close every fid and free the rail. Safe on a partly opened rail. */
void mca_btl_ofi_rail_close(mca_btl_ofi_rail_t *rail);

/** A rail whose NIC failed: stop its provider (close or quarantine its endpoint) and fail
 *  every operation taken on it with OPAL_ERR_UNREACH. */
void mca_btl_ofi_rail_shut(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_RAIL_SETUP_H */
