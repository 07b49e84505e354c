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
#include "btl_ofi_wake.h"

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

mca_btl_ofi_op_t *mca_btl_ofi_op_alloc(mca_btl_ofi_module_t *module,
                                       mca_btl_ofi_op_complete_fn_t complete,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       void *local_address,
                                       struct mca_btl_base_registration_handle_t *local_handle,
                                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                       void *cbdata)
{
    mca_btl_ofi_op_t *op;

    op = (mca_btl_ofi_op_t *)opal_free_list_get(&module->ops);
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
    if (module->watch) {
        mca_btl_ofi_fault_list(module, op);
    }
    atomic_fetch_add(&module->outstanding, 1);
    return op;
}

void mca_btl_ofi_op_release(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op)
{
    if (OPAL_UNLIKELY(NULL != op->transient)) {
        if (op->transient->cached) {
            mca_btl_ofi_rcache_put(module, op->transient);
        } else {
            mca_btl_ofi_reg_destroy(op->transient);
        }
        op->transient = NULL;
    }
    if (OPAL_UNLIKELY(NULL != op->in_flight)) {
        atomic_fetch_sub(op->in_flight, 1);
    }
    if (op->listed) {
        mca_btl_ofi_fault_unlist(module, op);
    }
    opal_free_list_return(&module->ops, &op->super);
    atomic_fetch_sub(&module->outstanding, 1);
}

int mca_btl_ofi_post_result(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, ssize_t rc,
                            const char *what)
{
    if (OPAL_LIKELY(0 == rc)) {
        return OPAL_SUCCESS;
    }
    mca_btl_ofi_op_release(module, op);
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_POST_EAGAIN, 1);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "%s failed: %s (%zd)", what,
                        fi_strerror((int)-rc), rc);
    return OPAL_ERROR;
}

void mca_btl_ofi_op_finish(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, int status)
{
    if (NULL != op->cbfunc) {
        op->cbfunc(mca_btl_ofi_module_seen(module), op->endpoint, op->local_address,
                   op->local_handle, op->cbcontext, op->cbdata, status);
    }
    mca_btl_ofi_op_release(module, op);
}

/* Report a failed operation once per process with libfabric's own words. */
static void mca_btl_ofi_cq_error(mca_btl_ofi_module_t *module)
{
    static atomic_bool shown = false;
    struct fi_cq_err_entry err;
    char provider_text[256];
    const char *text;
    ssize_t rc;

    memset(&err, 0, sizeof(err));
    rc = fi_cq_readerr(module->cq, &err, 0);
    if (rc < 0) {
        return;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_ERRORS, 1);
    text = fi_cq_strerror(module->cq, err.prov_errno, err.err_data, provider_text,
                          sizeof(provider_text));
    opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "operation failed: %s (%s)",
                        fi_strerror(err.err), text ? text : "");
    if (!atomic_exchange(&shown, true)) {
        char error[160];
        snprintf(error, sizeof(error), "%s (%d)", fi_strerror(err.err), err.err);
        mca_btl_ofi_report_now("cq-error", module->info->fabric_attr->prov_name, error,
                               text ? text : "(none)", NULL);
    }
    if (NULL != err.op_context) {
        mca_btl_ofi_op_t *op = container_of(err.op_context, mca_btl_ofi_op_t, fi_ctx);
        mca_btl_ofi_op_complete(module, op, OPAL_ERROR);
    }
}

void mca_btl_ofi_defer(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                       mca_btl_ofi_op_repost_fn_t repost)
{
    op->repost = repost;
    OPAL_THREAD_LOCK(&module->deferred_lock);
    opal_list_append(&module->deferred, &op->super.super);
    OPAL_THREAD_UNLOCK(&module->deferred_lock);
}

