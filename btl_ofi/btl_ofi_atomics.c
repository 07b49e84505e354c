/*
 * btl-ofi atomics: the MCA-op -> libfabric-op table, what the provider does
 * natively (asked once through fi_*atomicvalid), the three entry points, and
 * a compare-and-swap loop for every op the provider lacks.
 *
 * osc/rdma sends any op it maps without looking at btl_atomic_flags, so an op
 * the provider cannot do natively must still complete correctly: it becomes a
 * loop of compare-and-swaps that starts from a guess of 0 and retries with the
 * value each failed attempt returns.
 *
 * A provider without FI_ATOMIC or without a 64-bit compare-and-swap (or
 * btl_ofi_atomics=messages) has every atomic sent as a message that the
 * target's progress applies with CPU atomics (btl_ofi_am.c). Never some of
 * them: the provider's atomics and the target's CPU atomics are not atomic
 * with each other (a NIC applies its atomics in its own unit), so mixing them
 * on one word would lose updates.
 */

#include "btl_ofi_atomics.h"

#include <stdio.h>
#include <string.h>

#include "btl_ofi_am.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_locate.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_report.h"

typedef struct mca_btl_ofi_atomic_desc_t {
    bool valid;
    enum fi_op fi_op;
    uint32_t support; /**< MCA_BTL_ATOMIC_SUPPORTS_* bit */
    const char *name;
} mca_btl_ofi_atomic_desc_t;

static const mca_btl_ofi_atomic_desc_t mca_btl_ofi_atomic_table[MCA_BTL_ATOMIC_LAST] = {
    [MCA_BTL_ATOMIC_ADD] = {true, FI_SUM, MCA_BTL_ATOMIC_SUPPORTS_ADD, "add"},
    [MCA_BTL_ATOMIC_AND] = {true, FI_BAND, MCA_BTL_ATOMIC_SUPPORTS_AND, "and"},
    [MCA_BTL_ATOMIC_OR] = {true, FI_BOR, MCA_BTL_ATOMIC_SUPPORTS_OR, "or"},
    [MCA_BTL_ATOMIC_XOR] = {true, FI_BXOR, MCA_BTL_ATOMIC_SUPPORTS_XOR, "xor"},
    [MCA_BTL_ATOMIC_LAND] = {true, FI_LAND, MCA_BTL_ATOMIC_SUPPORTS_LAND, "land"},
    [MCA_BTL_ATOMIC_LOR] = {true, FI_LOR, MCA_BTL_ATOMIC_SUPPORTS_LOR, "lor"},
    [MCA_BTL_ATOMIC_LXOR] = {true, FI_LXOR, MCA_BTL_ATOMIC_SUPPORTS_LXOR, "lxor"},
    [MCA_BTL_ATOMIC_SWAP] = {true, FI_ATOMIC_WRITE, MCA_BTL_ATOMIC_SUPPORTS_SWAP, "swap"},
    [MCA_BTL_ATOMIC_MIN] = {true, FI_MIN, MCA_BTL_ATOMIC_SUPPORTS_MIN, "min"},
    [MCA_BTL_ATOMIC_MAX] = {true, FI_MAX, MCA_BTL_ATOMIC_SUPPORTS_MAX, "max"},
};

/* Datatype index: bit 0 = 32-bit, bit 1 = floating point. */
static const enum fi_datatype mca_btl_ofi_atomic_dt[MCA_BTL_OFI_ATOMIC_DT_COUNT] = {
    [0] = FI_INT64,
    [1] = FI_INT32,
    [2] = FI_DOUBLE,
    [3] = FI_FLOAT,
};

