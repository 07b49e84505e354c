/*
 * btl-ofi counters, exposed as MPI_T performance variables (btl_ofi_pvar.c):
 * the proof that traffic went through this component.
 */

#ifndef MCA_BTL_OFI_PVAR_H
#define MCA_BTL_OFI_PVAR_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/** Counters exposed as MPI_T performance variables. */
enum mca_btl_ofi_counter_id_t {
    MCA_BTL_OFI_CNT_PUTS,
    MCA_BTL_OFI_CNT_GETS,
    MCA_BTL_OFI_CNT_PUT_BYTES,
    MCA_BTL_OFI_CNT_GET_BYTES,
    MCA_BTL_OFI_CNT_ATOMICS,
    MCA_BTL_OFI_CNT_ATOMICS_EMULATED,
    MCA_BTL_OFI_CNT_ATOMICS_AWAITED, /**< fetching atomics finished inside their call */
    MCA_BTL_OFI_CNT_CQ_ENTRIES,
    MCA_BTL_OFI_CNT_CQ_ERRORS,
    MCA_BTL_OFI_CNT_FLUSHES,
    MCA_BTL_OFI_CNT_PROOF_READS,
    MCA_BTL_OFI_CNT_REGISTRATIONS,
    MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE,
    MCA_BTL_OFI_CNT_POST_EAGAIN,
    MCA_BTL_OFI_CNT_REFUSED,
    MCA_BTL_OFI_CNT_INJECTED,
    MCA_BTL_OFI_CNT_TRANSIENT_REGS,
    MCA_BTL_OFI_CNT_PUTS_GATHERED,
    MCA_BTL_OFI_CNT_PUT_BATCHES,
    MCA_BTL_OFI_CNT_PUT_BATCHES_APPLIED,
    MCA_BTL_OFI_CNT_HANDLES_STALE,
    MCA_BTL_OFI_CNT_HANDLES_LOCATED,
    MCA_BTL_OFI_CNT_LOCATE_ANSWERS,
    MCA_BTL_OFI_CNT_RCACHE_HITS,
    MCA_BTL_OFI_CNT_RCACHE_MISSES,
    MCA_BTL_OFI_CNT_RCACHE_INVALIDATED,
    MCA_BTL_OFI_CNT_RCACHE_EVICTED,
    MCA_BTL_OFI_CNT_RCACHE_ENTRIES, /**< level: registrations the cache holds */
    MCA_BTL_OFI_CNT_MR_MODE,        /**< the negotiated FI_MR_* bits (set once, at init) */
    MCA_BTL_OFI_CNT_KEY_SIZE,       /**< the negotiated mr_key_size in bytes (set once, at init) */
    MCA_BTL_OFI_CNT_ATOMICS_AS_MESSAGES,  /**< origin: atomics sent as messages (btl_ofi_am.c) */
    MCA_BTL_OFI_CNT_GETS_AS_MESSAGES,     /**< origin: gets sent as messages */
    MCA_BTL_OFI_CNT_MESSAGES_APPLIED,     /**< target: atomic and get messages applied */
    MCA_BTL_OFI_CNT_REGISTRATIONS_FAILED, /**< fi_mr_reg calls the provider refused */
    MCA_BTL_OFI_CNT_CQ_POLLS,      /**< fi_cq_read calls (progress passes that read the CQ) */
    MCA_BTL_OFI_CNT_LOCAL_PUTS,    /**< puts to peers on this node over the node-local domain */
    MCA_BTL_OFI_CNT_LOCAL_GETS,    /**< gets likewise */
    MCA_BTL_OFI_CNT_LOCAL_ATOMICS, /**< atomics likewise */
    MCA_BTL_OFI_CNT_LOCAL_PEERS,   /**< level: peers reached over the node-local domain */
    MCA_BTL_OFI_CNT_STRIPED,       /**< puts and gets split over several NICs */
    MCA_BTL_OFI_CNT_NICS,          /**< level: network domains (NICs) this process uses */
    MCA_BTL_OFI_CNT_PEERS,         /**< level: endpoints (address-vector entries) held */
    MCA_BTL_OFI_CNT_NIC_FAILURES,  /**< NICs taken for failed (btl_ofi_fault.c) */
    MCA_BTL_OFI_CNT_STRIPE_MOVED,  /**< parts of striped transfers moved off a failed NIC */
    MCA_BTL_OFI_CNT_CQ_PAUSES,     /**< idle network CQ reads followed by a pause (btl_ofi_ops.c) */
    MCA_BTL_OFI_CNT_CQ_SERVING,    /**< idle network CQ reads that served a peer (cost) */
    MCA_BTL_OFI_CNT_CQ_LONG_PAUSES, /**< pauses made longest: the node-local domain at work */
    MCA_BTL_OFI_CNT_CQ_ARMED,    /**< idle network CQs left to an io_uring poll (btl_ofi_wake.c) */
    MCA_BTL_OFI_CNT_CQ_WOKEN,    /**< reads of such a CQ because that poll completed */
    MCA_BTL_OFI_CNT_SELF_SERVED, /**< handle-less accesses to own memory served (locate.h) */
    MCA_BTL_OFI_CNT_MAX,
};