/* Operations whose post met -FI_EAGAIN inside progress are posted again here. */
static void mca_btl_ofi_repost_deferred(mca_btl_ofi_module_t *module)
{
    opal_list_t ready;

    if (opal_list_is_empty(&module->deferred)) {
        return;
    }
    OBJ_CONSTRUCT(&ready, opal_list_t);
    mca_btl_ofi_list_take(&ready, &module->deferred, &module->deferred_lock);

    for (opal_list_item_t *item; NULL != (item = opal_list_remove_first(&ready));) {
        mca_btl_ofi_op_t *op = (mca_btl_ofi_op_t *)item;

        op->repost(module, op);
    }
    OBJ_DESTRUCT(&ready);
}

int mca_btl_ofi_progress_module(mca_btl_ofi_module_t *module)
{
    struct fi_cq_entry entries[MCA_BTL_OFI_MAX_CQ_BATCH];
    ssize_t count;

    if (OPAL_UNLIKELY(atomic_load_explicit(&module->failed, memory_order_relaxed))) {
        return 0;
    }
    mca_btl_ofi_repost_deferred(module);
    if (NULL != module->msg_progress) {
        module->msg_progress(module);
    }
    if (NULL != module->co_progress) {
        module->co_progress(module);
    }

    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_POLLS, 1);
    count = fi_cq_read(module->cq, entries, (size_t)mca_btl_ofi_params.progress_batch);
    if (count > 0) {
        module->stall_since = 0;
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_ENTRIES, (uint64_t)count);
        /* out of the CQ: no longer held against the room for new operations, while their
         * handlers run one after another (mca_btl_ofi_op_room) */
        atomic_fetch_add(&module->reaped, (int_fast64_t)count);
        for (ssize_t i = 0; i < count; ++i) {
            mca_btl_ofi_op_t *op = container_of(entries[i].op_context, mca_btl_ofi_op_t, fi_ctx);
            mca_btl_ofi_op_complete(module, op, OPAL_SUCCESS);
            atomic_fetch_sub(&module->reaped, 1);
        }
        return (int)count;
    }
    if (-FI_EAVAIL == count) {
        module->stall_since = 0;
        mca_btl_ofi_cq_error(module);
        return 1;
    }
    if (-FI_EAGAIN == count) {
        if (module->watch) {
            /* nothing came: a wait that lasts is looked into (btl_ofi_fault.c) */
            mca_btl_ofi_fault_empty_read(module);
        }
    } else {
        opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "fi_cq_read failed: %s",
                            fi_strerror((int)-count));
    }
    return 0;
}

/* An idle network module's CQ beside others (nothing of this process's own in flight on it)
 * is left unread for btl_ofi_idle_poll_ratio times what a quiet read of it costs, so those
 * reads take at most 1/(ratio + 1) of a loop that waits, whatever one costs (a poll system
 * call on tcp, a memory read on a NIC). A peer's operation that waits for this process's
 * progress (tcp;ofi_rxm applies them at the target, and says nothing to it) makes the read
 * that serves it cost MCA_BTL_OFI_IDLE_READ_BUSY times a quiet one or more (it receives
 * and answers): every pass reads it then, until MCA_BTL_OFI_IDLE_READ_EAGER quiet reads'
 * time goes by with nothing more. What a quiet read costs is the least a read cost lately:
 * a cheaper read lowers it at once, a dearer one raises it by 1/256, so the reads that
 * serve peers do not count as quiet while they come among quiet ones, and a cost that has
 * grown for good is learnt within some hundred reads. MCA_BTL_OFI_IDLE_READ_MAX_NS bounds
 * that pause. While the node-local domain is at work (operations of this process's own in
 * flight on it, or a read of it that served an on-node peer within
 * MCA_BTL_OFI_IDLE_READ_EAGER of its quiet reads' time, told the same way) the pause is
 * btl_ofi_local_busy_poll_us instead (default 20 us): an on-node operation takes a
 * microsecond or so, and a network read in its wait, on either side, costs it more than
 * the read's own time. The clock is read at every pass that may skip
 * (CLOCK_MONOTONIC, vDSO: tens of ns), so a process that calls progress seldom reads the
 * CQ at each call. NOTES.txt 2c. */