static inline int mca_btl_ofi_dt_index(int flags)
{
    return ((flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? 1 : 0) |
           ((flags & MCA_BTL_ATOMIC_FLAG_FLOAT) ? 2 : 0);
}

static inline size_t mca_btl_ofi_dt_size(int dt)
{
    return (dt & 1) ? 4 : 8;
}

/* ---- capability probe -------------------------------------------------- */

static uint8_t mca_btl_ofi_probe_op(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op)
{
    size_t count = 0;
    uint8_t native = 0;

    if (0 == fi_atomicvalid(ep, dt, op, &count) && count >= 1) {
        native |= MCA_BTL_OFI_NATIVE_OP;
    }
    count = 0;
    if (0 == fi_fetch_atomicvalid(ep, dt, op, &count) && count >= 1) {
        native |= MCA_BTL_OFI_NATIVE_FOP;
    }
    return native;
}

/*
 * Advertise every op the BTL executes atomically: natively, or through the
 * compare-and-swap loop (atomic with respect to every other BTL atomic).
 * Which is which goes to the verbose output.
 */
static uint32_t mca_btl_ofi_atomics_advertise(const mca_btl_ofi_atomic_caps_t *caps)
{
    const uint8_t both = MCA_BTL_OFI_NATIVE_OP | MCA_BTL_OFI_NATIVE_FOP;
    char native_ops[128] = "", emulated_ops[128] = "";
    uint32_t flags = MCA_BTL_ATOMIC_SUPPORTS_CSWAP;

    for (int op = 0; op < MCA_BTL_ATOMIC_LAST; ++op) {
        char *list;
        if (!mca_btl_ofi_atomic_table[op].valid) {
            continue;
        }
        flags |= mca_btl_ofi_atomic_table[op].support;
        list = (both == (caps->native[op][0] & both)) ? native_ops : emulated_ops;
        snprintf(list + strlen(list), sizeof(native_ops) - strlen(list), "%s%s", list[0] ? "," : "",
                 mca_btl_ofi_atomic_table[op].name);
    }
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "64-bit atomics native: %s; through compare-and-swap: %s",
                        native_ops[0] ? native_ops : "none",
                        emulated_ops[0] ? emulated_ops : "none");
    if (caps->cswap[1]) {
        /* 32-bit ops are served natively or through a 32-bit compare-and-swap loop. */
        flags |= MCA_BTL_ATOMIC_SUPPORTS_32BIT;
    }
    if (MCA_BTL_OFI_ADVERTISE_FLOAT_ATOMICS && caps->cswap[2] && caps->cswap[3]) {
        flags |= MCA_BTL_ATOMIC_SUPPORTS_FLOAT;
    }
    return flags;
}

/*
 * shm (libfabric 1.17 and 2.1) posts a non-fetching atomic with
 * FI_DELIVERY_COMPLETE through an inject buffer of the target and releases
 * that buffer twice: the target after applying the atomic (no SMR_RMA_REQ),
 * the origin again on the delivery response. Two later atomics to that target
 * can then share one buffer, so a fetch-and-op adds another's operand or result
 * (NOTES.txt section 8; puts and gets take other paths there). A fetching atomic
 * is released once, so such providers get fetching atomics into a scratch word.
 */
static bool mca_btl_ofi_nofetch_needs_fetch(const mca_btl_ofi_rail_t *rail)
{
    const char *prov = rail->info->fabric_attr->prov_name;

    if (0 <= mca_btl_ofi_params.nofetch_as_fetch) {
        return 1 == mca_btl_ofi_params.nofetch_as_fetch;
    }
    return rail->delivery_complete && (0 == strcmp(prov, "shm") || 0 == strncmp(prov, "shm;", 4));
}

/*
 * Atomics as messages: the target applies every op of every datatype; floats
 * are advertised only where Open MPI's osc/rdma uses them rightly (section 6).
 * The most any rail advertises, so also what the module template names.
 */
uint32_t mca_btl_ofi_atomics_most(void)
{
    uint32_t flags = MCA_BTL_ATOMIC_SUPPORTS_CSWAP | MCA_BTL_ATOMIC_SUPPORTS_32BIT;

    for (int op = 0; op < MCA_BTL_ATOMIC_LAST; ++op) {
        if (mca_btl_ofi_atomic_table[op].valid) {
            flags |= mca_btl_ofi_atomic_table[op].support;
        }
    }
    if (MCA_BTL_OFI_ADVERTISE_FLOAT_ATOMICS) {
        flags |= MCA_BTL_ATOMIC_SUPPORTS_FLOAT;
    }
    return flags;
}

