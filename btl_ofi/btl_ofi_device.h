/*
 * btl-ofi device: a rail's libfabric objects, opened and closed in order
 * (btl_ofi_device.c).
 */

#ifndef MCA_BTL_OFI_DEVICE_H
#define MCA_BTL_OFI_DEVICE_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/**
 * Open fabric, domain, address vector, completion queue and endpoint.
 *
 * @param rail (IN/OUT) rail whose fids are filled on success
 * @param info (IN)     selected provider; ownership passes to the rail
 * @retval OPAL_SUCCESS, or an OPAL error after mca_btl_ofi_decline
 */
int mca_btl_ofi_device_open(mca_btl_ofi_rail_t *rail, struct fi_info *info);

/** Close every fid in reverse order of opening. Safe on a partly opened rail. */
void mca_btl_ofi_device_close(mca_btl_ofi_rail_t *rail);

/** Close the endpoint alone (a NIC that failed, btl_ofi_fault.c); device_close skips it then. */
void mca_btl_ofi_device_close_ep(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_DEVICE_H */
