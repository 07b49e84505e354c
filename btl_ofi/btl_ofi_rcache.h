/*
 * btl-ofi registration cache (btl_ofi_rcache.c): local buffers registered
 * for one operation at a time (osc/rdma's btl_register_mem without remote
 * access, and FI_MR_LOCAL buffers that came without a handle) keep their
 * registration while their memory stays mapped, so that a repeated operation
 * from the same buffer pays no fi_mr_reg (NOTES.txt section 3d).
 */

#ifndef MCA_BTL_OFI_RCACHE_H
#define MCA_BTL_OFI_RCACHE_H

#include "btl_ofi_mr.h"

BEGIN_C_DECLS

/**
 * Start the rail's cache when btl_ofi_rcache_size allows it and Open MPI's
 * memory hooks report munmap (so that freed memory is forgotten). Without
 * them the cache stays off and says why at verbose level 10.
 */
void mca_btl_ofi_rcache_init(mca_btl_ofi_rail_t *rail);
/** Close every cached registration (at finalize, after the last operation). */
void mca_btl_ofi_rcache_fini(mca_btl_ofi_rail_t *rail);
/** mca_btl_ofi_reg_create, tried once more after the cache gave back its idle registrations
 *  when the provider refused the first try; NULL if it refused both. */
mca_btl_ofi_reg_t *mca_btl_ofi_rcache_reg_create(mca_btl_ofi_rail_t *rail, void *base, size_t size);
/** Whether local registrations of this rail go through the cache. */
bool mca_btl_ofi_rcache_on(const mca_btl_ofi_rail_t *rail);
/**
 * A registration covering [base, base + size) for local access: a cached one,
 * or a new one of the whole pages, then cached. Release it with
 * mca_btl_ofi_rcache_put.
 *
 * @retval the registration, or NULL if the provider refused
 */
mca_btl_ofi_reg_t *mca_btl_ofi_rcache_get(mca_btl_ofi_rail_t *rail, void *base, size_t size);
/** One user fewer; a registration whose memory went away is closed with its last user. */
void mca_btl_ofi_rcache_put(mca_btl_ofi_rail_t *rail, mca_btl_ofi_reg_t *reg);
/**
 * Close every cached registration no operation uses (the provider refused a registration:
 * a NIC's live registrations are few). Returns how many were closed.
 */
size_t mca_btl_ofi_rcache_shrink(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_RCACHE_H */
