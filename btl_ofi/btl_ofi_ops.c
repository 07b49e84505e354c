/*
 * btl-ofi operations and progress: operation contexts, the outstanding
 * count, the posting contract and the one progress function that reads the
 * completion queue in batches and runs each operation's completion handler.
 */

#include "btl_ofi_ops.h"

#include <sched.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"

#include "btl_ofi_fault.h"
#include "btl_ofi_rcache.h"
#include "btl_ofi_report.h"

OBJ_CLASS_INSTANCE(mca_btl_ofi_op_t, opal_free_list_item_t, NULL, NULL);

/* One shared ticket counter: injection is deterministic for a given sequence of calls. */
static atomic_uint_fast64_t mca_btl_ofi_inject_ticket;

static uint64_t mca_btl_ofi_ticket(void)
{
    return atomic_fetch_add_explicit(&mca_btl_ofi_inject_ticket, 1, memory_order_relaxed);
}

bool mca_btl_ofi_inject_eagain_slow(void)
{
    int permille = mca_btl_ofi_params.debug_inject_eagain_permille;

    /* Knuth's multiplicative hash spreads consecutive tickets over 0..999. */
    if ((mca_btl_ofi_ticket() * UINT64_C(2654435761)) % 1000 < (uint64_t)permille) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_INJECTED, 1);
        return true;
    }
    return false;
}

uint64_t mca_btl_ofi_inject_key_slow(uint64_t key)
{
    int every = mca_btl_ofi_params.debug_inject_cq_error_every;

    if (0 != (mca_btl_ofi_ticket() + 1) % (uint64_t)every) {
        return key;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_INJECTED, 1);
    return key ^ UINT64_C(0x5a5a5a5a00000000) ^ UINT64_C(0x2a);
}

bool mca_btl_ofi_inject_stale_slow(void)
{
    if (0 != (mca_btl_ofi_ticket() + 1) % (uint64_t)mca_btl_ofi_params.inject_stale_every) {
        return false;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_INJECTED, 1);
    return true;
}

#if MCA_BTL_OFI_INJECT_CHECK == 2
/* The checks as one call per operation each (measurement build, see btl_ofi_ops.h). */
__attribute__((noinline)) bool mca_btl_ofi_inject_eagain_call(void)
{
    return mca_btl_ofi_inject_eagain_check();
}

__attribute__((noinline)) uint64_t mca_btl_ofi_inject_key_call(uint64_t key)
{
    return mca_btl_ofi_inject_key_check(key);
}

__attribute__((noinline)) bool mca_btl_ofi_inject_stale_call(void)
{
    return mca_btl_ofi_inject_stale_check();
}
#endif

/* mca_btl_ofi_op_release, inlined where every completion passes (mca_btl_ofi_op_finish). */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_op_put_back(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    if (OPAL_UNLIKELY(NULL != op->transient)) {
        if (op->transient->cached) {
            mca_btl_ofi_rcache_put(rail, op->transient);
        } else {
            mca_btl_ofi_reg_destroy(op->transient);
        }
        op->transient = NULL;
    }
    if (OPAL_UNLIKELY(NULL != op->in_flight)) {
        atomic_fetch_sub(op->in_flight, 1);
    }
    if (OPAL_UNLIKELY(op->listed)) {
        mca_btl_ofi_fault_unlist(rail, op);
    }
    opal_free_list_return(&rail->ops, &op->super);
    mca_btl_ofi_outstanding_add(rail, -1);
}

void mca_btl_ofi_op_release(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    mca_btl_ofi_op_put_back(rail, op);
}

int mca_btl_ofi_post_refused(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, ssize_t rc,
                             const char *what)
{
    mca_btl_ofi_op_release(rail, op);
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_POST_EAGAIN, 1);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "%s failed: %s (%zd)", what,
                        fi_strerror((int)-rc), rc);
    return OPAL_ERROR;
}

void mca_btl_ofi_op_finish(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status)
{
    if (OPAL_UNLIKELY(NULL != op->awaited)) {
        *op->awaited = true;
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_ATOMICS_AWAITED, 1);
    }
    if (NULL != op->cbfunc) {
        op->cbfunc(rail->config.hooks.btl, op->endpoint, op->local_address, op->local_handle,
                   op->cbcontext, op->cbdata, status);
    }
    mca_btl_ofi_op_put_back(rail, op);
}

