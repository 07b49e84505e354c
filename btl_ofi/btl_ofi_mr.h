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
    uint64_t key;   /**< remote key */
    uint64_t base;  /**< registered base address (offsets are taken from it) */
    uint64_t len;   /**< registered length, to refuse out-of-range accesses */
    uint64_t check; /**< mca_btl_ofi_handle_check of the three: a copy read while
                         someone rewrote it does not pass (NOTES.txt section 3c) */
};

/** Registration flags that let peers in: such registrations are never cached. */
#define MCA_BTL_OFI_REG_FLAGS_REMOTE                                                               \
    (MCA_BTL_REG_FLAG_REMOTE_READ | MCA_BTL_REG_FLAG_REMOTE_WRITE | MCA_BTL_REG_FLAG_REMOTE_ATOMIC)

typedef struct mca_btl_ofi_reg_t {
    opal_list_item_t super;
    struct fid_mr *mr; /**< NULL for an empty (zero-length) registration */
    void *desc;
    mca_btl_base_registration_handle_t handle;
    /** with domains beside this one (btl_ofi_rails.c), their handles of the same memory, by
     *  slot - 1 (node-local, then further NICs): peers receive them all
     *  (btl_registration_handle_size), so they must follow handle */
    mca_btl_base_registration_handle_t rail_handle[MCA_BTL_OFI_SLOTS - 1];
    /** those domains' registrations, or NULL (none, or a registration for local use only) */
    struct mca_btl_ofi_reg_t *rail_reg[MCA_BTL_OFI_SLOTS - 1];
    bool remote; /**< registered for peers' access (counted in module->remote_regs) */
    /** its memory is in mappings private to this process: 1 yes, -1 no, 0 not asked yet
     *  (mca_btl_ofi_reg_own; under module->reg_lock) */
    int8_t own_private;
    /* the registration cache's (btl_ofi_rcache.c), under its lock */
    bool cached;    /**< made by the cache: release it with mca_btl_ofi_rcache_put */
    bool gone;      /**< its memory was unmapped: closed with its last user */
    uint32_t users; /**< operations and handles using it now */
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
/** mca_btl_ofi_reg_create, tried once more after the registration cache gave back its idle
 *  registrations when the provider refused the first try; NULL if it refused both. */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_create_pressed(mca_btl_ofi_module_t *module, void *base,
                                                  size_t size);
/** Once per process: the register-failed message, for a registration of size bytes the
 *  provider refused (module->reg_error). */
void mca_btl_ofi_reg_failed(mca_btl_ofi_module_t *module, size_t size);
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
/**
 * This process's registration for peers' access that covers [address, address + size) of its
 * own memory, where that memory is private to this process (no shared mapping: no other
 * process of the node changes it with its own stores). Serves operations on this process's
 * own memory that come without a handle (mca_btl_ofi_locate_own). A scan, as
 * mca_btl_ofi_reg_covering; whether the memory is private is read once per registration.
 *
 * @retval true with *handle a copy of its handle; false if there is none
 */
bool mca_btl_ofi_reg_own(mca_btl_ofi_module_t *module, uint64_t address, size_t size,
                         mca_btl_base_registration_handle_t *handle);
/**
 * A live registration (made through btl_register_mem) that covers
 * [address, address + size) of this process, scanning them all: for the
 * rare question of a peer (btl_ofi_locate.c), not for a hot path.
 *
 * @param handle (OUT) its handle, set only when one is found
 * @retval true found
 */
bool mca_btl_ofi_reg_covering(mca_btl_ofi_module_t *module, uint64_t address, size_t size,
                              struct mca_btl_base_registration_handle_t *handle);
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
/** Where a remote access goes: as libfabric takes it. */
typedef struct mca_btl_ofi_target_t {
    uint64_t addr; /**< virtual, or an offset from the registered base */
    uint64_t key;
    /** the check word of the handle it came from: a target that applies the access
     *  itself (btl_ofi_am.c) checks that its registration is that one */
    uint64_t check;
} mca_btl_ofi_target_t;

/** The check word of a handle: a mix of its fields that no blend of two handles matches. */
static inline uint64_t mca_btl_ofi_handle_check(uint64_t key, uint64_t base, uint64_t len)
{
    uint64_t h = (key ^ UINT64_C(0x6274306d6f666921)) * UINT64_C(0x9e3779b97f4a7c15);

    h = (h ^ base ^ (h >> 29)) * UINT64_C(0xbf58476d1ce4e5b9);
    h = (h ^ len ^ (h >> 32)) * UINT64_C(0x94d049bb133111eb);
    return h ^ (h >> 31);
}

/** Set the check word once key, base and len are final. */
static inline void mca_btl_ofi_handle_seal(struct mca_btl_base_registration_handle_t *handle)
{
    handle->check = mca_btl_ofi_handle_check(handle->key, handle->base, handle->len);
}

/**
 * Copy a handle that another process may be rewriting (osc/rdma hands out
 * pointers into a peer's table in shared memory): each field read once.
 */
static inline void mca_btl_ofi_handle_read(const struct mca_btl_base_registration_handle_t *from,
                                           struct mca_btl_base_registration_handle_t *to)
{
    const volatile uint64_t *fields = (const volatile uint64_t *)from;

    to->key = fields[0];
    to->base = fields[1];
    to->len = fields[2];
    to->check = fields[3];
}

/** Whether a handle (read once) is whole and covers [address, address + size). */
static inline bool mca_btl_ofi_handle_covers(const struct mca_btl_base_registration_handle_t *h,
                                             uint64_t address, size_t size)
{
    return h->check == mca_btl_ofi_handle_check(h->key, h->base, h->len) &&
           address >= h->base && size <= h->len && address - h->base <= h->len - size;
}

/** The target of an access inside the registration of h (covers() said so). */
static inline void mca_btl_ofi_target_in(const mca_btl_ofi_module_t *module,
                                         const struct mca_btl_base_registration_handle_t *h,
                                         uint64_t address, mca_btl_ofi_target_t *target)
{
    target->addr = module->virt_addr ? address : address - h->base;
    target->key = h->key;
    target->check = h->check;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_MR_H */
