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

#include "btl_ofi_op.h"

#include "opal/class/opal_free_list.h"

#include "btl_ofi_fault.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"

BEGIN_C_DECLS

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
 * what the CQ holds beside the posted receives (rail->op_limit). The other half is for
 * what those operations post on their own (proof reads, compare-and-swap steps, message
 * sends and the answers owed to peers), which never wait for room, so that two ranks
 * each at the limit can still answer each other. false: OPAL_ERR_OUT_OF_RESOURCE, try
 * again (osc/rdma progresses and retries).
 *
 * Operations whose completions a progress call has read and not yet handled count too
 * (they no longer hold a CQ entry: counting them errs on the safe side). A completion
 * callback that starts an operation and, refused, calls opal_progress until it may
 * (osc/rdma does) gets room from that progress: a progress call on a rail first handles
 * what an outer one on the same thread read from it (btl_ofi_ops.c).
 */
static inline bool mca_btl_ofi_op_room(const mca_btl_ofi_rail_t *rail)
{
    return 0 == rail->op_limit ||
           atomic_load_explicit(&rail->outstanding, memory_order_relaxed) < rail->op_limit;
}

/* The outstanding count: a locked instruction only where threads may share the rail
 * (opal_using_threads(), MPI_THREAD_MULTIPLE), as Open MPI's OPAL_THREAD_ADD_FETCH does; one
 * thread at a time (MPI's other levels) needs none, and one operation costs two fewer. */
static inline void mca_btl_ofi_outstanding_add(mca_btl_ofi_rail_t *rail, int64_t n)
{
    if (opal_using_threads()) {
        atomic_fetch_add(&rail->outstanding, n);
    } else {
        atomic_store_explicit(&rail->outstanding,
                              atomic_load_explicit(&rail->outstanding, memory_order_relaxed) + n,
                              memory_order_relaxed);
    }
}

/**
 * Take an operation context and count it as outstanding. Inline: every put, get and
 * atomic takes one.
 *
 * @param complete (IN) what progress runs when its completion arrives
 * @retval the context, or NULL when the free list is exhausted
 */
static inline __opal_attribute_always_inline__ mca_btl_ofi_op_t *
mca_btl_ofi_op_alloc(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_complete_fn_t complete,
                     struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_op_t *op = (mca_btl_ofi_op_t *)opal_free_list_get(&rail->ops);

    if (OPAL_UNLIKELY(NULL == op)) {
        return NULL;
    }
    op->complete = complete;
    op->endpoint = endpoint;
    op->local_address = local_address;
    op->local_handle = local_handle;
    op->cbfunc = cbfunc;
    op->cbcontext = cbcontext;
    op->cbdata = cbdata;
    op->words->fetched = 0;
    op->transient = NULL;
    op->parent = NULL;
    op->in_flight = NULL;
    op->awaited = NULL;
    if (OPAL_UNLIKELY(rail->watch)) {
        mca_btl_ofi_fault_list(rail, op);
    }
    mca_btl_ofi_outstanding_add(rail, 1);
    return op;
}

/** Return an operation context that will not complete and uncount it. */
void mca_btl_ofi_op_release(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op);

/** The plain completion handler: run the caller's callback, release the operation. */
void mca_btl_ofi_op_finish(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status);

/** mca_btl_ofi_post_result's path for a post that failed (rc != 0): out of line. */
int mca_btl_ofi_post_refused(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, ssize_t rc,
                             const char *what);

/**
 * Turn a libfabric posting result into the BTL return contract, releasing
 * the operation when it was not posted.
 *
 * @retval OPAL_SUCCESS (queued), OPAL_ERR_OUT_OF_RESOURCE (-FI_EAGAIN: try again),
 *         OPAL_ERROR (the provider refused the operation)
 */
static inline int mca_btl_ofi_post_result(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                                          ssize_t rc, const char *what)
{
    return OPAL_LIKELY(0 == rc) ? OPAL_SUCCESS : mca_btl_ofi_post_refused(rail, op, rc, what);
}