/* Report a failed operation once per process with libfabric's own words. */
static void mca_btl_ofi_cq_error(mca_btl_ofi_rail_t *rail)
{
    static atomic_bool shown = false;
    struct fi_cq_err_entry err;
    char provider_text[256];
    const char *text;
    ssize_t rc;

    memset(&err, 0, sizeof(err));
    rc = fi_cq_readerr(rail->cq, &err, 0);
    if (rc < 0) {
        return;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_ERRORS, 1);
    text = fi_cq_strerror(rail->cq, err.prov_errno, err.err_data, provider_text,
                          sizeof(provider_text));
    opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "operation failed: %s (%s)",
                        fi_strerror(err.err), text ? text : "");
    if (!atomic_exchange(&shown, true)) {
        char error[160];
        snprintf(error, sizeof(error), "%s (%d)", fi_strerror(err.err), err.err);
        mca_btl_ofi_report_now("cq-error", rail->info->fabric_attr->prov_name, error,
                               text ? text : "(none)", NULL);
    }
    if (NULL != err.op_context) {
        mca_btl_ofi_op_t *op = container_of(err.op_context, mca_btl_ofi_op_t, fi_ctx);
        mca_btl_ofi_op_complete(rail, op, OPAL_ERROR);
    }
}

void mca_btl_ofi_defer(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                       mca_btl_ofi_op_repost_fn_t repost)
{
    op->repost = repost;
    OPAL_THREAD_LOCK(&rail->deferred_lock);
    opal_list_append(&rail->deferred, &op->super.super);
    OPAL_THREAD_UNLOCK(&rail->deferred_lock);
    mca_btl_ofi_rail_pass_wants(rail, MCA_BTL_OFI_PASS_DEFERRED);
}

/* Operations whose post met -FI_EAGAIN inside progress are posted again here. */
static void mca_btl_ofi_repost_deferred(mca_btl_ofi_rail_t *rail)
{
    opal_list_t ready;

    OBJ_CONSTRUCT(&ready, opal_list_t);
    mca_btl_ofi_list_take(&ready, &rail->deferred, &rail->deferred_lock);

    for (opal_list_item_t *item; NULL != (item = opal_list_remove_first(&ready));) {
        mca_btl_ofi_op_t *op = (mca_btl_ofi_op_t *)item;

        op->repost(rail, op);
    }
    OBJ_DESTRUCT(&ready);
}

/*
 * Completions a progress call on this thread has read and whose handlers run: a batch per
 * call, innermost first. A handler may start an operation and, refused for want of room, spin
 * in opal_progress (osc/rdma's accumulate and compare-and-swap paths do) while the rest of its
 * batch waits behind it; those completions hold the room shut, and only handling them opens it.
 * So a progress call on a rail first handles what an outer call on this thread read from that
 * rail and has not handled yet. No locked instruction: a thread's batches are its own.
 */
typedef struct mca_btl_ofi_batch_t {
    mca_btl_ofi_rail_t *rail;
    struct fi_cq_entry *entries;
    ssize_t next, count;
    struct mca_btl_ofi_batch_t *outer;
} mca_btl_ofi_batch_t;

static __thread mca_btl_ofi_batch_t *mca_btl_ofi_batches __attribute__((tls_model("initial-exec")));

/* Handle what is left of batch, in order. @return how many were handled */
static int mca_btl_ofi_batch_handle(mca_btl_ofi_batch_t *batch)
{
    int handled = 0;

    while (batch->next < batch->count) {
        struct fi_cq_entry *entry = &batch->entries[batch->next++];

        mca_btl_ofi_op_complete(
            batch->rail, container_of(entry->op_context, mca_btl_ofi_op_t, fi_ctx), OPAL_SUCCESS);
        ++handled;
    }
    return handled;
}

/* What outer calls on this thread read from rail and have not handled, handled now. */
static int mca_btl_ofi_batch_outer(mca_btl_ofi_rail_t *rail)
{
    int handled = 0;

    for (mca_btl_ofi_batch_t *b = mca_btl_ofi_batches; NULL != b; b = b->outer) {
        if (b->rail == rail) {
            handled += mca_btl_ofi_batch_handle(b);
        }
    }
    return handled;
}

/* What the pass has to do before it reads the CQ (rail->pass_work), taken: work listed
 * from now on is for the next pass. */
static void mca_btl_ofi_pass_work(mca_btl_ofi_rail_t *rail)
{
    unsigned work = atomic_exchange(&rail->pass_work, 0u);

    if (work & MCA_BTL_OFI_PASS_DEFERRED) {
        mca_btl_ofi_repost_deferred(rail);
    }
    if ((work & MCA_BTL_OFI_PASS_MSG) && NULL != rail->msg_progress) {
        rail->msg_progress(rail);
    }
    if ((work & MCA_BTL_OFI_PASS_CO) && NULL != rail->co_progress) {
        rail->co_progress(rail);
    }
}

/* An empty read, or an error: what it means. */
static int mca_btl_ofi_cq_nothing(mca_btl_ofi_rail_t *rail, ssize_t count)
{
    if (-FI_EAVAIL == count) {
        rail->stall_since = 0;
        mca_btl_ofi_cq_error(rail);
        return 1;
    }
    if (-FI_EAGAIN == count) {
        if (rail->watch) {
            /* nothing came: a wait that lasts is looked into (btl_ofi_fault.c) */
            mca_btl_ofi_fault_empty_read(rail);
        }
    } else {
        opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "fi_cq_read failed: %s",
                            fi_strerror((int)-count));
    }
    return 0;
}

