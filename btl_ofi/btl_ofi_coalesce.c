/*
 * btl-ofi small-put coalescing.
 *
 * Why: on tcp;ofi_rxm every put is one message on the peer's connection and
 * one acknowledgement back (delivery-complete), whatever its size, so 8-byte
 * puts run at the provider's message rate (about 0.12M/s between two network
 * namespaces, osc_harness/PERFORMANCE.md), where osc/pt2pt ships a flush's
 * worth of puts in one message.
 *
 * What: a put of at most btl_ofi_put_coalesce_max bytes to a peer with
 * nothing of ours in flight goes out as an fi_write, as without coalescing,
 * so a lone put + flush costs what it did. While a put or batch to that peer
 * is in flight, and while the peer gets bursts (its last batch held more
 * than one put, or formed behind something in flight; a batch of one lone
 * put ends that), further small puts are copied into a batch: records of
 * (translated address, key, length, data). A batch is sent (fi_send) when it
 * is full or at the next progress call; flush progresses, so flush sends it.
 * The peer's progress takes it from one of its posted receive buffers, checks
 * every record against its registrations (key, bounds) as a provider would,
 * copies the data and answers once, naming the records it refused. The
 * origin runs each put's callback when that answer arrives, so a callback
 * still means that the data is at the target.
 *
 * Where: auto (-1) turns it on for the tcp provider, whose RMA the target's
 * own progress carries out (FI_PROGRESS_MANUAL): there the data lands when
 * the target progresses either way. On hardware RMA or a provider with its
 * own progress it would move the copy onto the target's CPU, so it stays off
 * there unless btl_ofi_put_coalesce=1.
 */

#include "btl_ofi_coalesce.h"

#include <string.h>

#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"

#include "btl_ofi_endpoint.h"
#include "btl_ofi_msg.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"

/* Record bytes in one batch, the most puts in one, and receive buffers posted. */
#define MCA_BTL_OFI_CO_BYTES 8192
#define MCA_BTL_OFI_CO_RECORDS 256
#define MCA_BTL_OFI_CO_RECVS 32

#define MCA_BTL_OFI_CO_PAD(n) (((n) + 7) & ~(size_t)7)

/* The wire: a header, then count records, each followed by its data padded to 8 bytes. */
typedef struct mca_btl_ofi_co_header_t {
    mca_btl_ofi_msg_header_t msg; /**< MCA_BTL_OFI_MSG_PUTS */
    uint32_t count;
    uint32_t bytes;  /**< record bytes after this header */
    uint64_t cookie; /**< the origin's batch, returned in the answer */
} mca_btl_ofi_co_header_t;

typedef struct mca_btl_ofi_co_record_t {
    uint64_t addr; /**< as fi_write takes it: virtual, or an offset from the base */
    uint64_t key;
    uint32_t len;
    uint32_t reserved;
} mca_btl_ofi_co_record_t;

typedef struct mca_btl_ofi_co_ack_t {
    mca_btl_ofi_msg_header_t msg; /**< MCA_BTL_OFI_MSG_PUTS_DONE */
    uint32_t refused;             /**< records the target refused (bad key or out of bounds) */
    uint32_t reserved;
    uint64_t cookie;
    uint64_t refused_bits[MCA_BTL_OFI_CO_RECORDS / 64];
} mca_btl_ofi_co_ack_t;

#define MCA_BTL_OFI_CO_MSG_MAX (sizeof(mca_btl_ofi_co_header_t) + MCA_BTL_OFI_CO_BYTES)

/* What the caller of one gathered put gets back. */
typedef struct mca_btl_ofi_co_put_t {
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
} mca_btl_ofi_co_put_t;

/* One batch at the origin: open (its endpoint's), waiting to be sent, or in flight. */
typedef struct mca_btl_ofi_batch_t {
    opal_list_item_t super;
    /** counts the batch as outstanding; its context receives the send's completion */
    mca_btl_ofi_op_t *op;
    struct mca_btl_base_endpoint_t *endpoint;
    atomic_int pending; /**< the send's completion and the answer */
    int status;         /**< the send's error, else OPAL_SUCCESS */
    uint64_t refused_bits[MCA_BTL_OFI_CO_RECORDS / 64];
    mca_btl_ofi_co_put_t puts[MCA_BTL_OFI_CO_RECORDS];
    union {
        mca_btl_ofi_co_header_t header;
        uint64_t bytes[MCA_BTL_OFI_CO_MSG_MAX / 8];
    } msg;
} mca_btl_ofi_batch_t;
static OBJ_CLASS_INSTANCE(mca_btl_ofi_batch_t, opal_list_item_t, NULL, NULL);

