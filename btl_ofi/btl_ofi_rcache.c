/*
 * btl-ofi registration cache.
 *
 * Under FI_MR_LOCAL osc/rdma registers a user buffer for each put or get it
 * cannot copy into one of its fragments (anything above osc_rdma_buffer_size)
 * and deregisters it when the operation completes; btl-ofi registers the
 * local buffers that come without a handle the same way. On a NIC each such
 * fi_mr_reg pins pages and writes the NIC's translation tables: tens of
 * microseconds (verbs, efa). This cache keeps those registrations, made over
 * whole pages, after their last user, so a repeated operation from the same
 * memory finds one.
 *
 * A cached registration is forgotten as soon as its memory is unmapped or
 * given back (munmap, mremap, madvise(MADV_DONTNEED), brk): Open MPI's memory
 * hooks call mca_btl_ofi_rcache_released, which marks every registration
 * overlapping the range as gone and takes it off the lookup list. A later
 * mapping at the same address then gets a registration of its own, never the
 * stale one (on a NIC that one would still point at the old pages). The hook
 * runs inside munmap, possibly inside malloc or free, so it only moves list
 * items; registrations are closed outside it, by the next get or put, or by
 * the last user of a gone registration.
 *
 * Only registrations without remote access are cached: a window's memory is
 * registered for peers, and its key must die with MPI_Win_free (a peer using
 * it afterwards must be refused, python_tests/test_stale_key.py).
 *
 * Lookups scan a most-recently-used list bounded by btl_ofi_rcache_size
 * (64 by default); registrations without users beyond it are closed, least
 * recently used first. No provider call is made under the cache lock, since
 * a provider may unmap memory and so enter the hook.
 */

#include "btl_ofi_rcache.h"

#include <unistd.h>

#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "opal/mca/memory/base/base.h"
#include "opal/memoryhooks/memory.h"

typedef struct mca_btl_ofi_rcache_t {
    opal_list_item_t super; /**< on the process's list, for the hook */
    opal_mutex_t lock;
    opal_list_t mru;    /**< registrations to look up, most recently used first */
    opal_list_t gone;   /**< unused registrations to close (their memory went away) */
    size_t entries;     /**< on mru */
    size_t max_entries; /**< btl_ofi_rcache_size */
} mca_btl_ofi_rcache_t;

static OBJ_CLASS_INSTANCE(mca_btl_ofi_rcache_t, opal_list_item_t, NULL, NULL);

/* The caches of this process, for the hook (a process may have several rails). */
static opal_mutex_t mca_btl_ofi_rcaches_lock = OPAL_MUTEX_STATIC_INIT;
static opal_list_t mca_btl_ofi_rcaches;
static int mca_btl_ofi_rcaches_count;

static size_t mca_btl_ofi_page_size(void)
{
    static size_t page;

    if (0 == page) {
        long sz = sysconf(_SC_PAGESIZE);
        page = sz > 0 ? (size_t)sz : 4096;
    }
    return page;
}

static bool mca_btl_ofi_reg_overlaps(const mca_btl_ofi_reg_t *reg, uintptr_t lo, uintptr_t hi)
{
    return reg->handle.base < hi && lo < reg->handle.base + reg->handle.len;
}

/* The memory hook: [buf, buf + length) is being unmapped or given back. */
static void mca_btl_ofi_rcache_released(void *buf, size_t length, void *cbdata, bool from_alloc)
{
    uintptr_t lo = (uintptr_t)buf, hi = lo + length;
    mca_btl_ofi_rcache_t *cache;

    (void)cbdata;
    (void)from_alloc;
    opal_mutex_lock(&mca_btl_ofi_rcaches_lock);
    OPAL_LIST_FOREACH(cache, &mca_btl_ofi_rcaches, mca_btl_ofi_rcache_t)
    {
        mca_btl_ofi_reg_t *reg, *next;

        opal_mutex_lock(&cache->lock);
        OPAL_LIST_FOREACH_SAFE(reg, next, &cache->mru, mca_btl_ofi_reg_t)
        {
            if (!mca_btl_ofi_reg_overlaps(reg, lo, hi)) {
                continue;
            }
            opal_list_remove_item(&cache->mru, &reg->super);
            --cache->entries;
            reg->gone = true;
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_RCACHE_INVALIDATED, 1);
            if (0 == reg->users) {
                opal_list_append(&cache->gone, &reg->super);
            }
        }
        opal_mutex_unlock(&cache->lock);
    }
    opal_mutex_unlock(&mca_btl_ofi_rcaches_lock);
}

static void mca_btl_ofi_rcache_close(opal_list_t *victims)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(victims))) {
        mca_btl_ofi_reg_destroy((mca_btl_ofi_reg_t *)item);
        mca_btl_ofi_uncount(MCA_BTL_OFI_CNT_RCACHE_ENTRIES, 1);
    }
}