/* What the endpoint serves natively, op by op and datatype by datatype (nothing where the
 * provider grants no FI_ATOMIC, or with btl_ofi_debug_atomic_emulation). */
static void mca_btl_ofi_probe_all(const mca_btl_ofi_rail_t *rail, mca_btl_ofi_atomic_caps_t *caps)
{
    memset(caps, 0, sizeof(*caps));
    if (!(rail->info->caps & FI_ATOMIC)) {
        return;
    }
    for (int dt = 0; dt < MCA_BTL_OFI_ATOMIC_DT_COUNT; ++dt) {
        size_t count = 0;
        caps->cswap[dt] =
            0 == fi_compare_atomicvalid(rail->ep, mca_btl_ofi_atomic_dt[dt], FI_CSWAP, &count) &&
            count >= 1;
        for (int op = 0; op < MCA_BTL_ATOMIC_LAST; ++op) {
            if (mca_btl_ofi_atomic_table[op].valid) {
                caps->native[op][dt] =
                    mca_btl_ofi_params.debug_atomic_emulation
                        ? 0
                        : mca_btl_ofi_probe_op(rail->ep, mca_btl_ofi_atomic_dt[dt],
                                               mca_btl_ofi_atomic_table[op].fi_op);
            }
        }
    }
}

/* Whether every atomic travels as a message: btl_ofi_atomics says so, or (auto) the provider
 * grants no FI_ATOMIC, or it has no 64-bit compare-and-swap and casless_as_messages allows
 * messages. Some providers name FI_ATOMIC without a compare-and-swap (net of libfabric 1.17
 * implements no atomic): component init passes them over for the next one first, and takes
 * messages on them only when no provider with one is left. */
static bool mca_btl_ofi_atomics_by_messages(bool granted, bool native, bool casless_as_messages)
{
    switch (mca_btl_ofi_params.atomics_path) {
    case MCA_BTL_OFI_PATH_MESSAGES:
        return true;
    case MCA_BTL_OFI_PATH_NATIVE:
        return false;
    default:
        return !granted || (!native && casless_as_messages);
    }
}

/* Every atomic as a message the target applies: what that advertises, or NOT_SUPPORTED where
 * no FI_MSG carries them (passed over like a provider without atomics). */
static int mca_btl_ofi_atomics_messages(mca_btl_ofi_rail_t *rail, bool granted)
{
    memset(&rail->atomics, 0, sizeof(rail->atomics));
    if (!rail->am_ready) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rail->caps.atomic_flags = mca_btl_ofi_atomics_most();
    opal_output_verbose(
        10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "every atomic is a message the target applies (%s)",
        MCA_BTL_OFI_PATH_MESSAGES == mca_btl_ofi_params.atomics_path ? "btl_ofi_atomics=messages"
        : !granted ? "the provider grants no FI_ATOMIC"
                   : "the provider has no 64-bit compare-and-swap");
    return OPAL_SUCCESS;
}

/* Non-fetching atomics (MCA_BTL_FLAGS_ATOMIC_OPS) only where their callback means they were
 * applied, as btl.h asks: as messages (answered once applied) or under FI_DELIVERY_COMPLETE.
 * Under read_proof it would come at transmit; without the flag osc/rdma sends them as
 * fetch-and-ops, whose answer proves them in the same round trip. */
static void mca_btl_ofi_atomics_nofetch_flag(mca_btl_ofi_rail_t *rail)
{
    bool offered;

    if (!rail->atomics_as_messages && !rail->delivery_complete) {
        rail->caps.flags &= ~MCA_BTL_FLAGS_ATOMIC_OPS;
    }
    offered = !!(rail->caps.flags & MCA_BTL_FLAGS_ATOMIC_OPS);
    opal_output_verbose(10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "non-fetching atomics %s",
                        offered ? "advertised" : "not advertised (sent as fetch-and-ops)");
}

