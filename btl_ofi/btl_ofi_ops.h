/*
 * btl-ofi operations (btl_ofi_ops.c): operation contexts, the outstanding
 * count, the posting contract, deferred reposts and progress.
 *
 * An operation knows what to do when its completion arrives: whoever posts it
 * sets op->complete (mca_btl_ofi_op_finish for most), and whoever defers it
 * names how to post it again. So this layer runs handlers without knowing
 * what kinds of operations exist; rdma and atomics sit above it.
 */

#ifndef MCA_BTL_OFI_OPS_H
#define MCA_BTL_OFI_OPS_H

#include "btl_ofi_module.h"

#include "opal/class/opal_free_list.h"

#include "btl_ofi_mr.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"

BEGIN_C_DECLS

/** Run when an operation's completion, or its error, arrives (status). */
typedef void (*mca_btl_ofi_op_complete_fn_t)(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                             int status);
/** Post an operation again after it met -FI_EAGAIN inside progress. */
typedef void (*mca_btl_ofi_op_repost_fn_t)(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);

/** Emulation state of an atomic the provider lacks (compare-and-swap loop, btl_ofi_atomics.c). */
typedef struct mca_btl_ofi_emulation_t {
    mca_btl_base_atomic_op_t op;
    int dt;               /**< datatype index */
    bool fetching;        /**< the caller wants the old value */
    uint64_t operand;     /**< the caller's operand */
    uint64_t target_addr; /**< already translated remote address */
    uint64_t key;
} mca_btl_ofi_emulation_t;

/** One outstanding libfabric operation. Its fi_context2 is the libfabric context. */
struct mca_btl_ofi_op_t {
    opal_free_list_item_t super;
    struct fi_context2 fi_ctx;
    mca_btl_ofi_op_complete_fn_t complete; /**< set when posted */
    mca_btl_ofi_op_repost_fn_t repost;     /**< set when deferred */
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
    /* Buffers the provider reads or writes until the operation completes; under
     * FI_MR_LOCAL they live in a registered slab (words_desc), else in inline_words. */
    mca_btl_ofi_words_t *words;
    void *words_desc;
    mca_btl_ofi_words_t inline_words;
    /** FI_MR_LOCAL and a caller without a local handle: registered for this op only */
    struct mca_btl_ofi_reg_t *transient;
    mca_btl_ofi_emulation_t emu;
    struct mca_btl_ofi_op_t *parent; /**< a put's proof read: the put it proves */
    /** a put waiting for its proof: completions still to come (its own and its proof's) */
    atomic_int pending;
    int status; /**< a put waiting for its proof: first error of the two, else OPAL_SUCCESS */
    /** a put that coalescing counts as in flight to its peer (btl_ofi_coalesce.c): that
     *  peer's count, which releasing the operation counts down; else NULL */
    atomic_int *in_flight;
    /** a get answered by messages (btl_ofi_am.c): bytes still to arrive */
    atomic_uint_fast64_t am_remaining;
    /** on a watched module (btl_ofi_fault.c): its list of operations taken, and whether
     *  this one is on it */
    struct mca_btl_ofi_op_t *posted_prev, *posted_next;
    bool listed;
};
OBJ_CLASS_DECLARATION(mca_btl_ofi_op_t);

/* Slow paths of the debug fault injection. */
bool mca_btl_ofi_inject_eagain_slow(void);
uint64_t mca_btl_ofi_inject_key_slow(uint64_t key);
bool mca_btl_ofi_inject_stale_slow(void);

/* The checks themselves: a load of the parameter and a predicted-not-taken branch. */
static inline bool mca_btl_ofi_inject_eagain_check(void)
{
    return OPAL_UNLIKELY(0 != mca_btl_ofi_params.debug_inject_eagain_permille) &&
           mca_btl_ofi_inject_eagain_slow();
}

static inline bool mca_btl_ofi_inject_stale_check(void)
{
    return OPAL_UNLIKELY(0 != mca_btl_ofi_params.inject_stale_every) &&
           mca_btl_ofi_inject_stale_slow();
}

static inline uint64_t mca_btl_ofi_inject_key_check(uint64_t key)
{
    return OPAL_LIKELY(0 == mca_btl_ofi_params.debug_inject_cq_error_every)
               ? key
               : mca_btl_ofi_inject_key_slow(key);
}

/* MCA_BTL_OFI_INJECT_CHECK (btl_ofi_params.h): how the hot path asks. 2: the same checks
 * behind an out-of-line call each (btl_ofi_ops.c). */