struct mca_btl_ofi_coalesce_t {
    opal_mutex_t lock; /**< the lists below, every endpoint's batch and co_bursty, and
                            the decisions on its co_in_flight */
    opal_list_t ready; /**< batches to send at the next progress (open ones included) */
    /** batches whose send failed: kept until finalize, since an answer could still name one */
    opal_list_t dead;
};

/* ---- setup ------------------------------------------------------------- */

bool mca_btl_ofi_coalesce_wanted(const struct fi_info *info)
{
    const char *name = info->fabric_attr->prov_name;

    if (0 <= mca_btl_ofi_params.put_coalesce) {
        return 1 == mca_btl_ofi_params.put_coalesce;
    }
    /* tcp and tcp;ofi_rxm: the core provider is tcp */
    return 3 == strcspn(name, ";") && 0 == strncmp(name, "tcp", 3);
}

size_t mca_btl_ofi_coalesce_message_size(void)
{
    return sizeof(mca_btl_ofi_co_header_t) + MCA_BTL_OFI_CO_BYTES;
}

int mca_btl_ofi_coalesce_receive_buffers(void)
{
    return MCA_BTL_OFI_CO_RECVS;
}

static void mca_btl_ofi_co_apply(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *origin,
                                 const void *buf, size_t bytes);
static void mca_btl_ofi_co_acked(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *origin,
                                 const void *buf, size_t bytes);
static void mca_btl_ofi_co_progress(mca_btl_ofi_rail_t *rail);

static const char *mca_btl_ofi_co_unusable(const mca_btl_ofi_rail_t *rail)
{
    if (NULL == rail->msg) {
        return "btl-ofi sends no messages on it";
    }
    if (rail->mr_local) {
        return "FI_MR_LOCAL (its batches would need registrations)";
    }
    return NULL;
}

void mca_btl_ofi_coalesce_start(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_coalesce_t *co;
    const char *why;

    if (!rail->coalesce) {
        return;
    }
    rail->coalesce = false;
    why = mca_btl_ofi_co_unusable(rail);
    if (NULL != why) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "puts are not coalesced on %s: %s",
                            rail->info->fabric_attr->prov_name, why);
        return;
    }
    co = calloc(1, sizeof(*co));
    if (NULL == co) {
        return;
    }
    OBJ_CONSTRUCT(&co->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&co->ready, opal_list_t);
    OBJ_CONSTRUCT(&co->dead, opal_list_t);
    rail->co = co;
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_PUTS, mca_btl_ofi_co_apply);
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_PUTS_DONE, mca_btl_ofi_co_acked);
    rail->co_progress = mca_btl_ofi_co_progress;
    rail->coalesce = true;
    rail->coalesce_max = (size_t)mca_btl_ofi_params.put_coalesce_max;
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "puts of up to %zu bytes to a peer with one in flight "
                                        "are gathered into messages (btl_ofi_put_coalesce=%d)",
                        rail->coalesce_max, mca_btl_ofi_params.put_coalesce);
}

static void mca_btl_ofi_co_list_free(opal_list_t *list)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(list))) {
        OBJ_RELEASE(item);
    }
    OBJ_DESTRUCT(list);
}

void mca_btl_ofi_coalesce_stop(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_coalesce_t *co = rail->co;

    if (NULL == co) {
        return;
    }
    rail->co = NULL;
    rail->co_progress = NULL;
    rail->coalesce = false;
    /* the endpoint is closed (a failed NIC's: never called again): what is left here will
     * complete no more */
    mca_btl_ofi_co_list_free(&co->ready);
    mca_btl_ofi_co_list_free(&co->dead);
    OBJ_DESTRUCT(&co->lock);
    free(co);
}

/* ---- the origin ---------------------------------------------------------- */

static void mca_btl_ofi_co_batch_part(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status);