/* Moves what is to be closed onto victims: gone ones, and unused ones beyond keep. */
static void mca_btl_ofi_rcache_collect_to(mca_btl_ofi_rcache_t *cache, opal_list_t *victims,
                                          size_t keep)
{
    mca_btl_ofi_reg_t *reg, *prev;

    opal_list_join(victims, opal_list_get_end(victims), &cache->gone);
    OPAL_LIST_FOREACH_SAFE_REV(reg, prev, &cache->mru, mca_btl_ofi_reg_t)
    {
        if (cache->entries <= keep) {
            break;
        }
        if (0 == reg->users) {
            opal_list_remove_item(&cache->mru, &reg->super);
            --cache->entries;
            opal_list_append(victims, &reg->super);
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_RCACHE_EVICTED, 1);
        }
    }
}

static void mca_btl_ofi_rcache_collect(mca_btl_ofi_rcache_t *cache, opal_list_t *victims)
{
    mca_btl_ofi_rcache_collect_to(cache, victims, cache->max_entries);
}

bool mca_btl_ofi_rcache_on(const mca_btl_ofi_rail_t *rail)
{
    return NULL != rail->rcache;
}

/* Open MPI's memory hooks, where they report freed and unmapped memory: the framework opened
 * (Open MPI installs its hooks, memory/patcher, when a component opens it, as its ofi and ucx
 * common code do; opened once per cache). false: the cache stays off (said at verbose 10). */
static bool mca_btl_ofi_rcache_hooks(void)
{
    const int needed = OPAL_MEMORY_FREE_SUPPORT | OPAL_MEMORY_MUNMAP_SUPPORT;

    if (OPAL_SUCCESS != mca_base_framework_open(&opal_memory_base_framework, 0)) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "registration cache off: Open MPI's memory framework "
                                            "did not open");
        return false;
    }
    if (needed != (opal_mem_hooks_support_level() & needed)) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "registration cache off: Open MPI's memory hooks do "
                                            "not report freed memory here (memory framework)");
        (void)mca_base_framework_close(&opal_memory_base_framework);
        return false;
    }
    return true;
}

static void mca_btl_ofi_rcache_free(mca_btl_ofi_rcache_t *cache)
{
    OBJ_DESTRUCT(&cache->gone);
    OBJ_DESTRUCT(&cache->mru);
    OBJ_DESTRUCT(&cache->lock);
    OBJ_RELEASE(cache);
    (void)mca_base_framework_close(&opal_memory_base_framework);
}

/* The cache on the process's list, which the release hook walks (registered with the first
 * cache). false where the hook could not be registered. */
static bool mca_btl_ofi_rcache_listed(mca_btl_ofi_rcache_t *cache)
{
    opal_mutex_lock(&mca_btl_ofi_rcaches_lock);
    if (0 == mca_btl_ofi_rcaches_count) {
        OBJ_CONSTRUCT(&mca_btl_ofi_rcaches, opal_list_t);
        if (OPAL_SUCCESS != opal_mem_hooks_register_release(mca_btl_ofi_rcache_released, NULL)) {
            OBJ_DESTRUCT(&mca_btl_ofi_rcaches);
            opal_mutex_unlock(&mca_btl_ofi_rcaches_lock);
            return false;
        }
    }
    ++mca_btl_ofi_rcaches_count;
    opal_list_append(&mca_btl_ofi_rcaches, &cache->super);
    opal_mutex_unlock(&mca_btl_ofi_rcaches_lock);
    return true;
}

void mca_btl_ofi_rcache_init(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_rcache_t *cache;

    rail->rcache = NULL;
    if (!rail->mr_local) {
        return; /* local buffers need no registration at all (fi_mr(3), FI_MR_LOCAL) */
    }
    if (mca_btl_ofi_params.rcache_size <= 0) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "registration cache off (btl_ofi_rcache_size = %d)",
                            mca_btl_ofi_params.rcache_size);
        return;
    }
    if (!mca_btl_ofi_rcache_hooks()) {
        return;
    }
    cache = OBJ_NEW(mca_btl_ofi_rcache_t);
    if (NULL == cache) {
        (void)mca_base_framework_close(&opal_memory_base_framework);
        return;
    }
    OBJ_CONSTRUCT(&cache->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&cache->mru, opal_list_t);
    OBJ_CONSTRUCT(&cache->gone, opal_list_t);
    cache->entries = 0;
    cache->max_entries = (size_t)mca_btl_ofi_params.rcache_size;
    if (!mca_btl_ofi_rcache_listed(cache)) {
        mca_btl_ofi_rcache_free(cache);
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "registration cache off: the memory release "
                                            "hook could not be registered");
        return;
    }
    rail->rcache = cache;
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "registration cache on: up to %zu local registrations",
                        cache->max_entries);
}

