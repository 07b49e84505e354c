/*
 * btl-ofi memory registration.
 *
 * With FI_MR_PROV_KEY the provider picks the key; without it this BTL hands
 * out keys from a counter that fits the provider's mr_key_size, skipping any
 * the provider reports as taken (-FI_ENOKEY). The handle carries the
 * registered base so that peers can send offsets when FI_MR_VIRT_ADDR is off.
 * Under FI_MR_ENDPOINT each MR is bound to the endpoint and enabled before
 * use. Under FI_MR_LOCAL every local buffer needs a descriptor: operations
 * take their operand and result words from registered slabs kept here, and a
 * caller's buffer that came without a registration handle is registered for
 * that one operation (btl_ofi_ops.c).
 */

#include "btl_ofi_mr.h"

#include <stdio.h>
#include <string.h>

#include "btl_ofi_reg_pool.h"
#include "btl_ofi_report.h"

static void mca_btl_ofi_reg_construct(mca_btl_ofi_reg_t *reg)
{
    reg->mr = NULL;
    reg->desc = NULL;
    memset(&reg->handle, 0, sizeof(reg->handle));
    memset(reg->rail_handle, 0, sizeof(reg->rail_handle));
    memset(reg->by_rail, 0, sizeof(reg->by_rail));
    reg->by_rail[0] = reg;
    reg->cached = false;
    reg->remote = false;
    reg->own_private = 0;
    reg->gone = false;
    reg->users = 0;
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_reg_t, opal_list_item_t, mca_btl_ofi_reg_construct, NULL);

/* Enough attempts to step over keys that other registrations of this domain hold. */
#define MCA_BTL_OFI_KEY_ATTEMPTS 64

static uint64_t mca_btl_ofi_next_key(mca_btl_ofi_rail_t *rail)
{
    uint64_t key;

    do {
        key = atomic_fetch_add(&rail->next_key, 1) & rail->key_mask;
    } while (0 == key);
    return key;
}

static int mca_btl_ofi_mr_reg(mca_btl_ofi_rail_t *rail, void *base, size_t size,
                              mca_btl_ofi_reg_t *reg)
{
    const uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    int rc = -FI_ENOKEY;

    for (int attempt = 0; attempt < MCA_BTL_OFI_KEY_ATTEMPTS && -FI_ENOKEY == rc; ++attempt) {
        uint64_t requested = rail->prov_key ? 0 : mca_btl_ofi_next_key(rail);
        rc = fi_mr_reg(rail->domain, base, size, access, 0, requested, 0, &reg->mr, NULL);
    }
    if (0 != rc) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "fi_mr_reg of %zu bytes at %p failed: %s", size, base,
                            fi_strerror(-rc));
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REGISTRATIONS_FAILED, 1);
        rail->reg_error = rc;
        reg->mr = NULL;
        return OPAL_ERROR;
    }
    if (rail->mr_endpoint &&
        (0 != (rc = fi_mr_bind(reg->mr, &rail->ep->fid, 0)) || 0 != (rc = fi_mr_enable(reg->mr)))) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "binding a registration to the endpoint failed: %s",
                            fi_strerror(-rc));
        (void)fi_close(&reg->mr->fid);
        reg->mr = NULL;
        return OPAL_ERROR;
    }
    reg->desc = fi_mr_desc(reg->mr);
    reg->handle.key = fi_mr_key(reg->mr);
    if (FI_KEY_NOTAVAIL == reg->handle.key) {
        /* a raw key (FI_MR_RAW), which this BTL does not carry: never truncate one */
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "the provider gave no 64-bit key for a registration");
        (void)fi_close(&reg->mr->fid);
        reg->mr = NULL;
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* A record off the program's heap (btl_ofi_reg_pool.h says why). */
static mca_btl_ofi_reg_t *mca_btl_ofi_reg_new(void)
{
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_pool_get(sizeof(*reg));

    if (NULL != reg) {
        OBJ_CONSTRUCT(reg, mca_btl_ofi_reg_t);
    }
    return reg;
}

static void mca_btl_ofi_reg_free(mca_btl_ofi_reg_t *reg)
{
    OBJ_DESTRUCT(reg);
    mca_btl_ofi_reg_pool_put(reg);
}