#define MCA_BTL_OFI_IDLE_READ_BUSY 3
#define MCA_BTL_OFI_IDLE_READ_EAGER 64
#define MCA_BTL_OFI_IDLE_READ_MAX_NS 20000u

/* A read of module's CQ that took cost ns, and moved (returned something, or left
 * operations of its own in flight): learns what a quiet read costs, and keeps every pass
 * reading it (eager_until) after one that moved or served a peer. @return whether it served
 * a peer (told by its cost) */
static bool mca_btl_ofi_read_cost(mca_btl_ofi_module_t *module, uint64_t after, uint64_t cost,
                                  bool moved)
{
    uint64_t quiet = module->idle_read_ns;
    bool served = false;

    if (!moved) {
        module->idle_read_ns = 0 == quiet || cost < quiet ? (0 != cost ? cost : 1)
                                                          : quiet + quiet / 256 + 1;
        served = 0 != quiet && cost >= MCA_BTL_OFI_IDLE_READ_BUSY * quiet;
    }
    if (moved || served) {
        module->eager_until = after + MCA_BTL_OFI_IDLE_READ_EAGER * quiet;
    }
    return served;
}

/* Reading module's CQ now, or (paced) at the pace above while nothing of its own is in
 * flight or waits to be posted; now: the clock read just before (0: read it here). */
static int mca_btl_ofi_progress_every(mca_btl_ofi_module_t *module, bool paced, uint64_t now)
{
    mca_btl_ofi_module_t *local = module->local;
    uint64_t before, after, pause;
    bool moved, woken = false;
    int events;

    if (!paced || 0 == mca_btl_ofi_params.idle_poll_ratio || mca_btl_ofi_module_busy(module)) {
        return mca_btl_ofi_progress_module(module);
    }
    if (MCA_BTL_OFI_WAKE_ARMED == __atomic_load_n(&module->wake_state, __ATOMIC_ACQUIRE)) {
        /* left unread while its poll is pending (btl_ofi_wake.h): a look at the ring at each
         * call (read at once where it fired), at the clock once in
         * MCA_BTL_OFI_WAKE_SAFETY_PASSES of them */
        if (mca_btl_ofi_wake_fired(module)) {
            woken = true;
        } else if (++module->wake_passes < MCA_BTL_OFI_WAKE_SAFETY_PASSES) {
            return 0;
        } else {
            module->wake_passes = 0;
            before = 0 != now ? now : mca_btl_ofi_now_ns();
            if (before < module->wake_safety_next) {
                return 0;
            }
            /* read all the same; the poll stays pending, the module armed */
            module->wake_safety_next = before + MCA_BTL_OFI_WAKE_SAFETY_NS;
            return mca_btl_ofi_progress_module(module);
        }
    }
    before = 0 != now ? now : mca_btl_ofi_now_ns();
    if (!woken && before < module->idle_read_next && before >= module->eager_until) {
        return 0;
    }
    events = mca_btl_ofi_progress_module(module);
    if (woken) {
        /* the peer served first, the poll's completion taken after */
        mca_btl_ofi_wake_settle(module);
    }
    after = mca_btl_ofi_now_ns();
    moved = 0 != events || mca_btl_ofi_module_busy(module);
    if (mca_btl_ofi_read_cost(module, after, after - before, moved)) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_SERVING, 1);
    }
    if (moved) {
        module->wake_quiet = 0;
    } else if (module->wake_quiet < MCA_BTL_OFI_WAKE_QUIET_READS) {
        ++module->wake_quiet;
    }
    if (after < module->eager_until || (module->wake_quiet >= MCA_BTL_OFI_WAKE_QUIET_READS &&
                                        mca_btl_ofi_wake_arm(module, after))) {
        return events;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_PAUSES, 1);
    pause = (uint64_t)mca_btl_ofi_params.idle_poll_ratio * module->idle_read_ns;
    if (pause > MCA_BTL_OFI_IDLE_READ_MAX_NS) {
        pause = MCA_BTL_OFI_IDLE_READ_MAX_NS;
    }
    if (NULL != local && 0 != mca_btl_ofi_params.local_busy_poll_us &&
        (after < local->eager_until || mca_btl_ofi_module_busy(local))) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_LONG_PAUSES, 1);
        pause = (uint64_t)mca_btl_ofi_params.local_busy_poll_us * 1000u;
    }
    module->idle_read_next = after + pause;
    return events;
}