/** Read up to one batch of CQ entries and run their completion handlers. Nothing on a
 *  rail whose NIC failed (btl_ofi_fault.c). */
int mca_btl_ofi_rail_progress(mca_btl_ofi_rail_t *rail);

/**
 * One pass of progress for a caller that waits inside btl-ofi (flush, a post
 * that met -FI_EAGAIN, finalize's drain): as opal_progress does, a pass that
 * found nothing yields the CPU when Open MPI asks for it (mpi_yield_when_idle,
 * on by default when the node is oversubscribed). On shm an operation
 * completes only when its target progresses, and an oversubscribed target
 * gets the CPU only when the waiters give it up (osc_harness/PERFORMANCE.md,
 * window rounds). @return what mca_btl_ofi_rail_progress returned
 */
int mca_btl_ofi_progress_wait(mca_btl_ofi_rail_t *rail);

/**
 * A fetching atomic waited for inside its call. osc/rdma waits for every fetching atomic
 * right after posting it, through opal_progress, whose passes also run every other
 * component's progress and, once btl/tcp holds a connection, poll Open MPI's event library;
 * reading the rails here instead takes those out of the round trip. The callback then runs
 * before the call returns, as btl/vader's and btl/uct's can. Only where one thread at a time
 * calls (not under opal_using_threads()), and for a bounded time, after which the operation
 * completes through progress as any other.
 */
typedef struct mca_btl_ofi_await_t {
    bool done;            /**< the operation finished */
    mca_btl_ofi_op_t *op; /**< the operation, once marked; NULL: not waited for */
} mca_btl_ofi_await_t;

/** Mark op, taken and not yet posted, as waited for by await (NULL: it is not). */
static inline void mca_btl_ofi_await_mark(mca_btl_ofi_await_t *await, mca_btl_ofi_op_t *op)
{
    if (NULL != await && !opal_using_threads()) {
        await->op = op;
        op->awaited = &await->done;
    }
}

/** Wait for await's operation, posted with result posted. @return posted */
int mca_btl_ofi_op_await(mca_btl_ofi_rail_t *rail, mca_btl_ofi_await_t *await, int posted);

/**
 * Park an operation whose next post met -FI_EAGAIN inside progress; the next
 * progress call runs repost(rail, op).
 */
void mca_btl_ofi_defer(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                       mca_btl_ofi_op_repost_fn_t repost);

/** Free-list item initializer of operations: where their words live (ctx: the rail). */
int mca_btl_ofi_op_words_init(opal_free_list_item_t *item, void *ctx);

/** Slow path of mca_btl_ofi_op_desc: register op's buffer for this operation. */
bool mca_btl_ofi_op_transient_desc(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, void *address,
                                   size_t size, void **desc);

/**
 * The descriptor for an operation's local buffer [address, address + size):
 * the one of op->local_handle; without a handle NULL, or under FI_MR_LOCAL a
 * registration made for this operation (op->transient, closed when the
 * operation is released).
 *
 * @retval true with *desc set; false if registering failed, and then op has
 *         been released
 */
static inline bool mca_btl_ofi_op_desc(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                                       void *address, size_t size, void **desc)
{
    if (OPAL_LIKELY(NULL != op->local_handle)) {
        /* every rail is handed the network rail's handles: its own registration of the
         * memory is in its slot, where there is one */
        const mca_btl_ofi_reg_t *reg =
            container_of(op->local_handle, mca_btl_ofi_reg_t, handle)->by_rail[rail->config.index];

        if (OPAL_LIKELY(NULL != reg)) {
            *desc = reg->desc;
            return true;
        }
    }
    *desc = NULL;
    if (OPAL_LIKELY(!rail->mr_local || 0 == size)) {
        return true;
    }
    return mca_btl_ofi_op_transient_desc(rail, op, address, size, desc);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_OPS_H */