#if MCA_BTL_OFI_INJECT_CHECK == 2
bool mca_btl_ofi_inject_eagain_call(void);
uint64_t mca_btl_ofi_inject_key_call(uint64_t key);
bool mca_btl_ofi_inject_stale_call(void);
#endif

/**
 * Debug fault injection (off by default): whether this put/get/atomic is
 * refused as if the provider returned -FI_EAGAIN.
 */
static inline bool mca_btl_ofi_inject_eagain(void)
{
#if MCA_BTL_OFI_INJECT_CHECK == 2
    return mca_btl_ofi_inject_eagain_call();
#else
    return MCA_BTL_OFI_INJECT_CHECK && mca_btl_ofi_inject_eagain_check();
#endif
}

/** Debug fault injection: whether this access takes its handle as stale (every Nth). */
static inline bool mca_btl_ofi_inject_stale(void)
{
#if MCA_BTL_OFI_INJECT_CHECK == 2
    return mca_btl_ofi_inject_stale_call();
#else
    return MCA_BTL_OFI_INJECT_CHECK && mca_btl_ofi_inject_stale_check();
#endif
}

/** Debug fault injection: the key to post with (corrupted every Nth put/get). */
static inline uint64_t mca_btl_ofi_inject_key(uint64_t key)
{
#if MCA_BTL_OFI_INJECT_CHECK == 2
    return mca_btl_ofi_inject_key_call(key);
#else
    return MCA_BTL_OFI_INJECT_CHECK ? mca_btl_ofi_inject_key_check(key) : key;
#endif
}

/**
 * Whether a new put, get or atomic may start: no more operations in flight than half of
 * what the CQ holds beside the posted receives (module->op_limit). The other half is for
 * what those operations post on their own (proof reads, compare-and-swap steps, message
 * sends and the answers owed to peers), which never wait for room, so that two ranks
 * each at the limit can still answer each other. false: OPAL_ERR_OUT_OF_RESOURCE, try
 * again (osc/rdma progresses and retries).
 *
 * Operations whose completions a progress call has read and not yet handled (reaped)
 * hold no CQ entry, so they do not count: a completion callback that starts an
 * operation, and on OPAL_ERR_OUT_OF_RESOURCE calls opal_progress until it may (osc/rdma
 * does), runs while the rest of its batch waits behind it; counted, those would keep
 * the room shut that only their handling opens, and the callback would spin forever.
 */
static inline bool mca_btl_ofi_op_room(const mca_btl_ofi_module_t *module)
{
    return 0 == module->op_limit ||
           atomic_load_explicit(&module->outstanding, memory_order_relaxed) -
                   atomic_load_explicit(&module->reaped, memory_order_relaxed) <
               module->op_limit;
}

/**
 * Take an operation context and count it as outstanding.
 *
 * @param complete (IN) what progress runs when its completion arrives
 * @retval the context, or NULL when the free list is exhausted
 */
mca_btl_ofi_op_t *mca_btl_ofi_op_alloc(mca_btl_ofi_module_t *module,
                                       mca_btl_ofi_op_complete_fn_t complete,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       void *local_address,
                                       struct mca_btl_base_registration_handle_t *local_handle,
                                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                       void *cbdata);

/** Return an operation context that will not complete and uncount it. */
void mca_btl_ofi_op_release(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);

/** The plain completion handler: run the caller's callback, release the operation. */
void mca_btl_ofi_op_finish(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, int status);

/** Complete an operation: run the handler it was posted with. */
static inline void mca_btl_ofi_op_complete(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                           int status)
{
    op->complete(module, op, status);
}

/**
 * Turn a libfabric posting result into the BTL return contract, releasing
 * the operation when it was not posted.
 *
 * @retval OPAL_SUCCESS (queued), OPAL_ERR_OUT_OF_RESOURCE (-FI_EAGAIN: try again),
 *         OPAL_ERROR (the provider refused the operation)
 */
int mca_btl_ofi_post_result(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, ssize_t rc,
                            const char *what);

/** Move every item of src, which lock guards, to the end of dst (a list of the caller's). */
static inline void mca_btl_ofi_list_take(opal_list_t *dst, opal_list_t *src, opal_mutex_t *lock)
{
    OPAL_THREAD_LOCK(lock);
    opal_list_join(dst, opal_list_get_end(dst), src);
    OPAL_THREAD_UNLOCK(lock);
}

/** Read up to one batch of CQ entries and run their completion handlers. Nothing on a
 *  module whose NIC failed (btl_ofi_fault.c). */
int mca_btl_ofi_progress_module(mca_btl_ofi_module_t *module);

