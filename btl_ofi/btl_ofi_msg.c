/*
 * btl-ofi messages: fi_send / fi_recv beside RMA.
 *
 * Some of what this BTL does needs the peer's progress to act for it: apply
 * gathered puts (btl_ofi_coalesce.c), name the registration behind an
 * address (btl_ofi_locate.c), apply atomics and answer gets the provider
 * cannot do (btl_ofi_am.c). All travel as messages on the one endpoint.
 * FI_MSG is asked for beside what discovery chose (a second fi_getinfo with
 * that info as hints); a provider that does not grant it leaves them out.
 *
 * Receiving: a fixed set of buffers stays posted (registered once under
 * FI_MR_LOCAL); a completed one goes to the handler of its message's type
 * and is posted again. Sending: small messages are copied, then injected
 * when they fit the provider's inject size, else sent from the copy (with a
 * registration for that send under FI_MR_LOCAL); one the provider refuses
 * with -FI_EAGAIN waits in a queue that progress empties.
 */

#include "btl_ofi_msg.h"

#include <string.h>

#include "opal/class/opal_list.h"

#include "btl_ofi_discovery.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_pvar.h"

/*
 * A message on its way: copied so that the caller's buffer is free at once;
 * small ones into the item itself, larger ones (get data) into memory of their own.
 */
typedef struct mca_btl_ofi_msg_out_t {
    opal_list_item_t super;
    struct mca_btl_base_endpoint_t *endpoint;
    size_t bytes;
    void *data; /**< small, or big */
    void *big;  /**< a message larger than small, else NULL */
    /** an operation that waits for the peer's answer to this message (a request), or NULL:
     *  if the message fails after its sender was told it was sent, the operation fails */
    mca_btl_ofi_op_t *waiting;
    uint64_t small[MCA_BTL_OFI_MSG_SMALL / sizeof(uint64_t)];
} mca_btl_ofi_msg_out_t;

static void mca_btl_ofi_msg_out_destruct(mca_btl_ofi_msg_out_t *out)
{
    free(out->big);
}
static OBJ_CLASS_INSTANCE(mca_btl_ofi_msg_out_t, opal_list_item_t, NULL,
                          mca_btl_ofi_msg_out_destruct);

struct mca_btl_ofi_msg_t {
    opal_mutex_t lock;  /**< queued */
    opal_list_t queued; /**< messages the provider refused with -FI_EAGAIN */
    mca_btl_ofi_msg_fn_t handlers[MCA_BTL_OFI_MSG_TYPES];
    size_t largest; /**< bytes of one receive buffer */
    size_t inject_size;
    int nbufs;
    char *bufs;
    mca_btl_ofi_reg_t *bufs_reg; /**< FI_MR_LOCAL: the receive buffers' registration */
    mca_btl_ofi_op_t **recvs;
};

static void mca_btl_ofi_msg_progress(mca_btl_ofi_rail_t *rail);

/* ---- setup --------------------------------------------------------------- */

bool mca_btl_ofi_msg_prepare(struct fi_info **info)
{
    struct fi_info *hints, *found = NULL;
    uint32_t version;
    int rc;

    if ((FI_MSG | FI_SEND | FI_RECV) == ((*info)->caps & (FI_MSG | FI_SEND | FI_RECV))) {
        return true; /* discovery asked for it already (atomics or gets as messages) */
    }
    hints = fi_dupinfo(*info);
    if (NULL == hints) {
        return false;
    }
    /* With FI_READ and FI_WRITE named, FI_SEND and FI_RECV are not implied. */
    hints->caps |= FI_MSG | FI_SEND | FI_RECV;
    version = (hints->caps & FI_HMEM) ? MCA_BTL_OFI_FI_VERSION_HMEM : MCA_BTL_OFI_FI_VERSION;
    rc = fi_getinfo(version, NULL, NULL, 0, hints, &found);
    fi_freeinfo(hints);
    if (0 != rc || NULL == found ||
        0 != strcmp(found->fabric_attr->prov_name, (*info)->fabric_attr->prov_name)) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s grants no FI_MSG beside what btl-ofi uses (%s): "
                                            "puts are not gathered, an access whose "
                                            "registration handle does not cover it is refused "
                                            "instead of located at the peer, and atomics and "
                                            "gets cannot travel as messages",
                            (*info)->fabric_attr->prov_name,
                            rc ? fi_strerror(-rc) : "another provider");
        fi_freeinfo(found);
        return false;
    }
    fi_freeinfo(found->next);
    found->next = NULL;
    fi_freeinfo(*info);
    *info = found;
    return true;
}

static void mca_btl_ofi_msg_received(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status);