int mca_btl_ofi_atomics_probe(mca_btl_ofi_rail_t *rail, bool casless_as_messages)
{
    mca_btl_ofi_atomic_caps_t *caps = &rail->atomics;
    const bool granted = !!(rail->info->caps & FI_ATOMIC);
    bool native;

    mca_btl_ofi_probe_all(rail, caps);
    /* osc/rdma needs 64-bit fetch-and-add and compare-and-swap at the very least: natively,
     * through the compare-and-swap loop, or as messages. */
    native = granted && caps->cswap[0];
    rail->atomics_as_messages =
        mca_btl_ofi_atomics_by_messages(granted, native, casless_as_messages);
    mca_btl_ofi_atomics_nofetch_flag(rail);
    if (rail->atomics_as_messages) {
        return mca_btl_ofi_atomics_messages(rail, granted);
    }
    if (!native) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    caps->nofetch_as_fetch = mca_btl_ofi_nofetch_needs_fetch(rail);
    if (caps->nofetch_as_fetch) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "non-fetching atomics are posted as fetching ones (%s)",
                            mca_btl_ofi_params.nofetch_as_fetch < 0
                                ? "shm with delivery-complete releases their buffer twice"
                                : "btl_ofi_atomic_nofetch_as_fetch=1");
    }
    rail->caps.atomic_flags = mca_btl_ofi_atomics_advertise(caps);
    return OPAL_SUCCESS;
}

/* ---- emulation through compare-and-swap -------------------------------- */

/* Post an emulated atomic's next compare-and-swap; -FI_EAGAIN defers it. */
static void mca_btl_ofi_emulation_post(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    /* Compare against the current guess; store the op applied to that guess. */
    mca_btl_ofi_words_t *words = op->words;

    words->operand =
        mca_btl_ofi_atomic_apply(op->emu.op, op->emu.dt, words->compare, op->emu.operand);
    words->fetched = 0;
    ssize_t rc = fi_compare_atomic(rail->ep, &words->operand, 1, op->words_desc, &words->compare,
                                   op->words_desc, &words->fetched, op->words_desc,
                                   op->endpoint->peer_addr, op->emu.target_addr, op->emu.key,
                                   mca_btl_ofi_atomic_dt[op->emu.dt & 1], FI_CSWAP, &op->fi_ctx);
    if (OPAL_LIKELY(0 == rc)) {
        return;
    }
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_defer(rail, op, mca_btl_ofi_emulation_post);
        return;
    }
    opal_output_verbose(1, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "fi_compare_atomic (emulated %s) failed: %s",
                        mca_btl_ofi_atomic_table[op->emu.op].name, fi_strerror((int)-rc));
    mca_btl_ofi_op_finish(rail, op, OPAL_ERROR);
}

/* One compare-and-swap step of an emulated atomic completed: done, or retry. */
static void mca_btl_ofi_emulation_step_done(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                                            int status)
{
    const uint64_t mask = (op->emu.dt & 1) ? UINT32_MAX : UINT64_MAX;

    if (OPAL_SUCCESS != status) {
        mca_btl_ofi_op_finish(rail, op, status);
        return;
    }
    if ((op->words->fetched & mask) != (op->words->compare & mask)) {
        /* Someone changed the value first: retry from what we saw. */
        op->words->compare = op->words->fetched & mask;
        mca_btl_ofi_emulation_post(rail, op);
        return;
    }
    if (op->emu.fetching) {
        memcpy(op->local_address, &op->words->compare, mca_btl_ofi_dt_size(op->emu.dt));
    }
    mca_btl_ofi_op_finish(rail, op, OPAL_SUCCESS);
}

static int mca_btl_ofi_emulate(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                               mca_btl_base_atomic_op_t mca_op, int dt, bool fetching,
                               uint64_t operand, uint64_t target, uint64_t key)
{
    if (!rail->atomics.cswap[dt & 1]) {
        /* No compare-and-swap of this width: osc/rdma falls back to its own path. */
        mca_btl_ofi_op_release(rail, op);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    op->complete = mca_btl_ofi_emulation_step_done;
    op->emu = (mca_btl_ofi_emulation_t){
        .op = mca_op,
        .dt = dt,
        .fetching = fetching,
        .operand = operand,
        .target_addr = target,
        .key = key,
    };
    op->words->compare = 0;
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_ATOMICS_EMULATED, 1);
    mca_btl_ofi_emulation_post(rail, op);
    return OPAL_SUCCESS;
}

