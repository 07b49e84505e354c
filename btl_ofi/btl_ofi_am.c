/*
 * btl-ofi operations as messages: atomics and gets that the target's progress
 * carries out.
 *
 * Why: a provider with FI_RMA but without atomics (or without the 64-bit
 * compare-and-swap the loop of btl_ofi_atomics.c needs), or without RMA read
 * (verbs-like NICs, libfabric 2.x's tcp, RMA-only NICs), can still serve
 * one-sided MPI if what it lacks travels as messages, as gathered puts already
 * do (btl_ofi_coalesce.c).
 *
 * Atomics: the origin sends (kind, op, datatype, address as fi_atomic takes it,
 * key, the check word of its handle, operand, compare). The target's progress
 * looks the key up among its live registrations, checks that the registration
 * is the one the origin's handle named (check word), that the access lies
 * inside it and is aligned to its size, applies it with CPU atomics (__atomic
 * builtins: atomic with osc/rdma's own CPU atomics on that memory and with
 * other threads' progress), and answers with the old value or the refusal.
 * The origin runs the callback on the answer, so a callback proves the atomic
 * was applied: no proof read is needed for it, fetching or not.
 *
 * Gets: the origin sends (address, key, check, size, the largest piece it can
 * receive). The target checks the whole range, then sends the data in pieces
 * of at most that size, each copied from the registration at the time it is
 * sent; a range it refuses (or a registration that went away between pieces)
 * is answered by one refusal standing for the bytes not sent. The origin
 * copies each piece into its buffer and runs the callback once every byte is
 * accounted for. Pieces may arrive in any order.
 *
 * Both origin operations are counted outstanding from the request to the
 * answer, so flush waits for them.
 */

#include "btl_ofi_am.h"

#include <string.h>

#include "btl_ofi_discovery.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_msg.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_report.h"

/* The largest piece of a get's data in one message, whatever the origin can receive. */
#define MCA_BTL_OFI_AM_PIECE_MAX (64 * 1024)

/* ---- the wire ------------------------------------------------------------ */

typedef struct mca_btl_ofi_am_atomic_msg_t {
    mca_btl_ofi_msg_header_t header; /**< MCA_BTL_OFI_MSG_ATOMIC */
    uint64_t cookie;                 /**< the origin's operation, returned in the answer */
    uint64_t addr;                   /**< as fi_atomic takes it: virtual, or an offset */
    uint64_t key;
    uint64_t check; /**< check word of the origin's handle */
    uint64_t operand;
    uint64_t compare;
    uint32_t kind; /**< enum mca_btl_ofi_am_kind_t */
    uint32_t op;   /**< mca_btl_base_atomic_op_t */
    uint32_t dt;   /**< datatype index */
    uint32_t reserved;
} mca_btl_ofi_am_atomic_msg_t;

typedef struct mca_btl_ofi_am_atomic_done_t {
    mca_btl_ofi_msg_header_t header; /**< MCA_BTL_OFI_MSG_ATOMIC_DONE */
    uint64_t cookie;
    uint64_t old;
    uint32_t refused;
    uint32_t reserved;
} mca_btl_ofi_am_atomic_done_t;

typedef struct mca_btl_ofi_am_get_msg_t {
    mca_btl_ofi_msg_header_t header; /**< MCA_BTL_OFI_MSG_GET */
    uint64_t cookie;
    uint64_t addr;
    uint64_t key;
    uint64_t check;
    uint64_t size;
    uint64_t piece; /**< the largest piece of data the origin can receive in one message */
} mca_btl_ofi_am_get_msg_t;

typedef struct mca_btl_ofi_am_data_t {
    mca_btl_ofi_msg_header_t header; /**< MCA_BTL_OFI_MSG_GET_DATA; data follows */
    uint64_t cookie;
    uint64_t offset; /**< where the piece goes in the origin's buffer */
    uint64_t len;    /**< bytes it stands for: the data, or the bytes a refusal leaves out */
    uint32_t refused;
    uint32_t reserved;
} mca_btl_ofi_am_data_t;

/* ---- arithmetic ---------------------------------------------------------- */