void mca_btl_ofi_rcache_fini(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_rcache_t *cache = rail->rcache;
    opal_list_t victims;

    if (NULL == cache) {
        return;
    }
    /* Off the hook's list first: from here on nobody else touches it. */
    opal_mutex_lock(&mca_btl_ofi_rcaches_lock);
    opal_list_remove_item(&mca_btl_ofi_rcaches, &cache->super);
    if (0 == --mca_btl_ofi_rcaches_count) {
        (void)opal_mem_hooks_unregister_release(mca_btl_ofi_rcache_released);
        OBJ_DESTRUCT(&mca_btl_ofi_rcaches);
    }
    opal_mutex_unlock(&mca_btl_ofi_rcaches_lock);
    rail->rcache = NULL;

    OBJ_CONSTRUCT(&victims, opal_list_t);
    opal_list_join(&victims, opal_list_get_end(&victims), &cache->gone);
    opal_list_join(&victims, opal_list_get_end(&victims), &cache->mru);
    mca_btl_ofi_rcache_close(&victims);
    OBJ_DESTRUCT(&victims);
    OBJ_DESTRUCT(&cache->gone);
    OBJ_DESTRUCT(&cache->mru);
    OBJ_DESTRUCT(&cache->lock);
    OBJ_RELEASE(cache);
    (void)mca_base_framework_close(&opal_memory_base_framework);
}

/* A cached registration covering [lo, hi), with one user more; NULL: none. */
static mca_btl_ofi_reg_t *mca_btl_ofi_rcache_find(mca_btl_ofi_rcache_t *cache, uintptr_t lo,
                                                  uintptr_t hi)
{
    mca_btl_ofi_reg_t *reg;

    OPAL_LIST_FOREACH(reg, &cache->mru, mca_btl_ofi_reg_t)
    {
        if (reg->handle.base <= lo && hi <= reg->handle.base + reg->handle.len) {
            ++reg->users;
            if (&reg->super != opal_list_get_first(&cache->mru)) {
                opal_list_remove_item(&cache->mru, &reg->super);
                opal_list_prepend(&cache->mru, &reg->super);
            }
            return reg;
        }
    }
    return NULL;
}

/* A registration, or NULL once the provider refused it even after the cache gave back
 * what it held idle (a NIC's registrations are few: cached ones must not starve a window). */
mca_btl_ofi_reg_t *mca_btl_ofi_rcache_reg_create(mca_btl_ofi_rail_t *rail, void *base, size_t size)
{
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_create(rail, base, size);

    if (NULL == reg && mca_btl_ofi_rcache_on(rail) && mca_btl_ofi_rcache_shrink(rail) > 0) {
        reg = mca_btl_ofi_reg_create(rail, base, size);
    }
    return reg;
}

mca_btl_ofi_reg_t *mca_btl_ofi_rcache_get(mca_btl_ofi_rail_t *rail, void *base, size_t size)
{
    mca_btl_ofi_rcache_t *cache = rail->rcache;
    const size_t page = mca_btl_ofi_page_size();
    uintptr_t lo = (uintptr_t)base & ~(page - 1);
    uintptr_t hi = ((uintptr_t)base + (size ? size : 1) + page - 1) & ~(page - 1);
    mca_btl_ofi_reg_t *reg;
    opal_list_t victims;

    opal_mutex_lock(&cache->lock);
    reg = mca_btl_ofi_rcache_find(cache, lo, hi);
    opal_mutex_unlock(&cache->lock);
    if (NULL != reg) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_RCACHE_HITS, 1);
        return reg;
    }

    /* The pages that hold the buffer are mapped, so registering all of them is allowed
     * under FI_MR_ALLOCATED too. */
    reg = mca_btl_ofi_rcache_reg_create(rail, (void *)lo, hi - lo);
    if (NULL == reg) {
        return NULL;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_RCACHE_MISSES, 1);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_RCACHE_ENTRIES, 1);
    reg->cached = true;
    reg->gone = false;
    reg->users = 1;

    OBJ_CONSTRUCT(&victims, opal_list_t);
    opal_mutex_lock(&cache->lock);
    opal_list_prepend(&cache->mru, &reg->super);
    ++cache->entries;
    mca_btl_ofi_rcache_collect(cache, &victims);
    opal_mutex_unlock(&cache->lock);
    mca_btl_ofi_rcache_close(&victims);
    OBJ_DESTRUCT(&victims);
    return reg;
}

void mca_btl_ofi_rcache_put(mca_btl_ofi_rail_t *rail, mca_btl_ofi_reg_t *reg)
{
    mca_btl_ofi_rcache_t *cache = rail->rcache;
    opal_list_t victims;

    OBJ_CONSTRUCT(&victims, opal_list_t);
    opal_mutex_lock(&cache->lock);
    if (0 == --reg->users && reg->gone) {
        opal_list_append(&victims, &reg->super);
    }
    mca_btl_ofi_rcache_collect(cache, &victims);
    opal_mutex_unlock(&cache->lock);
    mca_btl_ofi_rcache_close(&victims);
    OBJ_DESTRUCT(&victims);
}

size_t mca_btl_ofi_rcache_shrink(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_rcache_t *cache = rail->rcache;
    opal_list_t victims;
    size_t closed;

    OBJ_CONSTRUCT(&victims, opal_list_t);
    opal_mutex_lock(&cache->lock);
    mca_btl_ofi_rcache_collect_to(cache, &victims, 0);
    opal_mutex_unlock(&cache->lock);
    closed = opal_list_get_size(&victims);
    mca_btl_ofi_rcache_close(&victims);
    OBJ_DESTRUCT(&victims);
    if (0 != closed) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "the provider refused a registration: the cache "
                                            "gave back %zu idle ones",
                            closed);
    }
    return closed;
}