/* ---- entry points ------------------------------------------------------ */

/* Checks and setup shared by the three entry points; *op is counted outstanding, and
 * marked as waited for by await (NULL: a non-fetching atomic, not waited for). */
static int mca_btl_ofi_atomic_begin(
    mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint, int flags,
    uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
    void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata,
    mca_btl_ofi_await_t *await, mca_btl_ofi_target_t *target, mca_btl_ofi_op_t **op)
{
    int dt = mca_btl_ofi_dt_index(flags);
    int rc = mca_btl_ofi_remote_target(rail, endpoint, remote_handle, remote_address,
                                       mca_btl_ofi_dt_size(dt), target);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(mca_btl_ofi_inject_eagain() || !mca_btl_ofi_op_room(rail))) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    *op = mca_btl_ofi_op_alloc(rail, mca_btl_ofi_op_finish, endpoint, local_address, local_handle,
                               cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == *op)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_ofi_await_mark(await, *op);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_ATOMICS, 1);
    if (rail->config.count_local) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_LOCAL_ATOMICS, 1);
    }
    return OPAL_SUCCESS;
}

static bool mca_btl_ofi_op_known(mca_btl_base_atomic_op_t op)
{
    return op >= 0 && op < MCA_BTL_ATOMIC_LAST && mca_btl_ofi_atomic_table[op].valid;
}

/* Fetching and non-fetching atomics share everything but the libfabric call. */
static int mca_btl_ofi_atomic(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                              void *local_address, uint64_t remote_address,
                              struct mca_btl_base_registration_handle_t *local_handle,
                              struct mca_btl_base_registration_handle_t *remote_handle,
                              mca_btl_base_atomic_op_t mca_op, uint64_t operand, int flags,
                              mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                              void *cbdata, mca_btl_ofi_await_t *await)
{
    const bool fetching = NULL != local_address;
    const bool as_fetch = fetching || rail->atomics.nofetch_as_fetch;
    const int dt = mca_btl_ofi_dt_index(flags);
    mca_btl_ofi_target_t target;
    mca_btl_ofi_op_t *op;
    ssize_t rc;

    if (OPAL_UNLIKELY(!mca_btl_ofi_op_known(mca_op))) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = mca_btl_ofi_atomic_begin(rail, endpoint, flags, remote_address, remote_handle,
                                  local_address, local_handle, cbfunc, cbcontext, cbdata, await,
                                  &target, &op);
    if (OPAL_SUCCESS != rc) {
        return (int)rc;
    }
    if (rail->atomics_as_messages) {
        /* answered once applied: the callback proves it, fetching or not */
        return mca_btl_ofi_am_atomic(rail, op, fetching ? MCA_BTL_OFI_AM_FOP : MCA_BTL_OFI_AM_OP,
                                     mca_op, dt, operand, 0, &target);
    }
    if (!(rail->atomics.native[mca_op][dt] &
          (as_fetch ? MCA_BTL_OFI_NATIVE_FOP : MCA_BTL_OFI_NATIVE_OP))) {
        return mca_btl_ofi_emulate(rail, op, mca_op, dt, fetching, operand, target.addr,
                                   target.key);
    }

    op->words->operand = operand;
    if (as_fetch) {
        void *result = fetching ? local_address : &op->words->fetched, *desc = op->words_desc;
        if (OPAL_UNLIKELY(fetching && !mca_btl_ofi_op_desc(rail, op, local_address,
                                                           mca_btl_ofi_dt_size(dt), &desc))) {
            return OPAL_ERROR;
        }
        /* the fetched result is its own proof of remote completion */
        rc =
            fi_fetch_atomic(rail->ep, &op->words->operand, 1, op->words_desc, result, desc,
                            endpoint->peer_addr, target.addr, target.key, mca_btl_ofi_atomic_dt[dt],
                            mca_btl_ofi_atomic_table[mca_op].fi_op, &op->fi_ctx);
    } else {
        if (rail->prove_remote) {
            /* Under read_proof its completion says nothing about the target: flush proves it
             * (osc/rdma is not offered non-fetching atomics there; other callers may be). */
            atomic_store_explicit(&endpoint->unproven, true, memory_order_relaxed);
        }
        rc = fi_atomic(rail->ep, &op->words->operand, 1, op->words_desc, endpoint->peer_addr,
                       target.addr, target.key, mca_btl_ofi_atomic_dt[dt],
                       mca_btl_ofi_atomic_table[mca_op].fi_op, &op->fi_ctx);
    }
    return mca_btl_ofi_post_result(rail, op, rc, as_fetch ? "fi_fetch_atomic" : "fi_atomic");
}