static void mca_btl_ofi_msg_post_recv(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    struct mca_btl_ofi_msg_t *msg = rail->msg;
    void *desc = NULL == msg->bufs_reg ? NULL : msg->bufs_reg->desc;
    ssize_t rc =
        fi_recv(rail->ep, op->local_address, msg->largest, desc, FI_ADDR_UNSPEC, &op->fi_ctx);

    if (OPAL_LIKELY(0 == rc)) {
        return;
    }
    if (-FI_EAGAIN == rc) {
        mca_btl_ofi_defer(rail, op, mca_btl_ofi_msg_post_recv);
        return;
    }
    opal_output_verbose(1, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "fi_recv (messages) failed: %s; one receive buffer fewer",
                        fi_strerror((int)-rc));
}

static void mca_btl_ofi_msg_free(struct mca_btl_ofi_msg_t *msg)
{
    opal_list_item_t *item;

    for (int i = 0; NULL != msg->recvs && i < msg->nbufs; ++i) {
        if (NULL != msg->recvs[i]) {
            OBJ_RELEASE(msg->recvs[i]);
        }
    }
    free(msg->recvs);
    free(msg->bufs);
    while (NULL != (item = opal_list_remove_first(&msg->queued))) {
        OBJ_RELEASE(item);
    }
    OBJ_DESTRUCT(&msg->queued);
    OBJ_DESTRUCT(&msg->lock);
    free(msg);
}

/* The receive buffers, registered under FI_MR_LOCAL; false when memory ran out. */
static bool mca_btl_ofi_msg_alloc(mca_btl_ofi_rail_t *rail, struct mca_btl_ofi_msg_t *msg)
{
    msg->bufs = malloc((size_t)msg->nbufs * msg->largest);
    msg->recvs = calloc((size_t)msg->nbufs, sizeof(*msg->recvs));
    if (NULL == msg->bufs || NULL == msg->recvs) {
        return false;
    }
    if (rail->mr_local) {
        msg->bufs_reg = mca_btl_ofi_reg_create(rail, msg->bufs, (size_t)msg->nbufs * msg->largest);
        if (NULL == msg->bufs_reg) {
            return false;
        }
    }
    for (int i = 0; i < msg->nbufs; ++i) {
        mca_btl_ofi_op_t *op = OBJ_NEW(mca_btl_ofi_op_t);

        if (NULL == op) {
            return false;
        }
        op->complete = mca_btl_ofi_msg_received;
        op->local_address = msg->bufs + (size_t)i * msg->largest;
        msg->recvs[i] = op;
    }
    return true;
}

void mca_btl_ofi_msg_start(mca_btl_ofi_rail_t *rail, size_t largest, int buffers)
{
    struct mca_btl_ofi_msg_t *msg = calloc(1, sizeof(*msg));

    if (NULL == msg) {
        return;
    }
    OBJ_CONSTRUCT(&msg->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&msg->queued, opal_list_t);
    if (mca_btl_ofi_gets_by_messages(rail->info)) {
        /* A get's data comes back in pieces of one receive buffer each. Their number stays
         * the caller's: the CQ is sized for it (btl_ofi_device.c). */
        largest = largest < MCA_BTL_OFI_MSG_LARGE ? MCA_BTL_OFI_MSG_LARGE : largest;
    }
    msg->largest = largest < MCA_BTL_OFI_MSG_SMALL ? MCA_BTL_OFI_MSG_SMALL : largest;
    msg->nbufs = buffers;
    msg->inject_size = rail->info->tx_attr->inject_size;
    if (!mca_btl_ofi_msg_alloc(rail, msg)) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "no memory (or registration) for message buffers: "
                                            "btl-ofi sends no messages");
        if (NULL != msg->bufs_reg) {
            mca_btl_ofi_reg_destroy(msg->bufs_reg);
        }
        mca_btl_ofi_msg_free(msg);
        return;
    }
    rail->msg = msg;
    for (int i = 0; i < msg->nbufs; ++i) {
        mca_btl_ofi_msg_post_recv(rail, msg->recvs[i]);
    }
    rail->msg_progress = mca_btl_ofi_msg_progress;
}

void mca_btl_ofi_msg_on(mca_btl_ofi_rail_t *rail, enum mca_btl_ofi_msg_type_t type,
                        mca_btl_ofi_msg_fn_t fn)
{
    rail->msg->handlers[type] = fn;
}

void mca_btl_ofi_msg_deregister(mca_btl_ofi_rail_t *rail)
{
    if (NULL != rail->msg && NULL != rail->msg->bufs_reg) {
        mca_btl_ofi_reg_destroy(rail->msg->bufs_reg);
        rail->msg->bufs_reg = NULL;
    }
}