#define MCA_BTL_OFI_APPLY_LOGICAL(op, a, b)                                                        \
    ((op) == MCA_BTL_ATOMIC_LAND  ? ((a) && (b))                                                   \
     : (op) == MCA_BTL_ATOMIC_LOR ? ((a) || (b))                                                   \
                                  : (!(a) != !(b)))

/* new = old op operand for signed integers of either width. */
static int64_t mca_btl_ofi_apply_int(mca_btl_base_atomic_op_t op, int64_t old, int64_t operand)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        return (int64_t)((uint64_t)old + (uint64_t)operand);
    case MCA_BTL_ATOMIC_AND:
        return old & operand;
    case MCA_BTL_ATOMIC_OR:
        return old | operand;
    case MCA_BTL_ATOMIC_XOR:
        return old ^ operand;
    case MCA_BTL_ATOMIC_LAND:
    case MCA_BTL_ATOMIC_LOR:
    case MCA_BTL_ATOMIC_LXOR:
        return MCA_BTL_OFI_APPLY_LOGICAL(op, old, operand);
    case MCA_BTL_ATOMIC_MIN:
        return old < operand ? old : operand;
    case MCA_BTL_ATOMIC_MAX:
        return old > operand ? old : operand;
    case MCA_BTL_ATOMIC_SWAP:
    default:
        return operand;
    }
}

static double mca_btl_ofi_apply_float(mca_btl_base_atomic_op_t op, double old, double operand)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        return old + operand;
    case MCA_BTL_ATOMIC_MIN:
        return old < operand ? old : operand;
    case MCA_BTL_ATOMIC_MAX:
        return old > operand ? old : operand;
    case MCA_BTL_ATOMIC_LAND:
    case MCA_BTL_ATOMIC_LOR:
    case MCA_BTL_ATOMIC_LXOR:
        return MCA_BTL_OFI_APPLY_LOGICAL(op, old != 0.0, operand != 0.0);
    case MCA_BTL_ATOMIC_SWAP:
    default:
        return operand;
    }
}

uint64_t mca_btl_ofi_atomic_apply(mca_btl_base_atomic_op_t op, int dt, uint64_t old,
                                  uint64_t operand)
{
    switch (dt) {
    case 0:
        return (uint64_t)mca_btl_ofi_apply_int(op, (int64_t)old, (int64_t)operand);
    case 1:
        return (uint32_t)mca_btl_ofi_apply_int(op, (int32_t)(uint32_t)old,
                                               (int32_t)(uint32_t)operand);
    case 2: {
        double a, b, r;
        memcpy(&a, &old, 8);
        memcpy(&b, &operand, 8);
        r = mca_btl_ofi_apply_float(op, a, b);
        memcpy(&old, &r, 8);
        return old;
    }
    default: {
        float a, b, r;
        uint32_t old32 = (uint32_t)old, operand32 = (uint32_t)operand, out;
        memcpy(&a, &old32, 4);
        memcpy(&b, &operand32, 4);
        r = (float)mca_btl_ofi_apply_float(op, a, b);
        memcpy(&out, &r, 4);
        return out;
    }
    }
}

/* ---- the target ---------------------------------------------------------- */

/*
 * Under rail->reg_lock: where an access of size bytes at addr (as the
 * provider would take it) lands in this process, or NULL where a provider would
 * refuse it: no live registration with that key, not the registration the
 * origin's handle named (its check word), or outside it.
 */
static void *mca_btl_ofi_am_where(mca_btl_ofi_rail_t *rail, uint64_t addr, uint64_t key,
                                  uint64_t check, uint64_t size)
{
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_find(rail, key);
    uint64_t offset;

    if (NULL == reg || reg->handle.check != check) {
        return NULL;
    }
    if (rail->virt_addr && addr < reg->handle.base) {
        return NULL;
    }
    offset = rail->virt_addr ? addr - reg->handle.base : addr;
    if (size > reg->handle.len || offset > reg->handle.len - size) {
        return NULL;
    }
    return (char *)(uintptr_t)reg->handle.base + offset;
}