mca_btl_ofi_reg_t *mca_btl_ofi_reg_create(mca_btl_ofi_rail_t *rail, void *base, size_t size)
{
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_new();

    if (NULL == reg) {
        return NULL;
    }
    reg->handle.base = (uint64_t)(uintptr_t)base;
    reg->handle.len = size;
    /* A zero-length region needs no provider registration: no access can be in range. */
    if (0 != size && OPAL_SUCCESS != mca_btl_ofi_mr_reg(rail, base, size, reg)) {
        mca_btl_ofi_reg_free(reg);
        return NULL;
    }
    mca_btl_ofi_handle_seal(&reg->handle);
    return reg;
}

void mca_btl_ofi_reg_destroy(mca_btl_ofi_reg_t *reg)
{
    if (NULL != reg->mr) {
        int rc = fi_close(&reg->mr->fid);
        if (0 != rc) {
            opal_output_verbose(1, mca_btl_ofi_output,
                                MCA_BTL_OFI_LOG "closing a registration failed: %s",
                                fi_strerror(-rc));
        }
    }
    mca_btl_ofi_reg_free(reg);
}

void mca_btl_ofi_reg_failed(mca_btl_ofi_rail_t *rail, size_t size)
{
    static atomic_bool shown;
    char bytes[32], error[160], held[32];

    if (atomic_exchange(&shown, true)) {
        return;
    }
    snprintf(bytes, sizeof(bytes), "%zu", size);
    snprintf(error, sizeof(error), "%s (%d)", fi_strerror(-rail->reg_error), rail->reg_error);
    snprintf(held, sizeof(held), "%" PRIu64,
             mca_btl_ofi_counter_read(MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE) +
                 mca_btl_ofi_counter_read(MCA_BTL_OFI_CNT_RCACHE_ENTRIES));
    mca_btl_ofi_report_now("register-failed", rail->info->fabric_attr->prov_name, bytes, error,
                           held, NULL);
}

void mca_btl_ofi_reg_release(mca_btl_ofi_reg_t *reg)
{
    mca_btl_ofi_reg_destroy(reg);
    mca_btl_ofi_uncount(MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE, 1);
}

mca_btl_ofi_reg_t *mca_btl_ofi_reg_find(mca_btl_ofi_rail_t *rail, uint64_t key)
{
    mca_btl_ofi_reg_t *reg = NULL;

    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(&rail->regs_by_key, key, (void **)&reg)) {
        return NULL;
    }
    return reg;
}

/* Whether every page of [base, base + len) lies in a mapping private to this process
 * (/proc/self/maps: the permissions' fourth letter is 'p', not 's'). false when it cannot
 * be told. */
static bool mca_btl_ofi_memory_private(uint64_t base, uint64_t len)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    uint64_t at = base, end = base + len;
    bool private_so_far = true;
    char line[512];

    if (NULL == maps) {
        return false;
    }
    while (private_so_far && at < end && NULL != fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8];
        bool whole = NULL != strchr(line, '\n');

        while (!whole) { /* a long path: the rest of the line is not a mapping */
            char rest[256];

            whole = NULL == fgets(rest, sizeof(rest), maps) || NULL != strchr(rest, '\n');
        }
        if (3 != sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) || hi <= at) {
            continue;
        }
        /* the mappings come in address order: one that starts past `at` leaves a hole */
        private_so_far = lo <= at && strlen(perms) >= 4 && 'p' == perms[3];
        at = hi;
    }
    fclose(maps);
    return private_so_far && at >= end;
}

/* The first live registration that covers [address, address + size); with own_private, only
 * one for peers' access whose memory is private to this process. */