static mca_btl_ofi_batch_t *mca_btl_ofi_co_batch_new(mca_btl_ofi_rail_t *rail,
                                                     struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_batch_t *batch = OBJ_NEW(mca_btl_ofi_batch_t);

    if (NULL == batch) {
        return NULL;
    }
    batch->op = mca_btl_ofi_op_alloc(rail, mca_btl_ofi_co_batch_part, endpoint, batch, NULL, NULL,
                                     NULL, NULL);
    if (NULL == batch->op) {
        OBJ_RELEASE(batch);
        return NULL;
    }
    batch->endpoint = endpoint;
    batch->status = OPAL_SUCCESS;
    memset(batch->refused_bits, 0, sizeof(batch->refused_bits));
    batch->msg.header = (mca_btl_ofi_co_header_t){
        .count = 0,
        .bytes = 0,
        .cookie = (uint64_t)(uintptr_t)batch,
    };
    mca_btl_ofi_msg_header_init(&batch->msg.header.msg, MCA_BTL_OFI_MSG_PUTS,
                                sizeof(mca_btl_ofi_co_header_t));
    return batch;
}

static bool mca_btl_ofi_co_fits(const mca_btl_ofi_batch_t *batch, size_t size)
{
    const mca_btl_ofi_co_header_t *header = &batch->msg.header;

    return header->count < MCA_BTL_OFI_CO_RECORDS &&
           header->bytes + sizeof(mca_btl_ofi_co_record_t) + MCA_BTL_OFI_CO_PAD(size) <=
               MCA_BTL_OFI_CO_BYTES;
}

/*
 * Under the lock: the endpoint's open batch leaves it, to be sent. A batch of
 * more than one put, or one that formed behind a put or batch in flight, marks
 * the peer as receiving bursts; a single put with nothing in flight unmarks it.
 */
static void mca_btl_ofi_co_close_batch(mca_btl_ofi_batch_t *batch)
{
    struct mca_btl_base_endpoint_t *endpoint = batch->endpoint;

    endpoint->co_bursty = batch->msg.header.count > 1 || atomic_load(&endpoint->co_in_flight) > 0;
    endpoint->batch = NULL;
    atomic_fetch_add(&endpoint->co_in_flight, 1);
}

/* Every put of a batch is done: run their callbacks. */
static void mca_btl_ofi_co_batch_finish(mca_btl_ofi_rail_t *rail, mca_btl_ofi_batch_t *batch)
{
    struct mca_btl_base_endpoint_t *endpoint = batch->endpoint;

    atomic_fetch_sub(&endpoint->co_in_flight, 1);
    for (uint32_t i = 0; i < batch->msg.header.count; ++i) {
        const mca_btl_ofi_co_put_t *put = &batch->puts[i];
        int status = batch->status;

        if (OPAL_SUCCESS == status && (batch->refused_bits[i / 64] >> (i % 64)) & 1) {
            status = OPAL_ERROR;
        }
        if (NULL != put->cbfunc) {
            put->cbfunc(rail->config.hooks.btl, endpoint, put->local_address, put->local_handle,
                        put->cbcontext, put->cbdata, status);
        }
    }
    mca_btl_ofi_op_release(rail, batch->op);
    batch->op = NULL;
}

/*
 * One of a batch's two events: the send's completion or the answer (status
 * OPAL_SUCCESS, from mca_btl_ofi_co_acked). A failed send gets no answer: its
 * puts fail now, and the batch is kept until finalize in case one comes anyway.
 */
static void mca_btl_ofi_co_batch_event(mca_btl_ofi_rail_t *rail, mca_btl_ofi_batch_t *batch,
                                       int status)
{
    if (OPAL_SUCCESS != status) {
        batch->status = status;
        if (atomic_exchange(&batch->pending, 0) <= 0) {
            return;
        }
        mca_btl_ofi_co_batch_finish(rail, batch);
        OPAL_THREAD_LOCK(&rail->co->lock);
        opal_list_append(&rail->co->dead, &batch->super);
        OPAL_THREAD_UNLOCK(&rail->co->lock);
        return;
    }
    if (1 != atomic_fetch_sub(&batch->pending, 1)) {
        return;
    }
    mca_btl_ofi_co_batch_finish(rail, batch);
    OBJ_RELEASE(batch);
}

/* The completion of a batch's send (its op's handler). */
static void mca_btl_ofi_co_batch_part(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status)
{
    mca_btl_ofi_co_batch_event(rail, (mca_btl_ofi_batch_t *)op->local_address, status);
}