int mca_btl_ofi_rail_progress(mca_btl_ofi_rail_t *rail)
{
    struct fi_cq_entry entries[MCA_BTL_OFI_MAX_CQ_BATCH];
    mca_btl_ofi_batch_t batch;
    int handled;

    if (OPAL_UNLIKELY(atomic_load_explicit(&rail->failed, memory_order_relaxed))) {
        return 0;
    }
    if (OPAL_UNLIKELY(NULL != mca_btl_ofi_batches) &&
        0 != (handled = mca_btl_ofi_batch_outer(rail))) {
        return handled;
    }
    if (OPAL_UNLIKELY(0 != atomic_load_explicit(&rail->pass_work, memory_order_relaxed))) {
        mca_btl_ofi_pass_work(rail);
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_POLLS, 1);
    batch.count = fi_cq_read(rail->cq, entries, (size_t)mca_btl_ofi_params.progress_batch);
    if (batch.count <= 0) {
        return mca_btl_ofi_cq_nothing(rail, batch.count);
    }
    rail->stall_since = 0;
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_ENTRIES, (uint64_t)batch.count);
    batch.rail = rail;
    batch.entries = entries;
    batch.next = 0;
    batch.outer = mca_btl_ofi_batches;
    mca_btl_ofi_batches = &batch;
    (void)mca_btl_ofi_batch_handle(&batch);
    mca_btl_ofi_batches = batch.outer;
    return (int)batch.count;
}

int mca_btl_ofi_progress_wait(mca_btl_ofi_rail_t *rail)
{
    const mca_btl_ofi_rail_hooks_t *hooks = &rail->config.hooks;
    int events = mca_btl_ofi_rail_progress(rail);

    /* With several rails, a peer this process waits for may itself wait for this
     * process's progress on another one (shm and tcp both apply at the target): serve all. */
    if (NULL != hooks->progress_others) {
        events += hooks->progress_others(hooks->owner, rail);
    }

    if (0 == events && opal_progress_yield_when_idle) {
        sched_yield();
    }
    return events;
}

/* How long a fetching atomic is waited for inside its call (mca_btl_ofi_await_t): far above a
 * network round trip (shm 0.5 us, tcp 15-60 us), below a scheduler's time slice. The clock is
 * first read after 64 passes and then once in 64, so an atomic that completes sooner never
 * reads it, and the wait lasts at most 64 passes + MCA_BTL_OFI_AWAIT_NS. */
#define MCA_BTL_OFI_AWAIT_NS 200000u
#define MCA_BTL_OFI_AWAIT_CLOCK_PASSES 64

int mca_btl_ofi_op_await(mca_btl_ofi_rail_t *rail, mca_btl_ofi_await_t *await, int posted)
{
    uint64_t until = 0;
    unsigned passes = 0;

    if (OPAL_SUCCESS != posted || NULL == await->op) {
        return posted;
    }
    /* one thread: nothing but this loop's progress can finish the operation */
    while (!await->done) {
        (void)mca_btl_ofi_progress_wait(rail);
        if (!await->done && 0 == ++passes % MCA_BTL_OFI_AWAIT_CLOCK_PASSES) {
            uint64_t now = mca_btl_ofi_now_ns();

            if (0 == until) {
                until = now + MCA_BTL_OFI_AWAIT_NS;
            } else if (now >= until) {
                await->op->awaited = NULL;
                break;
            }
        }
    }
    return OPAL_SUCCESS;
}

/* ---- the words and local descriptors of an operation -------------------- */

int mca_btl_ofi_op_words_init(opal_free_list_item_t *item, void *ctx)
{
    mca_btl_ofi_rail_t *rail = (mca_btl_ofi_rail_t *)ctx;
    mca_btl_ofi_op_t *op = (mca_btl_ofi_op_t *)item;

    op->transient = NULL;
    op->listed = false;
    op->words = &op->inline_words;
    op->words_desc = NULL;
    if (!rail->mr_local) {
        return OPAL_SUCCESS;
    }
    return mca_btl_ofi_word_slot(rail, &op->words, &op->words_desc);
}

bool mca_btl_ofi_op_transient_desc(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, void *address,
                                   size_t size, void **desc)
{
    op->transient = mca_btl_ofi_rcache_on(rail) && 0 != size
                        ? mca_btl_ofi_rcache_get(rail, address, size)
                        : mca_btl_ofi_reg_create(rail, address, size);
    if (NULL == op->transient) {
        mca_btl_ofi_op_release(rail, op);
        return false;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_TRANSIENT_REGS, 1);
    *desc = op->transient->desc;
    return true;
}
