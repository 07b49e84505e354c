/*
 * btl-ofi: where registration records live.
 *
 * Not on the program's heap. osc/rdma registers every page-aligned region a
 * program attaches to a dynamic window, and its attach limit counts regions
 * (osc_rdma_max_attach). Whatever the BTL allocates on the heap between a
 * program's own small allocations spreads them over more pages, so the same
 * program needs more regions than over btl/vader (NOTES.txt section 3b).
 * Records come from pages mapped for them instead, and return there.
 */

#ifndef MCA_BTL_OFI_REG_POOL_H
#define MCA_BTL_OFI_REG_POOL_H

#include "opal_config.h"

#include <stddef.h>

BEGIN_C_DECLS

/**
 * Memory for one registration record, from pages of the pool's own.
 *
 * @param size (IN) the record's size (the same on every call)
 * @retval the record's memory (uninitialised), or NULL if no page could be mapped
 */
void *mca_btl_ofi_reg_pool_get(size_t size);

/** Give a record's memory back (from mca_btl_ofi_reg_pool_get). */
void mca_btl_ofi_reg_pool_put(void *record);

/** Unmap the pool's pages once every record is back (module finalize); else keep them. */
void mca_btl_ofi_reg_pool_fini(void);

END_C_DECLS

#endif /* MCA_BTL_OFI_REG_POOL_H */
