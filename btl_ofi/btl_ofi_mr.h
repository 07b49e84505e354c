/*
 * btl-ofi memory registration (btl_ofi_mr.c): registrations, the handle peers
 * receive, remote address translation and, under FI_MR_LOCAL, the registered
 * slabs operations take their words from.
 */

#ifndef MCA_BTL_OFI_MR_H
#define MCA_BTL_OFI_MR_H

#include "btl_ofi_rail.h"

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
    /** with rails beside the network one (btl_ofi_route.c), their handles of the same memory,
     *  by slot - 1 (node-local, then further NICs): peers receive them all
     *  (btl_registration_handle_size), so they must follow handle */
    mca_btl_base_registration_handle_t rail_handle[MCA_BTL_OFI_SLOTS - 1];
    /** the registration of this memory on each rail, by handle slot: [0] is this one, the
     *  others NULL where there is none (a registration for local use only, or one rail) */
    struct mca_btl_ofi_reg_t *by_rail[MCA_BTL_OFI_SLOTS];
    bool remote; /**< registered for peers' access (counted in rail->remote_regs) */
    /** its memory is in mappings private to this process: 1 yes, -1 no, 0 not asked yet
     *  (mca_btl_ofi_reg_own; under rail->reg_lock) */
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

/** Register a region for internal use (not counted, not on the live list). */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_create(mca_btl_ofi_rail_t *rail, void *base, size_t size);
/** Once per process: the register-failed message, for a registration of size bytes the
 *  provider refused (rail->reg_error). */
void mca_btl_ofi_reg_failed(mca_btl_ofi_rail_t *rail, size_t size);
/** Close a registration made by mca_btl_ofi_reg_create and free it. */
void mca_btl_ofi_reg_destroy(mca_btl_ofi_reg_t *reg);
/** Close a live registration (counted in registrations_live) and free it. */
void mca_btl_ofi_reg_release(mca_btl_ofi_reg_t *reg);
/**
 * The live registration (made by mca_btl_ofi_rail_register) whose key peers
 * use, for a peer's access that this process carries out itself. The caller
 * holds rail->reg_lock for as long as it uses the registration.
 *
 * @retval the registration, or NULL for a key no live registration has
 */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_find(mca_btl_ofi_rail_t *rail, uint64_t key);
/**
 * This process's registration for peers' access that covers [address, address + size) of its
 * own memory, where that memory is private to this process (no shared mapping: no other
 * process of the node changes it with its own stores). Serves operations on this process's
 * own memory that come without a handle (mca_btl_ofi_locate_own). A scan, as
 * mca_btl_ofi_reg_covering; whether the memory is private is read once per registration.
 *
 * @retval true with *handle a copy of its handle; false if there is none
 */
bool mca_btl_ofi_reg_own(mca_btl_ofi_rail_t *rail, uint64_t address, size_t size,
                         mca_btl_base_registration_handle_t *handle);
/**
 * A live registration (made through btl_register_mem) that covers
 * [address, address + size) of this process, scanning them all: for the
 * rare question of a peer (btl_ofi_locate.c), not for a hot path.
 *
 * @param handle (OUT) its handle, set only when one is found
 * @retval true found
 */
bool mca_btl_ofi_reg_covering(mca_btl_ofi_rail_t *rail, uint64_t address, size_t size,
                              struct mca_btl_base_registration_handle_t *handle);
/** Deregister whatever the upper layer left registered at finalize. */
void mca_btl_ofi_regs_release(mca_btl_ofi_rail_t *rail);

/**
 * FI_MR_LOCAL: a slot of operation words in a registered slab (made when
 * none has room). Slots are never returned: they belong to an operation
 * context for the rail's life.
 *
 * @param words (OUT) the slot
 * @param desc  (OUT) its slab's descriptor
 * @retval OPAL_SUCCESS, or OPAL_ERR_OUT_OF_RESOURCE if registering a slab failed
 */
int mca_btl_ofi_word_slot(mca_btl_ofi_rail_t *rail, mca_btl_ofi_words_t **words, void **desc);
/** Close the registered word slabs (at finalize, after the last operation). */
void mca_btl_ofi_word_slabs_release(mca_btl_ofi_rail_t *rail);

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
    return h->check == mca_btl_ofi_handle_check(h->key, h->base, h->len) && address >= h->base &&
           size <= h->len && address - h->base <= h->len - size;
}

/** The target of an access inside the registration of h (covers() said so). */
static inline void mca_btl_ofi_target_in(const mca_btl_ofi_rail_t *rail,
                                         const struct mca_btl_base_registration_handle_t *h,
                                         uint64_t address, mca_btl_ofi_target_t *target)
{
    target->addr = rail->virt_addr ? address : address - h->base;
    target->key = h->key;
    target->check = h->check;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_MR_H */
