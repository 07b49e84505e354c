/*
 * btl-ofi registrations as a rail's owner asks for them: for peers' access
 * (live, found by key) or for one local operation (from the registration
 * cache where it is on, btl_ofi_rcache.c).
 */

#include "btl_ofi_register.h"

#include "btl_ofi_pvar.h"
#include "btl_ofi_rcache.h"

mca_btl_ofi_reg_t *mca_btl_ofi_rail_register(mca_btl_ofi_rail_t *rail, void *base, size_t size,
                                             uint32_t flags)
{
    mca_btl_ofi_reg_t *reg;

    if (0 == (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE) && mca_btl_ofi_rcache_on(rail)) {
        /* a local buffer (osc/rdma's source or target of one put or get): cached */
        reg = mca_btl_ofi_rcache_get(rail, base, size);
        if (NULL == reg) {
            mca_btl_ofi_reg_failed(rail, size);
        }
        return reg;
    }
    /* Without FI_MR_LOCAL a buffer only this process touches needs no provider registration
     * (fi_mr(3)): the handle just records it. */
    reg = 0 == (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE) && !rail->mr_local
              ? mca_btl_ofi_reg_create(rail, base, 0)
              : mca_btl_ofi_rcache_reg_create(rail, base, size);
    if (NULL == reg) {
        mca_btl_ofi_reg_failed(rail, size);
        return NULL;
    }
    reg->remote = 0 != (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE);
    if (reg->remote) {
        atomic_fetch_add(&rail->remote_regs, 1);
    }
    OPAL_THREAD_LOCK(&rail->reg_lock);
    opal_list_append(&rail->live_regs, &reg->super);
    if (NULL != reg->mr) {
        (void)opal_hash_table_set_value_uint64(&rail->regs_by_key, reg->handle.key, reg);
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);

    mca_btl_ofi_count(MCA_BTL_OFI_CNT_REGISTRATIONS, 1);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE, 1);
    return reg;
}

void mca_btl_ofi_rail_deregister(mca_btl_ofi_rail_t *rail, mca_btl_ofi_reg_t *reg)
{
    if (reg->cached) {
        mca_btl_ofi_rcache_put(rail, reg);
        return;
    }

    if (reg->remote) {
        atomic_fetch_sub(&rail->remote_regs, 1);
    }
    OPAL_THREAD_LOCK(&rail->reg_lock);
    opal_list_remove_item(&rail->live_regs, &reg->super);
    if (NULL != reg->mr) {
        (void)opal_hash_table_remove_value_uint64(&rail->regs_by_key, reg->handle.key);
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);

    mca_btl_ofi_reg_release(reg);
}