static void mca_btl_ofi_co_send(mca_btl_ofi_rail_t *rail, mca_btl_ofi_batch_t *batch)
{
    mca_btl_ofi_co_header_t *header = &batch->msg.header;
    ssize_t rc;

    header->msg.bytes = (uint32_t)(sizeof(*header) + header->bytes);
    atomic_store(&batch->pending, 2);
    rc = fi_send(rail->ep, header, sizeof(*header) + header->bytes, NULL,
                 batch->endpoint->peer_addr, &batch->op->fi_ctx);
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_PUT_BATCHES, 1);
        return;
    }
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_POST_EAGAIN, 1);
        OPAL_THREAD_LOCK(&rail->co->lock);
        opal_list_append(&rail->co->ready, &batch->super);
        OPAL_THREAD_UNLOCK(&rail->co->lock);
        mca_btl_ofi_rail_pass_wants(rail, MCA_BTL_OFI_PASS_CO);
        return;
    }
    opal_output_verbose(1, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "fi_send (gathered puts) failed: %s (%zd)",
                        fi_strerror((int)-rc), rc);
    mca_btl_ofi_co_batch_event(rail, batch, OPAL_ERROR);
}

static void mca_btl_ofi_co_add(mca_btl_ofi_batch_t *batch, const void *data, uint64_t target,
                               uint64_t key, size_t size, const mca_btl_ofi_co_put_t *put)
{
    mca_btl_ofi_co_header_t *header = &batch->msg.header;
    char *at = (char *)(header + 1) + header->bytes;
    mca_btl_ofi_co_record_t record = {.addr = target, .key = key, .len = (uint32_t)size};

    memcpy(at, &record, sizeof(record));
    memcpy(at + sizeof(record), data, size);
    /* the padding goes on the wire too: never uninitialised bytes */
    memset(at + sizeof(record) + size, 0, MCA_BTL_OFI_CO_PAD(size) - size);
    header->bytes += (uint32_t)(sizeof(record) + MCA_BTL_OFI_CO_PAD(size));
    batch->puts[header->count++] = *put;
}

int mca_btl_ofi_coalesce_put(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                             void *local_address, uint64_t target, uint64_t key, size_t size,
                             struct mca_btl_base_registration_handle_t *local_handle,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                             void *cbdata)
{
    const mca_btl_ofi_co_put_t put = {cbfunc, cbcontext, cbdata, local_address, local_handle};
    struct mca_btl_ofi_coalesce_t *co = rail->co;
    mca_btl_ofi_batch_t *batch, *full = NULL;

    OPAL_THREAD_LOCK(&co->lock);
    batch = endpoint->batch;
    /* Nothing in flight to this peer, and no burst lately: an fi_write, tracked. */
    if (NULL == batch && 0 == atomic_load(&endpoint->co_in_flight) && !endpoint->co_bursty) {
        atomic_fetch_add(&endpoint->co_in_flight, 1);
        OPAL_THREAD_UNLOCK(&co->lock);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (NULL != batch && !mca_btl_ofi_co_fits(batch, size)) {
        opal_list_remove_item(&co->ready, &batch->super);
        mca_btl_ofi_co_close_batch(batch);
        full = batch;
        batch = NULL;
    }
    if (NULL == batch && NULL != (batch = mca_btl_ofi_co_batch_new(rail, endpoint))) {
        endpoint->batch = batch;
        opal_list_append(&co->ready, &batch->super);
    }
    if (NULL != batch) {
        mca_btl_ofi_co_add(batch, local_address, target, key, size, &put);
    }
    OPAL_THREAD_UNLOCK(&co->lock);
    if (NULL != batch) {
        mca_btl_ofi_rail_pass_wants(rail, MCA_BTL_OFI_PASS_CO);
    }

    if (NULL != full) {
        mca_btl_ofi_co_send(rail, full);
    }
    if (NULL == batch) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_PUTS, 1);
    if (rail->config.count_local) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_LOCAL_PUTS, 1);
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_PUT_BYTES, size);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_PUTS_GATHERED, 1);
    return OPAL_SUCCESS;
}

/* ---- the target ---------------------------------------------------------- */