/* Apply an integer op of one width to *where with CPU atomics; the old value. */
#define MCA_BTL_OFI_AM_APPLY(type, where, req, old)                                                \
    do {                                                                                           \
        type *w_ = (type *)(where), o_ = (type)(req)->operand;                                     \
        switch ((req)->op) {                                                                       \
        case MCA_BTL_ATOMIC_ADD:                                                                   \
            (old) = (uint64_t)__atomic_fetch_add(w_, o_, __ATOMIC_SEQ_CST);                        \
            break;                                                                                 \
        case MCA_BTL_ATOMIC_AND:                                                                   \
            (old) = (uint64_t)__atomic_fetch_and(w_, o_, __ATOMIC_SEQ_CST);                        \
            break;                                                                                 \
        case MCA_BTL_ATOMIC_OR:                                                                    \
            (old) = (uint64_t)__atomic_fetch_or(w_, o_, __ATOMIC_SEQ_CST);                         \
            break;                                                                                 \
        case MCA_BTL_ATOMIC_XOR:                                                                   \
            (old) = (uint64_t)__atomic_fetch_xor(w_, o_, __ATOMIC_SEQ_CST);                        \
            break;                                                                                 \
        case MCA_BTL_ATOMIC_SWAP:                                                                  \
            (old) = (uint64_t)__atomic_exchange_n(w_, o_, __ATOMIC_SEQ_CST);                       \
            break;                                                                                 \
        default: { /* min, max, logical ops: a compare-and-swap loop on the word */                \
            type seen_ = __atomic_load_n(w_, __ATOMIC_SEQ_CST), new_;                              \
            do {                                                                                   \
                new_ = (type)mca_btl_ofi_atomic_apply((mca_btl_base_atomic_op_t)(req)->op,         \
                                                      (int)(req)->dt, (uint64_t)seen_,             \
                                                      (req)->operand);                             \
            } while (!__atomic_compare_exchange_n(w_, &seen_, new_, false, __ATOMIC_SEQ_CST,       \
                                                  __ATOMIC_SEQ_CST));                              \
            (old) = (uint64_t)seen_;                                                               \
        }                                                                                          \
        }                                                                                          \
    } while (0)