void mca_btl_ofi_msg_stop(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_msg_t *msg = rail->msg;

    if (NULL == msg) {
        return;
    }
    rail->msg = NULL;
    rail->msg_progress = NULL;
    mca_btl_ofi_msg_deregister(rail);
    /* the endpoint is closed (a failed NIC's: never called again): nothing completes into
     * these any more */
    mca_btl_ofi_msg_free(msg);
}

/* ---- receiving ----------------------------------------------------------- */

/* Hand one received message to its handler, if it is one of ours and whole. */
static void mca_btl_ofi_msg_dispatch(mca_btl_ofi_rail_t *rail, const void *buf)
{
    const struct mca_btl_ofi_msg_t *msg = rail->msg;
    mca_btl_ofi_msg_header_t header;
    mca_btl_ofi_msg_fn_t handler = NULL;

    memcpy(&header, buf, sizeof(header));
    if (MCA_BTL_OFI_MSG_MAGIC == header.magic && header.type < MCA_BTL_OFI_MSG_TYPES &&
        header.bytes >= sizeof(header) && header.bytes <= msg->largest) {
        handler = msg->handlers[header.type];
    }
    if (NULL == handler) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a message that is not btl-ofi's (or not whole) was "
                                            "dropped");
        return;
    }
    handler(rail, mca_btl_ofi_endpoint_by_name(rail, &header.origin), buf, header.bytes);
}

/* A receive buffer got a message (or an error): act on it and post the buffer again. */
static void mca_btl_ofi_msg_received(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status)
{
    if (OPAL_SUCCESS == status) {
        mca_btl_ofi_msg_dispatch(rail, op->local_address);
    }
    if (rail->initialized) {
        mca_btl_ofi_msg_post_recv(rail, op);
    }
}

/* ---- sending ------------------------------------------------------------- */

void mca_btl_ofi_msg_header_init(mca_btl_ofi_msg_header_t *header, enum mca_btl_ofi_msg_type_t type,
                                 size_t bytes)
{
    *header = (mca_btl_ofi_msg_header_t){
        .magic = MCA_BTL_OFI_MSG_MAGIC,
        .type = (uint32_t)type,
        .bytes = (uint32_t)bytes,
        .origin = opal_proc_local_get()->proc_name,
    };
}

/* A message is lost for good after its sender was told it went: no answer will come, so
 * the operation waiting for one fails (its callback gets OPAL_ERROR, MPI an error). */
static void mca_btl_ofi_msg_lost(mca_btl_ofi_rail_t *rail, mca_btl_ofi_msg_out_t *out)
{
    if (NULL != out->waiting) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a request to %s was lost: its operation fails",
                            OPAL_NAME_PRINT(out->endpoint->proc->proc_name));
        mca_btl_ofi_op_finish(rail, out->waiting, OPAL_ERROR);
        out->waiting = NULL;
    }
}

/* A message sent from its copy (no inject) completed. */
static void mca_btl_ofi_msg_sent(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op, int status)
{
    mca_btl_ofi_msg_out_t *out = (mca_btl_ofi_msg_out_t *)op->local_address;

    /* a failure was reported by the completion queue already (cq-error) */
    if (OPAL_SUCCESS != status) {
        mca_btl_ofi_msg_lost(rail, out);
    }
    OBJ_RELEASE(out);
    mca_btl_ofi_op_release(rail, op);
}

/*
 * Post one message. OPAL_SUCCESS: the provider has it; OPAL_ERR_OUT_OF_RESOURCE:
 * -FI_EAGAIN (or no operation context), keep it; OPAL_ERROR: failed, and it is gone.
 */
static int mca_btl_ofi_msg_post(mca_btl_ofi_rail_t *rail, mca_btl_ofi_msg_out_t *out)
{
    struct mca_btl_base_endpoint_t *endpoint = out->endpoint;
    mca_btl_ofi_op_t *op;
    void *desc;
    int rc;

    op = mca_btl_ofi_op_alloc(rail, mca_btl_ofi_msg_sent, endpoint, out, NULL, NULL, NULL, NULL);
    if (NULL == op) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (out->bytes <= rail->msg->inject_size) {
        /* an inject's buffer is free again at once: done when posted */
        rc = mca_btl_ofi_post_result(
            rail, op, fi_inject(rail->ep, out->data, out->bytes, endpoint->peer_addr),
            "fi_inject (message)");
        if (OPAL_SUCCESS == rc) {
            mca_btl_ofi_msg_sent(rail, op, OPAL_SUCCESS);
        }
    } else if (!mca_btl_ofi_op_desc(rail, op, out->data, out->bytes, &desc)) {
        rc = OPAL_ERROR; /* no registration for it; op was released */
    } else {
        rc = mca_btl_ofi_post_result(
            rail, op,
            fi_send(rail->ep, out->data, out->bytes, desc, endpoint->peer_addr, &op->fi_ctx),
            "fi_send (message)");
    }
    if (OPAL_ERROR == rc) {
        OBJ_RELEASE(out);
    }
    return rc;
}