static bool mca_btl_ofi_reg_scan(mca_btl_ofi_rail_t *rail, uint64_t address, size_t size,
                                 bool own_private, mca_btl_base_registration_handle_t *handle)
{
    mca_btl_ofi_reg_t *reg;
    bool found = false;

    OPAL_THREAD_LOCK(&rail->reg_lock);
    OPAL_LIST_FOREACH(reg, &rail->live_regs, mca_btl_ofi_reg_t)
    {
        if (NULL == reg->mr || !mca_btl_ofi_handle_covers(&reg->handle, address, size)) {
            continue;
        }
        if (own_private && reg->remote && 0 == reg->own_private) {
            reg->own_private =
                mca_btl_ofi_memory_private(reg->handle.base, reg->handle.len) ? 1 : -1;
        }
        if (!own_private || (reg->remote && 1 == reg->own_private)) {
            *handle = reg->handle;
            found = true;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);
    return found;
}

bool mca_btl_ofi_reg_covering(mca_btl_ofi_rail_t *rail, uint64_t address, size_t size,
                              mca_btl_base_registration_handle_t *handle)
{
    return mca_btl_ofi_reg_scan(rail, address, size, false, handle);
}

bool mca_btl_ofi_reg_own(mca_btl_ofi_rail_t *rail, uint64_t address, size_t size,
                         mca_btl_base_registration_handle_t *handle)
{
    return mca_btl_ofi_reg_scan(rail, address, size, true, handle);
}

void mca_btl_ofi_regs_release(mca_btl_ofi_rail_t *rail)
{
    opal_list_item_t *item;
    size_t leftover = 0;

    opal_hash_table_remove_all(&rail->regs_by_key);
    while (NULL != (item = opal_list_remove_first(&rail->live_regs))) {
        ++leftover;
        mca_btl_ofi_reg_release((mca_btl_ofi_reg_t *)item);
    }
    if (0 != leftover) {
        opal_output_verbose(
            10, mca_btl_ofi_output,
            MCA_BTL_OFI_LOG "released %zu registrations the upper layer left behind", leftover);
    }
}

/* ---- FI_MR_LOCAL: registered words for operations ---------------------- */

/* Operation words per registered slab. */
#define MCA_BTL_OFI_SLAB_WORDS 64

typedef struct mca_btl_ofi_words_slab_t {
    opal_list_item_t super;
    mca_btl_ofi_reg_t *reg;
    size_t used;
    mca_btl_ofi_words_t words[MCA_BTL_OFI_SLAB_WORDS];
} mca_btl_ofi_words_slab_t;
static OBJ_CLASS_INSTANCE(mca_btl_ofi_words_slab_t, opal_list_item_t, NULL, NULL);

/* A slab with a free slot (the last one made, or a new one); NULL if registering failed. */
static mca_btl_ofi_words_slab_t *mca_btl_ofi_slab_with_room(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_words_slab_t *slab = NULL;

    if (!opal_list_is_empty(&rail->word_slabs)) {
        slab = (mca_btl_ofi_words_slab_t *)opal_list_get_last(&rail->word_slabs);
    }
    if (NULL != slab && slab->used < MCA_BTL_OFI_SLAB_WORDS) {
        return slab;
    }
    slab = OBJ_NEW(mca_btl_ofi_words_slab_t);
    if (NULL == slab) {
        return NULL;
    }
    slab->used = 0;
    slab->reg = mca_btl_ofi_reg_create(rail, slab->words, sizeof(slab->words));
    if (NULL == slab->reg) {
        OBJ_RELEASE(slab);
        return NULL;
    }
    opal_list_append(&rail->word_slabs, &slab->super);
    return slab;
}

int mca_btl_ofi_word_slot(mca_btl_ofi_rail_t *rail, mca_btl_ofi_words_t **words, void **desc)
{
    mca_btl_ofi_words_slab_t *slab;

    OPAL_THREAD_LOCK(&rail->reg_lock);
    slab = mca_btl_ofi_slab_with_room(rail);
    if (NULL != slab) {
        *words = &slab->words[slab->used++];
        *desc = slab->reg->desc;
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);
    return (NULL == slab) ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_SUCCESS;
}

void mca_btl_ofi_word_slabs_release(mca_btl_ofi_rail_t *rail)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(&rail->word_slabs))) {
        mca_btl_ofi_words_slab_t *slab = (mca_btl_ofi_words_slab_t *)item;
        mca_btl_ofi_reg_destroy(slab->reg);
        OBJ_RELEASE(slab);
    }
}
