/*
 * btl-ofi RMA: put, get and flush.
 *
 * Completion semantics: with FI_DELIVERY_COMPLETE every completion means the
 * data is visible at the target, so flush only waits for the outstanding
 * count to drain. Without it (prove_remote), the provider's read-after-write
 * ordering (FI_ORDER_RMA_RAW / FI_ORDER_ATOMIC_RAW) makes a read complete
 * only after the earlier writes and atomics to that peer landed, so:
 *  - a put's callback runs only after a read of the peer's proof word,
 *    posted right behind the put, has completed as well: osc/rdma acts on
 *    put callbacks (it releases its accumulate lock there), and without
 *    this another rank could take the lock and read the old data;
 *  - flush does an atomic read (FI_ATOMIC_READ) of the proof word of every
 *    peer that non-fetching atomics went to since the last proof.
 * Atomics and gets sent as messages (btl_ofi_am.c) need no proof: their
 * callback runs on the target's answer. Proof reads need FI_READ, so a
 * provider without it is used only with delivery-complete (discovery).
 */

#include "btl_ofi_rdma.h"

#include "btl_ofi_am.h"
#include "btl_ofi_coalesce.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_locate.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_pvar.h"

static void mca_btl_ofi_put_proof_post(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *put);
static void mca_btl_ofi_put_part_done(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *put, int status);

typedef ssize_t (*mca_btl_ofi_rma_fn_t)(struct fid_ep *ep, void *buf, size_t len, void *desc,
                                        fi_addr_t addr, uint64_t remote, uint64_t key,
                                        void *context);

static ssize_t mca_btl_ofi_write(struct fid_ep *ep, void *buf, size_t len, void *desc,
                                 fi_addr_t addr, uint64_t remote, uint64_t key, void *context)
{
    return fi_write(ep, buf, len, desc, addr, remote, key, context);
}

static ssize_t mca_btl_ofi_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
                                fi_addr_t addr, uint64_t remote, uint64_t key, void *context)
{
    return fi_read(ep, buf, len, desc, addr, remote, key, context);
}

/* What differs between put and get. */
typedef struct mca_btl_ofi_rma_kind_t {
    mca_btl_ofi_rma_fn_t post;
    const char *name;
    enum mca_btl_ofi_counter_id_t ops_counter;
    /** ops_counter's share of the node-local domain */
    enum mca_btl_ofi_counter_id_t local_counter;
    enum mca_btl_ofi_counter_id_t bytes_counter;
    bool writes; /**< the target changes: flush may have to prove it */
} mca_btl_ofi_rma_kind_t;

static const mca_btl_ofi_rma_kind_t mca_btl_ofi_put_kind = {
    .post = mca_btl_ofi_write,
    .name = "fi_write",
    .ops_counter = MCA_BTL_OFI_CNT_PUTS,
    .local_counter = MCA_BTL_OFI_CNT_LOCAL_PUTS,
    .bytes_counter = MCA_BTL_OFI_CNT_PUT_BYTES,
    .writes = true,
};

static const mca_btl_ofi_rma_kind_t mca_btl_ofi_get_kind = {
    .post = mca_btl_ofi_read,
    .name = "fi_read",
    .ops_counter = MCA_BTL_OFI_CNT_GETS,
    .local_counter = MCA_BTL_OFI_CNT_LOCAL_GETS,
    .bytes_counter = MCA_BTL_OFI_CNT_GET_BYTES,
    .writes = false,
};

/* The context of a put or get, or NULL (no room, or none left: OUT_OF_RESOURCE). tracked: a
 * put that coalescing counts as in flight to its peer, released with the operation. */
