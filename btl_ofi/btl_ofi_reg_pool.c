/*
 * btl-ofi registration records from pages of their own (btl_ofi_reg_pool.h).
 * Each chunk is mapped with mmap, starts with a link to the previous chunk,
 * and is cut into records; free records form a stack linked through their
 * first word. A spin lock guards both: the critical sections are a few
 * pointer moves, and an mmap once per chunk.
 */

#include "btl_ofi_reg_pool.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#include "btl_ofi.h"

/* One chunk: 64 KiB, about 800 records of 80 bytes. */
#define MCA_BTL_OFI_REG_POOL_CHUNK (64 * 1024)
/* The chunk header's share, kept a multiple of a cache line. */
#define MCA_BTL_OFI_REG_POOL_HEADER 64

typedef struct mca_btl_ofi_reg_pool_chunk_t {
    struct mca_btl_ofi_reg_pool_chunk_t *prev;
} mca_btl_ofi_reg_pool_chunk_t;

static struct {
    atomic_flag lock;
    mca_btl_ofi_reg_pool_chunk_t *chunks;
    void *free_top;
    size_t outstanding;
} mca_btl_ofi_reg_pool = {.lock = ATOMIC_FLAG_INIT};

static void mca_btl_ofi_reg_pool_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&mca_btl_ofi_reg_pool.lock, memory_order_acquire)) {
    }
}

static void mca_btl_ofi_reg_pool_unlock(void)
{
    atomic_flag_clear_explicit(&mca_btl_ofi_reg_pool.lock, memory_order_release);
}

static void mca_btl_ofi_reg_pool_push(void *record)
{
    *(void **)record = mca_btl_ofi_reg_pool.free_top;
    mca_btl_ofi_reg_pool.free_top = record;
}

/* Map one more chunk and put its records on the free stack (lock held). */
static bool mca_btl_ofi_reg_pool_grow(size_t size)
{
    const size_t stride = (size + 15) & ~(size_t)15;
    char *chunk = mmap(NULL, MCA_BTL_OFI_REG_POOL_CHUNK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (MAP_FAILED == chunk) {
        return false;
    }
    ((mca_btl_ofi_reg_pool_chunk_t *)chunk)->prev = mca_btl_ofi_reg_pool.chunks;
    mca_btl_ofi_reg_pool.chunks = (mca_btl_ofi_reg_pool_chunk_t *)chunk;
    for (size_t off = MCA_BTL_OFI_REG_POOL_HEADER; off + stride <= MCA_BTL_OFI_REG_POOL_CHUNK;
         off += stride) {
        mca_btl_ofi_reg_pool_push(chunk + off);
    }
    return true;
}

void *mca_btl_ofi_reg_pool_get(size_t size)
{
    void *record = NULL;

    mca_btl_ofi_reg_pool_lock();
    if (NULL != mca_btl_ofi_reg_pool.free_top || mca_btl_ofi_reg_pool_grow(size)) {
        record = mca_btl_ofi_reg_pool.free_top;
        mca_btl_ofi_reg_pool.free_top = *(void **)record;
        ++mca_btl_ofi_reg_pool.outstanding;
    }
    mca_btl_ofi_reg_pool_unlock();
    return record;
}

void mca_btl_ofi_reg_pool_put(void *record)
{
    mca_btl_ofi_reg_pool_lock();
    mca_btl_ofi_reg_pool_push(record);
    --mca_btl_ofi_reg_pool.outstanding;
    mca_btl_ofi_reg_pool_unlock();
}

void mca_btl_ofi_reg_pool_fini(void)
{
    mca_btl_ofi_reg_pool_lock();
    if (0 != mca_btl_ofi_reg_pool.outstanding) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%zu registration records still in use at finalize; "
                                            "their pages stay mapped",
                            mca_btl_ofi_reg_pool.outstanding);
    } else {
        while (NULL != mca_btl_ofi_reg_pool.chunks) {
            mca_btl_ofi_reg_pool_chunk_t *prev = mca_btl_ofi_reg_pool.chunks->prev;
            (void)munmap(mca_btl_ofi_reg_pool.chunks, MCA_BTL_OFI_REG_POOL_CHUNK);
            mca_btl_ofi_reg_pool.chunks = prev;
        }
        mca_btl_ofi_reg_pool.free_top = NULL;
    }
    mca_btl_ofi_reg_pool_unlock();
}