/* Apply one atomic request at where (aligned, inside a live registration); the old value. */
static uint64_t mca_btl_ofi_am_apply(const mca_btl_ofi_am_atomic_msg_t *req, void *where)
{
    uint64_t old = 0;

    if (MCA_BTL_OFI_AM_CSWAP == req->kind) {
        if (req->dt & 1) {
            uint32_t expected = (uint32_t)req->compare;
            (void)__atomic_compare_exchange_n((uint32_t *)where, &expected, (uint32_t)req->operand,
                                              false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return expected;
        }
        old = req->compare;
        (void)__atomic_compare_exchange_n((uint64_t *)where, &old, req->operand, false,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return old;
    }
    if (req->dt & 2) {
        /* floating point: the op on the bit patterns, through a compare-and-swap loop */
        if (req->dt & 1) {
            uint32_t *w = where, seen = __atomic_load_n(w, __ATOMIC_SEQ_CST), next;
            do {
                next = (uint32_t)mca_btl_ofi_atomic_apply((mca_btl_base_atomic_op_t)req->op,
                                                          (int)req->dt, seen, req->operand);
            } while (!__atomic_compare_exchange_n(w, &seen, next, false, __ATOMIC_SEQ_CST,
                                                  __ATOMIC_SEQ_CST));
            return seen;
        }
        uint64_t *w = where, seen = __atomic_load_n(w, __ATOMIC_SEQ_CST), next;
        do {
            next = mca_btl_ofi_atomic_apply((mca_btl_base_atomic_op_t)req->op, (int)req->dt, seen,
                                            req->operand);
        } while (!__atomic_compare_exchange_n(w, &seen, next, false, __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST));
        return seen;
    }
    if (req->dt & 1) {
        MCA_BTL_OFI_AM_APPLY(uint32_t, where, req, old);
        return (uint32_t)old;
    }
    MCA_BTL_OFI_AM_APPLY(uint64_t, where, req, old);
    return old;
}

static bool mca_btl_ofi_am_atomic_known(const mca_btl_ofi_am_atomic_msg_t *req)
{
    return req->kind <= MCA_BTL_OFI_AM_CSWAP && req->dt < MCA_BTL_OFI_ATOMIC_DT_COUNT &&
           req->op < MCA_BTL_ATOMIC_LAST && !(MCA_BTL_OFI_AM_CSWAP == req->kind && (req->dt & 2));
}

/* An atomic of a peer: apply it (or refuse it) and answer. */
static void mca_btl_ofi_am_atomic_serve(mca_btl_ofi_rail_t *rail,
                                        struct mca_btl_base_endpoint_t *origin, const void *buf,
                                        size_t bytes)
{
    mca_btl_ofi_am_atomic_msg_t req;
    mca_btl_ofi_am_atomic_done_t done = {0};
    void *where = NULL;

    if (bytes < sizeof(req)) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a short atomic message was dropped");
        return;
    }
    memcpy(&req, buf, sizeof(req));
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_MESSAGES_APPLIED, 1);
    mca_btl_ofi_msg_header_init(&done.header, MCA_BTL_OFI_MSG_ATOMIC_DONE, sizeof(done));
    done.cookie = req.cookie;
    OPAL_THREAD_LOCK(&rail->reg_lock);
    if (mca_btl_ofi_am_atomic_known(&req)) {
        const uint64_t size = (req.dt & 1) ? 4 : 8;

        where = mca_btl_ofi_am_where(rail, req.addr, req.key, req.check, size);
        /* CPU atomics need their natural alignment, as a NIC's do */
        if (NULL != where && 0 != ((uintptr_t)where & (size - 1))) {
            where = NULL;
        }
    }
    if (NULL != where) {
        done.old = mca_btl_ofi_am_apply(&req, where);
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);
    if (NULL == where) {
        done.refused = 1;
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
    }
    if (NULL == origin || OPAL_SUCCESS != mca_btl_ofi_msg_send(rail, origin, &done, sizeof(done))) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "an atomic from %s was %s, but the answer could not "
                                            "be sent",
                            OPAL_NAME_PRINT(req.header.origin),
                            done.refused ? "refused" : "applied");
    }
}

/* Send one piece of get data (or, with data NULL, the refusal of len bytes). */
static int mca_btl_ofi_am_send_piece(mca_btl_ofi_rail_t *rail,
                                     struct mca_btl_base_endpoint_t *origin, uint64_t cookie,
                                     uint64_t offset, uint64_t len, const void *data)
{
    mca_btl_ofi_am_data_t piece = {
        .cookie = cookie,
        .offset = offset,
        .len = len,
        .refused = NULL == data,
    };
    size_t data_bytes = NULL == data ? 0 : (size_t)len;

    mca_btl_ofi_msg_header_init(&piece.header, MCA_BTL_OFI_MSG_GET_DATA,
                                sizeof(piece) + data_bytes);
    return mca_btl_ofi_msg_send_data(rail, origin, &piece, sizeof(piece), data, data_bytes);
}

/* A get of a peer: answer with the data in pieces, or refuse it. */
/* The pieces of a get's answer from a registration found whole (copy: a piece's buffer), each
 * taken from the registration as it is now (it may have gone). @return the bytes sent */
static uint64_t mca_btl_ofi_am_send_pieces(mca_btl_ofi_rail_t *rail,
                                           struct mca_btl_base_endpoint_t *origin,
                                           const mca_btl_ofi_am_get_msg_t *req, uint64_t piece,
                                           char *copy)
{
    uint64_t offset = 0;
    int rc = OPAL_SUCCESS;

    if (0 == req->size) {
        (void)mca_btl_ofi_am_send_piece(rail, origin, req->cookie, 0, 0, "");
    }
    while (offset < req->size && OPAL_SUCCESS == rc) {
        uint64_t len = req->size - offset < piece ? req->size - offset : piece;
        void *where;

        OPAL_THREAD_LOCK(&rail->reg_lock);
        where = mca_btl_ofi_am_where(rail, req->addr + offset, req->key, req->check, len);
        if (NULL != where) {
            memcpy(copy, where, len);
        }
        OPAL_THREAD_UNLOCK(&rail->reg_lock);
        if (NULL == where) {
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
            break;
        }
        rc = mca_btl_ofi_am_send_piece(rail, origin, req->cookie, offset, len, copy);
        if (OPAL_SUCCESS == rc) {
            offset += len;
        }
    }
    return offset;
}