static inline __opal_attribute_always_inline__ mca_btl_ofi_op_t *
mca_btl_ofi_rma_op(mca_btl_ofi_rail_t *rail, bool unproven, bool tracked,
                   struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                   struct mca_btl_base_registration_handle_t *local_handle,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_op_t *op = NULL;

    if (OPAL_LIKELY(mca_btl_ofi_op_room(rail))) {
        op =
            mca_btl_ofi_op_alloc(rail, unproven ? mca_btl_ofi_put_part_done : mca_btl_ofi_op_finish,
                                 endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
    }
    if (OPAL_UNLIKELY(NULL == op)) {
        if (tracked) {
            atomic_fetch_sub(&endpoint->co_in_flight, 1);
        }
        return NULL;
    }
    if (tracked) {
        op->in_flight = &endpoint->co_in_flight;
    }
    if (unproven) {
        /* not shared with progress before it is posted */
        atomic_store_explicit(&op->pending, 2, memory_order_relaxed);
        op->status = OPAL_SUCCESS;
    }
    return op;
}

/* Post a put or get whose context is taken; counted where it went out. */
static inline int mca_btl_ofi_rma_post(mca_btl_ofi_rail_t *rail, const mca_btl_ofi_rma_kind_t *kind,
                                       mca_btl_ofi_op_t *op, bool unproven, void *local_address,
                                       size_t size, const mca_btl_ofi_target_t *target,
                                       uint64_t key)
{
    ssize_t posted;
    void *desc;
    int rc;

    if (OPAL_UNLIKELY(!mca_btl_ofi_op_desc(rail, op, local_address, size, &desc))) {
        return OPAL_ERROR;
    }
    posted = kind->post(rail->ep, local_address, size, desc, op->endpoint->peer_addr, target->addr,
                        key, &op->fi_ctx);
    rc = mca_btl_ofi_post_result(rail, op, posted, kind->name);
    if (OPAL_SUCCESS == rc) {
        mca_btl_ofi_counter_block_t *mine;

        if (unproven) {
            mca_btl_ofi_put_proof_post(rail, op);
        }
        mine = mca_btl_ofi_counters_mine();
        mca_btl_ofi_count_in(mine, kind->ops_counter, 1);
        mca_btl_ofi_count_in(mine, kind->bytes_counter, size);
        if (rail->config.count_local) {
            mca_btl_ofi_count_in(mine, kind->local_counter, 1);
        }
    }
    return rc;
}

/* The one path for put and get, inlined into each so that kind is a constant. */
static inline __opal_attribute_always_inline__ int
mca_btl_ofi_rma(mca_btl_ofi_rail_t *rail, const mca_btl_ofi_rma_kind_t *kind, size_t limit,
                struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    /* A put without delivery-complete is done only once a read proves it landed. */
    const bool unproven = kind->writes && rail->prove_remote;
    bool tracked = false;
    mca_btl_ofi_target_t target;
    mca_btl_ofi_op_t *op;
    uint64_t key;
    int rc;

    if (OPAL_UNLIKELY(size > limit)) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = mca_btl_ofi_remote_target(rail, endpoint, remote_handle, remote_address, size, &target);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(mca_btl_ofi_inject_eagain())) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    key = mca_btl_ofi_inject_key(target.key);
    if (!kind->writes && rail->gets_as_messages) {
        /* no RMA read (or btl_ofi_gets=messages): the target answers with the data */
        target.key = key;
        return mca_btl_ofi_am_get(rail, endpoint, local_address, local_handle, &target, size,
                                  cbfunc, cbcontext, cbdata);
    }
    if (kind->writes && rail->coalesce && size <= rail->coalesce_max) {
        rc = mca_btl_ofi_coalesce_put(rail, endpoint, local_address, target.addr, key, size,
                                      local_handle, cbfunc, cbcontext, cbdata);
        if (OPAL_ERR_NOT_AVAILABLE != rc) {
            return rc;
        }
        /* nothing in flight to this peer: an fi_write that coalescing keeps track of */
        tracked = true;
    }
    op = mca_btl_ofi_rma_op(rail, unproven, tracked, endpoint, local_address, local_handle, cbfunc,
                            cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == op)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return mca_btl_ofi_rma_post(rail, kind, op, unproven, local_address, size, &target, key);
}

int mca_btl_ofi_rail_put(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *local_handle,
                         struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rma(rail, &mca_btl_ofi_put_kind, rail->caps.put_limit, endpoint,
                           local_address, remote_address, local_handle, remote_handle, size, cbfunc,
                           cbcontext, cbdata);
}

int mca_btl_ofi_rail_get(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *local_handle,
                         struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rma(rail, &mca_btl_ofi_get_kind, rail->caps.get_limit, endpoint,
                           local_address, remote_address, local_handle, remote_handle, size, cbfunc,
                           cbcontext, cbdata);
}

/* The proof word lives at the peer's proof handle (offset 0 without FI_MR_VIRT_ADDR). */
static uint64_t mca_btl_ofi_proof_addr(const mca_btl_ofi_rail_t *rail,
                                       const struct mca_btl_base_endpoint_t *endpoint)
{
    return rail->virt_addr ? endpoint->proof_handle.base : 0;
}

/* A put's proof read completed: the put has one completion less to wait for. */
static void mca_btl_ofi_put_proof_done(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *proof,
                                       int status)
{
    mca_btl_ofi_op_t *put = proof->parent;

    mca_btl_ofi_op_release(rail, proof);
    mca_btl_ofi_put_part_done(rail, put, status);
}

/*
 * prove_remote: post the read that proves a just-posted put landed (ordered
 * after it by FI_ORDER_RMA_RAW). The put's callback runs once both its own
 * completion and the proof's have arrived; -FI_EAGAIN defers the proof.
 */