int mca_btl_ofi_progress_beside(mca_btl_ofi_module_t *module)
{
    return mca_btl_ofi_progress_every(module, NULL != module->local, 0);
}

int mca_btl_ofi_progress_with_local(mca_btl_ofi_module_t *module, bool local_too,
                                    bool network_too)
{
    mca_btl_ofi_module_t *local = module->local;
    uint64_t before, after = 0;
    int events = 0;

    if (local_too && (0 == mca_btl_ofi_params.idle_poll_ratio ||
                      MCA_BTL_OFI_WAKE_ARMED ==
                          __atomic_load_n(&module->wake_state, __ATOMIC_RELAXED))) {
        /* read at every pass; untimed where nothing is paced, or where the network CQ is
         * left to its io_uring poll (no pause to choose by how busy this domain is) */
        events = mca_btl_ofi_progress_module(local);
    } else if (local_too) {
        before = mca_btl_ofi_now_ns();
        events = mca_btl_ofi_progress_module(local);
        after = mca_btl_ofi_now_ns();
        (void)mca_btl_ofi_read_cost(local, after, after - before,
                                    0 != events || mca_btl_ofi_module_busy(local));
    }
    if (network_too) {
        events += mca_btl_ofi_progress_every(module, true, after);
    }
    return events;
}

int mca_btl_ofi_progress_nic(mca_btl_ofi_module_t *module)
{
    return mca_btl_ofi_progress_every(module, true, 0);
}

int mca_btl_ofi_progress_family(mca_btl_ofi_module_t *front, const mca_btl_ofi_module_t *except)
{
    int events = 0;

    if (front != except && front->initialized) {
        events += mca_btl_ofi_progress_beside(front);
    }
    if (NULL != front->local && front->local != except && front->local->initialized) {
        events += mca_btl_ofi_progress_module(front->local);
    }
    for (int i = 0; i < front->nic_count; ++i) {
        if (front->nics[i] != except && front->nics[i]->initialized) {
            events += mca_btl_ofi_progress_nic(front->nics[i]);
        }
    }
    return events;
}

int mca_btl_ofi_progress_wait(mca_btl_ofi_module_t *module)
{
    int events = mca_btl_ofi_progress_module(module);

    /* With several domains, a peer this process waits for may itself wait for this
     * process's progress on another one (shm and tcp both apply at the target): serve all. */
    if (NULL != module->front || NULL != module->local || 0 != module->nic_count) {
        events += mca_btl_ofi_progress_family(module->front ? module->front : module, module);
    }

    if (0 == events && opal_progress_yield_when_idle) {
        sched_yield();
    }
    return events;
}

/* ---- the words and local descriptors of an operation -------------------- */

int mca_btl_ofi_op_words_init(opal_free_list_item_t *item, void *ctx)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)ctx;
    mca_btl_ofi_op_t *op = (mca_btl_ofi_op_t *)item;

    op->transient = NULL;
    op->listed = false;
    op->words = &op->inline_words;
    op->words_desc = NULL;
    if (!module->mr_local) {
        return OPAL_SUCCESS;
    }
    return mca_btl_ofi_word_slot(module, &op->words, &op->words_desc);
}

bool mca_btl_ofi_op_transient_desc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                   void *address, size_t size, void **desc)
{
    op->transient = mca_btl_ofi_rcache_on(module) && 0 != size
                        ? mca_btl_ofi_rcache_get(module, address, size)
                        : mca_btl_ofi_reg_create(module, address, size);
    if (NULL == op->transient) {
        mca_btl_ofi_op_release(module, op);
        return false;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_TRANSIENT_REGS, 1);
    *desc = op->transient->desc;
    return true;
}