static void mca_btl_ofi_am_get_answer(mca_btl_ofi_rail_t *rail,
                                      struct mca_btl_base_endpoint_t *origin, const void *buf,
                                      size_t bytes)
{
    mca_btl_ofi_am_get_msg_t req;
    uint64_t piece, offset = 0;
    char *copy = NULL;
    bool whole;

    if (bytes < sizeof(req) || NULL == origin) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a get request could not be answered (%s)",
                            NULL == origin ? "no endpoint for its sender" : "short message");
        return;
    }
    memcpy(&req, buf, sizeof(req));
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_MESSAGES_APPLIED, 1);
    piece = req.piece < MCA_BTL_OFI_AM_PIECE_MAX ? req.piece : MCA_BTL_OFI_AM_PIECE_MAX;
    OPAL_THREAD_LOCK(&rail->reg_lock);
    whole = NULL != mca_btl_ofi_am_where(rail, req.addr, req.key, req.check, req.size);
    OPAL_THREAD_UNLOCK(&rail->reg_lock);
    if (whole && req.size > 0 && 0 == piece) {
        whole = false; /* the origin cannot receive any data */
    }
    if (whole && req.size > 0 && NULL == (copy = malloc(req.size < piece ? req.size : piece))) {
        whole = false;
    }
    if (whole) {
        offset = mca_btl_ofi_am_send_pieces(rail, origin, &req, piece, copy);
    } else {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
    }
    free(copy);
    if (offset < req.size || !whole) {
        /* one refusal stands for every byte not sent, so the origin can account for all */
        if (OPAL_SUCCESS !=
            mca_btl_ofi_am_send_piece(rail, origin, req.cookie, offset, req.size - offset, NULL)) {
            opal_output_verbose(1, mca_btl_ofi_output,
                                MCA_BTL_OFI_LOG "a get from %s could not be answered",
                                OPAL_NAME_PRINT(req.header.origin));
        }
    }
}

/* ---- the origin ---------------------------------------------------------- */

static void mca_btl_ofi_am_atomic_done(mca_btl_ofi_rail_t *rail,
                                       struct mca_btl_base_endpoint_t *origin, const void *buf,
                                       size_t bytes)
{
    mca_btl_ofi_am_atomic_done_t done;
    mca_btl_ofi_op_t *op;

    (void)origin;
    if (bytes < sizeof(done)) {
        return;
    }
    memcpy(&done, buf, sizeof(done));
    op = (mca_btl_ofi_op_t *)(uintptr_t)done.cookie;
    if (!done.refused && op->emu.fetching) {
        memcpy(op->local_address, &done.old, (op->emu.dt & 1) ? 4 : 8);
    }
    mca_btl_ofi_op_finish(rail, op, done.refused ? OPAL_ERROR : OPAL_SUCCESS);
}

static void mca_btl_ofi_am_get_data(mca_btl_ofi_rail_t *rail,
                                    struct mca_btl_base_endpoint_t *origin, const void *buf,
                                    size_t bytes)
{
    mca_btl_ofi_am_data_t piece;
    mca_btl_ofi_op_t *op;

    (void)origin;
    if (bytes < sizeof(piece)) {
        return;
    }
    memcpy(&piece, buf, sizeof(piece));
    op = (mca_btl_ofi_op_t *)(uintptr_t)piece.cookie;
    if (piece.refused) {
        op->status = OPAL_ERROR;
    } else if (piece.len > bytes - sizeof(piece) || piece.offset > op->emu.operand ||
               piece.len > op->emu.operand - piece.offset) {
        /* not what was asked for: fail the get rather than write outside its buffer */
        op->status = OPAL_ERROR;
    } else if (piece.len > 0) {
        memcpy((char *)op->local_address + piece.offset, (const char *)buf + sizeof(piece),
               piece.len);
    }
    if (piece.len == atomic_fetch_sub(&op->am_remaining, piece.len)) {
        mca_btl_ofi_op_finish(rail, op, op->status);
    }
}