static void mca_btl_ofi_msg_queue(mca_btl_ofi_rail_t *rail, mca_btl_ofi_msg_out_t *out)
{
    OPAL_THREAD_LOCK(&rail->msg->lock);
    opal_list_append(&rail->msg->queued, &out->super);
    OPAL_THREAD_UNLOCK(&rail->msg->lock);
    mca_btl_ofi_rail_pass_wants(rail, MCA_BTL_OFI_PASS_MSG);
}

/* Copy head and data into a new message and send it (or queue it after -FI_EAGAIN);
 * waiting: see mca_btl_ofi_msg_out_t. */
static int mca_btl_ofi_msg_copy_send(mca_btl_ofi_rail_t *rail,
                                     struct mca_btl_base_endpoint_t *endpoint, const void *head,
                                     size_t head_bytes, const void *data, size_t bytes,
                                     mca_btl_ofi_op_t *waiting)
{
    const size_t total = head_bytes + bytes;
    mca_btl_ofi_msg_out_t *out = OBJ_NEW(mca_btl_ofi_msg_out_t);
    int rc;

    if (NULL == out) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    out->data = out->small;
    out->big = NULL;
    if (total > sizeof(out->small)) {
        out->big = malloc(total);
        if (NULL == out->big) {
            OBJ_RELEASE(out);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        out->data = out->big;
    }
    out->endpoint = endpoint;
    out->waiting = waiting;
    out->bytes = total;
    memcpy(out->data, head, head_bytes);
    if (bytes > 0) {
        memcpy((char *)out->data + head_bytes, data, bytes);
    }
    rc = mca_btl_ofi_msg_post(rail, out);
    if (OPAL_ERR_OUT_OF_RESOURCE == rc) {
        mca_btl_ofi_msg_queue(rail, out);
        return OPAL_SUCCESS;
    }
    return rc;
}

int mca_btl_ofi_msg_send(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         const void *msg, size_t bytes)
{
    if (bytes > MCA_BTL_OFI_MSG_SMALL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return mca_btl_ofi_msg_copy_send(rail, endpoint, msg, bytes, NULL, 0, NULL);
}

int mca_btl_ofi_msg_request(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                            const void *msg, size_t bytes, mca_btl_ofi_op_t *waiting)
{
    if (bytes > MCA_BTL_OFI_MSG_SMALL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return mca_btl_ofi_msg_copy_send(rail, endpoint, msg, bytes, NULL, 0, waiting);
}

int mca_btl_ofi_msg_send_data(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                              const void *head, size_t head_bytes, const void *data, size_t bytes)
{
    return mca_btl_ofi_msg_copy_send(rail, endpoint, head, head_bytes, data, bytes, NULL);
}

size_t mca_btl_ofi_msg_largest(const mca_btl_ofi_rail_t *rail)
{
    return NULL == rail->msg ? 0 : rail->msg->largest;
}

/* Progress: send again what the provider refused before. */
static void mca_btl_ofi_msg_progress(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_msg_t *msg = rail->msg;
    opal_list_t retry;
    opal_list_item_t *item;

    OBJ_CONSTRUCT(&retry, opal_list_t);
    mca_btl_ofi_list_take(&retry, &msg->queued, &msg->lock);
    while (NULL != (item = opal_list_remove_first(&retry))) {
        mca_btl_ofi_msg_out_t *out = (mca_btl_ofi_msg_out_t *)item;
        mca_btl_ofi_op_t *waiting = out->waiting;
        int rc = mca_btl_ofi_msg_post(rail, out);

        if (OPAL_ERR_OUT_OF_RESOURCE == rc) {
            mca_btl_ofi_msg_queue(rail, out);
        } else if (OPAL_ERROR == rc && NULL != waiting) {
            /* its sender was told it was queued; the post failed and out is gone */
            opal_output_verbose(1, mca_btl_ofi_output,
                                MCA_BTL_OFI_LOG "a queued request could not be sent: its "
                                                "operation fails");
            mca_btl_ofi_op_finish(rail, waiting, OPAL_ERROR);
        }
    }
    OBJ_DESTRUCT(&retry);
}