/** The counters' shared part: what mca_btl_ofi_uncount takes back and levels set once. */
extern atomic_uint_fast64_t mca_btl_ofi_counters[MCA_BTL_OFI_CNT_MAX];

/** A thread's own counters. Counting on the path of every operation is a relaxed load and
 *  store of the thread's own cache lines, not a locked instruction on a line every thread
 *  shares; a read sums every thread's with the shared part (mca_btl_ofi_counter_read). */
typedef struct mca_btl_ofi_counter_block_t {
    atomic_uint_fast64_t value[MCA_BTL_OFI_CNT_MAX];
    struct mca_btl_ofi_counter_block_t *next;
} mca_btl_ofi_counter_block_t;

/** This thread's block, or NULL before its first count (initial-exec: one load off the
 *  thread pointer, though the component is a dlopen()ed DSO; a pointer fits the static TLS
 *  glibc keeps for such libraries). */
extern __thread mca_btl_ofi_counter_block_t *mca_btl_ofi_thread_counters
    __attribute__((tls_model("initial-exec")));

/** Slow path of mca_btl_ofi_count: this thread's block, made and listed; NULL if out of
 *  memory (the shared part counts then). */
mca_btl_ofi_counter_block_t *mca_btl_ofi_counters_join(void);

/** This thread's block (NULL where none could be made: then the shared part counts). One
 *  read of the thread pointer, for a caller that counts several things. */
static inline mca_btl_ofi_counter_block_t *mca_btl_ofi_counters_mine(void)
{
    mca_btl_ofi_counter_block_t *mine = mca_btl_ofi_thread_counters;

    return OPAL_LIKELY(NULL != mine) ? mine : mca_btl_ofi_counters_join();
}

/** Count n in id, in mine (mca_btl_ofi_counters_mine() of this thread). */
static inline void mca_btl_ofi_count_in(mca_btl_ofi_counter_block_t *mine,
                                        enum mca_btl_ofi_counter_id_t id, uint64_t n)
{
    if (OPAL_UNLIKELY(NULL == mine)) {
        atomic_fetch_add_explicit(&mca_btl_ofi_counters[id], n, memory_order_relaxed);
        return;
    }
    /* only this thread writes its block: no read-modify-write can interleave */
    atomic_store_explicit(&mine->value[id],
                          atomic_load_explicit(&mine->value[id], memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void mca_btl_ofi_count(enum mca_btl_ofi_counter_id_t id, uint64_t n)
{
    mca_btl_ofi_count_in(mca_btl_ofi_counters_mine(), id, n);
}

/** Take back n of a counter (levels that go down: registrations, peers); any thread. */
static inline void mca_btl_ofi_uncount(enum mca_btl_ofi_counter_id_t id, uint64_t n)
{
    atomic_fetch_sub_explicit(&mca_btl_ofi_counters[id], n, memory_order_relaxed);
}

/** Set a level counter that nothing counts (a value learned once, e.g. the negotiated MR
 *  mode). */
static inline void mca_btl_ofi_counter_set(enum mca_btl_ofi_counter_id_t id, uint64_t value)
{
    atomic_store(&mca_btl_ofi_counters[id], value);
}

/** A counter's value: the shared part and every thread's (modulo 2^64, so that what one
 *  thread counts and another takes back sums right). */
uint64_t mca_btl_ofi_counter_read(enum mca_btl_ofi_counter_id_t id);

/**
 * Register the counters as MPI_T performance variables.
 *
 * @param component (IN) the component they belong to
 * @retval OPAL_SUCCESS, or the first registration error
 */
int mca_btl_ofi_pvar_register(const mca_base_component_t *component);

END_C_DECLS

#endif /* MCA_BTL_OFI_PVAR_H */