int mca_btl_ofi_am_start(mca_btl_ofi_rail_t *rail)
{
    rail->am_ready = false;
    rail->gets_as_messages = mca_btl_ofi_gets_by_messages(rail->info);
    if (NULL == rail->msg) {
        if (rail->gets_as_messages) {
            mca_btl_ofi_decline("messages-missing", rail->info->fabric_attr->prov_name,
                                "gets (no FI_READ, or btl_ofi_gets=messages)", NULL);
            return OPAL_ERR_NOT_SUPPORTED;
        }
        return OPAL_SUCCESS;
    }
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_ATOMIC, mca_btl_ofi_am_atomic_serve);
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_ATOMIC_DONE, mca_btl_ofi_am_atomic_done);
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_GET, mca_btl_ofi_am_get_answer);
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_GET_DATA, mca_btl_ofi_am_get_data);
    rail->am_ready = true;
    return OPAL_SUCCESS;
}

/* Send a request for op; on failure op is released and the BTL's return code given. */
static int mca_btl_ofi_am_request(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, const void *req,
                                  size_t bytes)
{
    int rc = mca_btl_ofi_msg_request(rail, op->endpoint, req, bytes, op);

    if (OPAL_SUCCESS != rc) {
        mca_btl_ofi_op_release(rail, op);
        return OPAL_ERR_OUT_OF_RESOURCE == rc ? rc : OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_am_atomic(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                          enum mca_btl_ofi_am_kind_t kind, mca_btl_base_atomic_op_t mca_op, int dt,
                          uint64_t operand, uint64_t compare, const mca_btl_ofi_target_t *target)
{
    mca_btl_ofi_am_atomic_msg_t req = {
        .cookie = (uint64_t)(uintptr_t)op,
        .addr = target->addr,
        .key = target->key,
        .check = target->check,
        .operand = operand,
        .compare = compare,
        .kind = (uint32_t)kind,
        .op = (uint32_t)mca_op,
        .dt = (uint32_t)dt,
    };
    int rc;

    op->emu = (mca_btl_ofi_emulation_t){
        .op = mca_op,
        .dt = dt,
        .fetching = MCA_BTL_OFI_AM_OP != kind,
    };
    mca_btl_ofi_msg_header_init(&req.header, MCA_BTL_OFI_MSG_ATOMIC, sizeof(req));
    rc = mca_btl_ofi_am_request(rail, op, &req, sizeof(req));
    if (OPAL_SUCCESS == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_ATOMICS_AS_MESSAGES, 1);
    }
    return rc;
}

int mca_btl_ofi_am_get(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
                       const mca_btl_ofi_target_t *target, size_t size,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    const size_t largest = mca_btl_ofi_msg_largest(rail);
    mca_btl_ofi_am_get_msg_t req = {
        .addr = target->addr,
        .key = target->key,
        .check = target->check,
        .size = size,
        .piece =
            largest > sizeof(mca_btl_ofi_am_data_t) ? largest - sizeof(mca_btl_ofi_am_data_t) : 0,
    };
    mca_btl_ofi_op_t *op;
    int rc;

    op = !mca_btl_ofi_op_room(rail)
             ? NULL
             : mca_btl_ofi_op_alloc(rail, mca_btl_ofi_op_finish, endpoint, local_address,
                                    local_handle, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == op)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    op->status = OPAL_SUCCESS;
    op->emu.operand = size; /* the buffer's size: no piece lands outside it */
    atomic_store(&op->am_remaining, size);
    req.cookie = (uint64_t)(uintptr_t)op;
    mca_btl_ofi_msg_header_init(&req.header, MCA_BTL_OFI_MSG_GET, sizeof(req));
    rc = mca_btl_ofi_am_request(rail, op, &req, sizeof(req));
    if (OPAL_SUCCESS == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_GETS, 1);
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_GET_BYTES, size);
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_GETS_AS_MESSAGES, 1);
    }
    return rc;
}