int mca_btl_ofi_rail_aop(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         uint64_t remote_address,
                         struct mca_btl_base_registration_handle_t *remote_handle,
                         mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_atomic(rail, endpoint, NULL, remote_address, NULL, remote_handle, op,
                              operand, flags, cbfunc, cbcontext, cbdata, NULL);
}

int mca_btl_ofi_rail_afop(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                          void *local_address, uint64_t remote_address,
                          struct mca_btl_base_registration_handle_t *local_handle,
                          struct mca_btl_base_registration_handle_t *remote_handle,
                          mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                          mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_await_t await = {.done = false, .op = NULL};

    if (OPAL_UNLIKELY(NULL == local_address)) {
        return OPAL_ERR_BAD_PARAM;
    }
    return mca_btl_ofi_op_await(rail, &await,
                                mca_btl_ofi_atomic(rail, endpoint, local_address, remote_address,
                                                   local_handle, remote_handle, op, operand, flags,
                                                   cbfunc, cbcontext, cbdata, &await));
}

static int mca_btl_ofi_cswap(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                             void *local_address, uint64_t remote_address,
                             struct mca_btl_base_registration_handle_t *local_handle,
                             struct mca_btl_base_registration_handle_t *remote_handle,
                             uint64_t compare, uint64_t value, int flags,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                             void *cbdata, mca_btl_ofi_await_t *await)
{
    const int dt = mca_btl_ofi_dt_index(flags & MCA_BTL_ATOMIC_FLAG_32BIT);
    mca_btl_ofi_target_t target;
    mca_btl_ofi_op_t *op;
    void *desc;
    ssize_t rc;

    if (OPAL_UNLIKELY(NULL == local_address)) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = mca_btl_ofi_atomic_begin(rail, endpoint, flags, remote_address, remote_handle,
                                  local_address, local_handle, cbfunc, cbcontext, cbdata, await,
                                  &target, &op);
    if (OPAL_SUCCESS != rc) {
        return (int)rc;
    }
    if (rail->atomics_as_messages) {
        return mca_btl_ofi_am_atomic(rail, op, MCA_BTL_OFI_AM_CSWAP, MCA_BTL_ATOMIC_SWAP, dt, value,
                                     compare, &target);
    }
    if (!rail->atomics.cswap[dt]) {
        mca_btl_ofi_op_release(rail, op);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (OPAL_UNLIKELY(
            !mca_btl_ofi_op_desc(rail, op, local_address, mca_btl_ofi_dt_size(dt), &desc))) {
        return OPAL_ERROR;
    }
    op->words->operand = value;
    op->words->compare = compare;
    rc = fi_compare_atomic(rail->ep, &op->words->operand, 1, op->words_desc, &op->words->compare,
                           op->words_desc, local_address, desc, endpoint->peer_addr, target.addr,
                           target.key, mca_btl_ofi_atomic_dt[dt], FI_CSWAP, &op->fi_ctx);
    return mca_btl_ofi_post_result(rail, op, rc, "fi_compare_atomic");
}

int mca_btl_ofi_rail_acswap(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                            void *local_address, uint64_t remote_address,
                            struct mca_btl_base_registration_handle_t *local_handle,
                            struct mca_btl_base_registration_handle_t *remote_handle,
                            uint64_t compare, uint64_t value, int flags,
                            mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_await_t await = {.done = false, .op = NULL};

    return mca_btl_ofi_op_await(rail, &await,
                                mca_btl_ofi_cswap(rail, endpoint, local_address, remote_address,
                                                  local_handle, remote_handle, compare, value,
                                                  flags, cbfunc, cbcontext, cbdata, &await));
}