/* Under rail->reg_lock: where a record's data goes, or NULL if a provider would refuse it. */
static void *mca_btl_ofi_co_where(mca_btl_ofi_rail_t *rail, const mca_btl_ofi_co_record_t *record)
{
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_find(rail, record->key);
    uint64_t offset;

    if (NULL == reg) {
        return NULL;
    }
    if (rail->virt_addr && record->addr < reg->handle.base) {
        return NULL;
    }
    offset = rail->virt_addr ? record->addr - reg->handle.base : record->addr;
    if (record->len > reg->handle.len || offset > reg->handle.len - record->len) {
        return NULL;
    }
    return (char *)(uintptr_t)reg->handle.base + offset;
}

/* Write a batch's records into this process's registrations and answer it. */
static void mca_btl_ofi_co_apply(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *origin,
                                 const void *buf, size_t bytes)
{
    const char *msg = buf;
    const mca_btl_ofi_co_header_t *header = (const mca_btl_ofi_co_header_t *)msg;
    const uint32_t count =
        header->count < MCA_BTL_OFI_CO_RECORDS ? header->count : MCA_BTL_OFI_CO_RECORDS;
    const size_t end =
        bytes < sizeof(*header) + header->bytes ? bytes : sizeof(*header) + header->bytes;
    mca_btl_ofi_co_ack_t ack = {.cookie = header->cookie};
    size_t at = sizeof(*header);

    if (bytes < sizeof(*header)) {
        return;
    }
    mca_btl_ofi_msg_header_init(&ack.msg, MCA_BTL_OFI_MSG_PUTS_DONE, sizeof(ack));
    OPAL_THREAD_LOCK(&rail->reg_lock);
    for (uint32_t i = 0; i < count; ++i) {
        mca_btl_ofi_co_record_t record = {0};
        void *where = NULL;

        if (at + sizeof(record) <= end) {
            memcpy(&record, msg + at, sizeof(record));
            at += sizeof(record);
            if (record.len <= end - at) {
                where = mca_btl_ofi_co_where(rail, &record);
            }
        }
        if (NULL == where) {
            ack.refused_bits[i / 64] |= UINT64_C(1) << (i % 64);
            ack.refused++;
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
        } else {
            memcpy(where, msg + at, record.len);
        }
        at += MCA_BTL_OFI_CO_PAD(record.len);
        at = at < end ? at : end;
    }
    OPAL_THREAD_UNLOCK(&rail->reg_lock);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_PUT_BATCHES_APPLIED, 1);

    if (NULL == origin) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "gathered puts from %s were applied, but that "
                                            "process cannot be answered: no endpoint",
                            OPAL_NAME_PRINT(header->msg.origin));
        return;
    }
    if (OPAL_SUCCESS != mca_btl_ofi_msg_send(rail, origin, &ack, sizeof(ack))) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "answering gathered puts from %s failed",
                            OPAL_NAME_PRINT(origin->proc->proc_name));
    }
}

static void mca_btl_ofi_co_acked(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *origin,
                                 const void *buf, size_t bytes)
{
    mca_btl_ofi_co_ack_t ack;
    mca_btl_ofi_batch_t *batch;

    (void)origin;
    if (bytes < sizeof(ack)) {
        return;
    }
    memcpy(&ack, buf, sizeof(ack));
    batch = (mca_btl_ofi_batch_t *)(uintptr_t)ack.cookie;
    memcpy(batch->refused_bits, ack.refused_bits, sizeof(batch->refused_bits));
    mca_btl_ofi_co_batch_event(rail, batch, OPAL_SUCCESS);
}

/* ---- progress ------------------------------------------------------------ */

static void mca_btl_ofi_co_progress(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_coalesce_t *co = rail->co;
    opal_list_t send;
    opal_list_item_t *item;

    /* called when rail->pass_work says so: the list is read under its lock */
    OBJ_CONSTRUCT(&send, opal_list_t);
    OPAL_THREAD_LOCK(&co->lock);
    while (NULL != (item = opal_list_remove_first(&co->ready))) {
        mca_btl_ofi_batch_t *batch = (mca_btl_ofi_batch_t *)item;

        if (batch->endpoint->batch == batch) {
            mca_btl_ofi_co_close_batch(batch);
        }
        opal_list_append(&send, item);
    }
    OPAL_THREAD_UNLOCK(&co->lock);
    while (NULL != (item = opal_list_remove_first(&send))) {
        mca_btl_ofi_co_send(rail, (mca_btl_ofi_batch_t *)item);
    }
    OBJ_DESTRUCT(&send);
}