/**
 * One pass of progress for a caller that waits inside btl-ofi (flush, a post
 * that met -FI_EAGAIN, finalize's drain): as opal_progress does, a pass that
 * found nothing yields the CPU when Open MPI asks for it (mpi_yield_when_idle,
 * on by default when the node is oversubscribed). On shm an operation
 * completes only when its target progresses, and an oversubscribed target
 * gets the CPU only when the waiters give it up (osc_harness/PERFORMANCE.md,
 * window rounds). @return what mca_btl_ofi_progress_module returned
 */
int mca_btl_ofi_progress_wait(mca_btl_ofi_module_t *module);

/**
 * Progress of the network module (without a node-local one beside it: at every call,
 * as mca_btl_ofi_progress_module). Beside its node-local one (module->local): at every
 * call while this process has operations of its own on it, else at a pace: left unread
 * for btl_ofi_idle_poll_ratio times what a quiet read costs, and read at every call again
 * for a while after a read served a peer (it cost several times a quiet one) or returned
 * completions. Reading tcp's CQ costs a system call, which an on-node operation's latency
 * would pay at each pass of its wait, on either side; a peer on another node that waits
 * for this process meanwhile (its provider applies operations in the target's progress)
 * is served a pause later at most. NOTES.txt 2c.
 *
 * @retval the completions read (0 when skipped)
 */
int mca_btl_ofi_progress_beside(mca_btl_ofi_module_t *module);

/**
 * Progress of the network module and its node-local one (module->local) in one pass: the
 * node-local CQ first (local_too), read at every call and timed, then the network CQ
 * (network_too) as mca_btl_ofi_progress_beside does, but left unread for the longest pause
 * while the node-local domain is at work (operations of this process's own in flight on
 * it, or a read of it lately that served an on-node peer: it cost several times a quiet
 * one). NOTES.txt 2c.
 *
 * @retval the completions read on both
 */
int mca_btl_ofi_progress_with_local(mca_btl_ofi_module_t *module, bool local_too,
                                    bool network_too);

/**
 * Progress of a further NIC (module->front's nics): its CQ is read at every pass while it
 * has parts of a striped transfer in flight, else at the pace of mca_btl_ofi_progress_beside
 * (its only traffic is such parts, which are large: a pause more does not show, and the
 * system call of each read stays out of small operations' latency).
 *
 * @retval the completions read (0 when skipped)
 */
int mca_btl_ofi_progress_nic(mca_btl_ofi_module_t *module);

/**
 * One pass over every module of a family (front, the module Open MPI sees, and the
 * modules beside it) but except: the front through mca_btl_ofi_progress_beside.
 *
 * @retval the completions read
 */
int mca_btl_ofi_progress_family(mca_btl_ofi_module_t *front, const mca_btl_ofi_module_t *except);

/**
 * Park an operation whose next post met -FI_EAGAIN inside progress; the next
 * progress call runs repost(module, op).
 */
void mca_btl_ofi_defer(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                       mca_btl_ofi_op_repost_fn_t repost);

/** Free-list item initializer of operations: where their words live (ctx: the module). */
int mca_btl_ofi_op_words_init(opal_free_list_item_t *item, void *ctx);

/** Slow path of mca_btl_ofi_op_desc: register op's buffer for this operation. */
bool mca_btl_ofi_op_transient_desc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                   void *address, size_t size, void **desc);

/**
 * The descriptor for an operation's local buffer [address, address + size):
 * the one of op->local_handle; without a handle NULL, or under FI_MR_LOCAL a
 * registration made for this operation (op->transient, closed when the
 * operation is released).
 *
 * @retval true with *desc set; false if registering failed, and then op has
 *         been released
 */
static inline bool mca_btl_ofi_op_desc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                       void *address, size_t size, void **desc)
{
    if (OPAL_LIKELY(NULL != op->local_handle)) {
        const mca_btl_ofi_reg_t *reg = container_of(op->local_handle, mca_btl_ofi_reg_t, handle);

        /* a module beside the one Open MPI sees is handed that one's handles: its own
         * registration of the memory is in their slot, where there is one */
        if (OPAL_UNLIKELY(NULL != module->front)) {
            reg = reg->rail_reg[module->slot - 1];
        }
        if (OPAL_LIKELY(NULL != reg)) {
            *desc = reg->desc;
            return true;
        }
    }
    *desc = NULL;
    if (OPAL_LIKELY(!module->mr_local || 0 == size)) {
        return true;
    }
    return mca_btl_ofi_op_transient_desc(module, op, address, size, desc);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_OPS_H */