static void mca_btl_ofi_put_proof_post(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *put)
{
    struct mca_btl_base_endpoint_t *endpoint = put->endpoint;
    mca_btl_ofi_op_t *proof;
    ssize_t rc;

    proof = mca_btl_ofi_op_alloc(rail, mca_btl_ofi_put_proof_done, endpoint, NULL, NULL, NULL, NULL,
                                 NULL);
    if (OPAL_UNLIKELY(NULL == proof)) {
        mca_btl_ofi_defer(rail, put, mca_btl_ofi_put_proof_post);
        return;
    }
    proof->parent = put;
    rc = fi_read(rail->ep, &proof->words->fetched, sizeof(proof->words->fetched), proof->words_desc,
                 endpoint->peer_addr, mca_btl_ofi_proof_addr(rail, endpoint),
                 endpoint->proof_handle.key, &proof->fi_ctx);
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_PROOF_READS, 1);
        return;
    }
    mca_btl_ofi_op_release(rail, proof);
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_POST_EAGAIN, 1);
        mca_btl_ofi_defer(rail, put, mca_btl_ofi_put_proof_post);
        return;
    }
    opal_output_verbose(1, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "fi_read (put proof) failed: %s (%zd)",
                        fi_strerror((int)-rc), rc);
    mca_btl_ofi_put_part_done(rail, put, OPAL_ERROR);
}

/*
 * One of an unproven put's two completions (its own or its proof's) arrived.
 * Only sent so far: osc/rdma may act on the put's callback (it releases its
 * accumulate lock), so the callback also waits for the read proving the data landed.
 */
static void mca_btl_ofi_put_part_done(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *put, int status)
{
    if (OPAL_SUCCESS != status) {
        put->status = status; /* either error fails the put */
    }
    if (1 == atomic_fetch_sub(&put->pending, 1)) {
        mca_btl_ofi_op_finish(rail, put, put->status);
    }
}

static void mca_btl_ofi_drain(mca_btl_ofi_rail_t *rail)
{
    while (atomic_load(&rail->outstanding) > 0) {
        (void)mca_btl_ofi_progress_wait(rail);
    }
}

/*
 * Post the flush proof for a peer that non-fetching atomics went to: an
 * atomic read of its proof word (FI_ORDER_ATOMIC_RAW). Puts need none here:
 * each was proven before its callback ran, and flush drained them first.
 */
static int mca_btl_ofi_post_proof(mca_btl_ofi_rail_t *rail,
                                  struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_op_t *atomic_op;
    ssize_t rc;

    atomic_op =
        mca_btl_ofi_op_alloc(rail, mca_btl_ofi_op_finish, endpoint, NULL, NULL, NULL, NULL, NULL);
    if (NULL == atomic_op) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    do {
        rc = fi_fetch_atomic(rail->ep, &atomic_op->words->operand, 1, atomic_op->words_desc,
                             &atomic_op->words->fetched, atomic_op->words_desc, endpoint->peer_addr,
                             mca_btl_ofi_proof_addr(rail, endpoint), endpoint->proof_handle.key,
                             FI_UINT64, FI_ATOMIC_READ, &atomic_op->fi_ctx);
    } while (-FI_EAGAIN == rc && mca_btl_ofi_progress_wait(rail) >= 0);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_PROOF_READS, 1);
    return mca_btl_ofi_post_result(rail, atomic_op, rc, "fi_fetch_atomic (proof)");
}

static int mca_btl_ofi_prove_endpoint(mca_btl_ofi_rail_t *rail,
                                      struct mca_btl_base_endpoint_t *endpoint)
{
    if (!atomic_exchange(&endpoint->unproven, false)) {
        return OPAL_SUCCESS;
    }
    return mca_btl_ofi_post_proof(rail, endpoint);
}

static int mca_btl_ofi_prove_all(mca_btl_ofi_rail_t *rail)
{
    mca_btl_base_endpoint_t *endpoint;
    uint64_t key;
    int rc = OPAL_SUCCESS;

    OPAL_THREAD_LOCK(&rail->endpoint_lock);
    OPAL_HASH_TABLE_FOREACH(key, uint64, endpoint, &rail->endpoints)
    {
        int one = mca_btl_ofi_prove_endpoint(rail, endpoint);
        rc = (OPAL_SUCCESS == rc) ? one : rc;
    }
    OPAL_THREAD_UNLOCK(&rail->endpoint_lock);
    return rc;
}

int mca_btl_ofi_rail_flush(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint)
{
    int rc = OPAL_SUCCESS;

    mca_btl_ofi_count(MCA_BTL_OFI_CNT_FLUSHES, 1);
    mca_btl_ofi_drain(rail);
    if (atomic_load_explicit(&rail->failed, memory_order_relaxed)) {
        return OPAL_ERR_UNREACH; /* its NIC failed: what was in flight failed with it */
    }
    if (rail->prove_remote) {
        rc = (NULL != endpoint) ? mca_btl_ofi_prove_endpoint(rail, endpoint)
                                : mca_btl_ofi_prove_all(rail);
        mca_btl_ofi_drain(rail);
    }
    return rc;
}
