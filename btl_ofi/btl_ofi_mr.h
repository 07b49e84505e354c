/*
 * btl-ofi memory registration (btl_ofi_mr.c): registrations, the handle peers
 * receive, remote address translation and, under FI_MR_LOCAL, the registered
 * slabs operations take their words from.
 */

#ifndef MCA_BTL_OFI_MR_H
#define MCA_BTL_OFI_MR_H

#include "btl_ofi_module.h"

#include "opal/class/opal_list.h"

BEGIN_C_DECLS

/**
 * Registration handle: the part of a registration that travels to peers.
 * Open MPI copies btl_registration_handle_size bytes of it.
 */
struct mca_btl_base_registration_handle_t {
    uint64_t key;  /**< remote key */
    uint64_t base; /**< registered base address (offsets are taken from it) */
    uint64_t len;  /**< registered length, to refuse out-of-range accesses */
};

/** Local registration: the public handle plus what only this process needs. */
typedef struct mca_btl_ofi_reg_t {
    opal_list_item_t super;
    struct fid_mr *mr; /**< NULL for an empty (zero-length) registration */
    void *desc;
    mca_btl_base_registration_handle_t handle;
} mca_btl_ofi_reg_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_reg_t);

/** The operand, compare and result words of one operation. */
typedef struct mca_btl_ofi_words_t {
    uint64_t operand;
    uint64_t compare;
    uint64_t fetched;
} mca_btl_ofi_words_t;

/**
 * Register [base, base + size) for local and remote access.
 *
 * @param endpoint (IN) ignored: registrations serve every peer
 * @param flags    (IN) MCA_BTL_REG_FLAG_*; every access is granted
 * @retval the handle to share with peers, or NULL if the provider refused
 */
struct mca_btl_base_registration_handle_t *
mca_btl_ofi_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags);
/**
 * Deregister a handle returned by mca_btl_ofi_register_mem.
 *
 * @retval OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM for a NULL handle
 */
int mca_btl_ofi_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);
/** Register a region for internal use (not counted, not on the live list). */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_create(mca_btl_ofi_module_t *module, void *base, size_t size);
/** Close a registration made by mca_btl_ofi_reg_create and free it. */
void mca_btl_ofi_reg_destroy(mca_btl_ofi_reg_t *reg);
/**
 * The live registration (made by mca_btl_ofi_register_mem) whose key peers
 * use, for a peer's access that this process carries out itself. The caller
 * holds module->reg_lock for as long as it uses the registration.
 *
 * @retval the registration, or NULL for a key no live registration has
 */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_find(mca_btl_ofi_module_t *module, uint64_t key);
/** Deregister whatever the upper layer left registered at finalize. */
void mca_btl_ofi_regs_release(mca_btl_ofi_module_t *module);

/**
 * FI_MR_LOCAL: a slot of operation words in a registered slab (made when
 * none has room). Slots are never returned: they belong to an operation
 * context for the module's life.
 *
 * @param words (OUT) the slot
 * @param desc  (OUT) its slab's descriptor
 * @retval OPAL_SUCCESS, or OPAL_ERR_OUT_OF_RESOURCE if registering a slab failed
 */
int mca_btl_ofi_word_slot(mca_btl_ofi_module_t *module, mca_btl_ofi_words_t **words, void **desc);
/** Close the registered word slabs (at finalize, after the last operation). */
void mca_btl_ofi_word_slabs_release(mca_btl_ofi_module_t *module);

/**
 * Translate a peer's virtual address into what the provider expects and check
 * that [address, address + size) lies inside the registration.
 *
 * @retval OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM for an address outside the region
 */
static inline int mca_btl_ofi_remote_addr(const mca_btl_ofi_module_t *module,
                                          const struct mca_btl_base_registration_handle_t *handle,
                                          uint64_t address, size_t size, uint64_t *translated)
{
    if (address < handle->base || size > handle->len ||
        address - handle->base > handle->len - size) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
        return OPAL_ERR_BAD_PARAM;
    }
    *translated = module->virt_addr ? address : address - handle->base;
    return OPAL_SUCCESS;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_MR_H */
