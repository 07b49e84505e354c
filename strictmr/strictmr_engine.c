/*
 * ofi_strictmr's NIC data path (issue 25): what real NICs do and the local
 * cores (shm, sockets, tcp;ofi_rxm) do not.
 *
 * - Reordering (FI_OFI_STRICTMR_REORDER): writes, reads and atomics are held
 *   per endpoint and handed to the core in a permuted order; the CQ reads the
 *   core's completions into a ring and hands RMA/atomic ones out permuted.
 * - Progress of its own (FI_OFI_STRICTMR_PROGRESS_US): a thread per domain
 *   releases held operations and reaps the core CQs, so the core progresses
 *   while the application makes no call.
 * - Tight queues (FI_OFI_STRICTMR_TX_SIZE/_RX_SIZE/_CQ_SIZE): outstanding
 *   operations per endpoint and entries per CQ are bounded.
 *
 * When one is on, every operation gets a record that the core sees as its
 * context: the completion names the record, which names the endpoint whose
 * outstanding count it frees and the caller's context. Core CQs are opened
 * with FI_CQ_FORMAT_DATA (flags tell ours from remote-data completions) and
 * bound without FI_SELECTIVE_COMPLETION (every operation completes in the
 * core; the engine drops the completions the caller did not ask for). One
 * lock per domain guards all of it and every call into the core data path.
 *
 * This file holds the records and the posting: a record per operation, held
 * operations released to the core in a permuted order, the endpoint's queue
 * bounds and cancel, and the posting calls' way in. Above it,
 * strictmr_engine_cq.c reads and reorders completions, and
 * strictmr_engine_domain.c shapes infos and keeps the domain's, CQs' and
 * endpoints' engine state and the progress thread. strictmr_engine.h holds what
 * they share, and says which lock guards what.
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr_engine.h"

/* ---------------------------------------------------------------- helpers */
static void live_add(struct strictmr_engine_domain *d, struct engine_rec *r)
{
    r->next = d->live.next;
    r->prev = &d->live;
    d->live.next->prev = r;
    d->live.next = r;
}

void engine_rec_free(struct engine_rec *r)
{
    r->prev->next = r->next;
    r->next->prev = r->prev;
    r->magic = 0;
    free(r);
}

bool engine_rec_live(struct strictmr_engine_domain *d, const void *p)
{
    for (const struct engine_rec *r = d->live.next; r != &d->live; r = r->next) {
        if (r == p) {
            return true;
        }
    }
    return false;
}

/* A slot of the record's endpoint is free again. */
void engine_rec_done(struct engine_rec *r)
{
    if (r->eep && r->eep->outstanding[r->rx]) {
        r->eep->outstanding[r->rx]--;
    }
}

uint64_t engine_rec_cq_flags(const struct engine_rec *r)
{
    switch (r->call.kind) {
    case STRICTMR_POST_SEND:
        return FI_MSG | FI_SEND;
    case STRICTMR_POST_RECV:
        return FI_MSG | FI_RECV;
    case STRICTMR_POST_WRITE:
        return FI_RMA | FI_WRITE;
    case STRICTMR_POST_READ:
        return FI_RMA | FI_READ;
    case STRICTMR_POST_ATOMIC:
        return FI_ATOMIC | FI_WRITE;
    default:
        return FI_ATOMIC | FI_READ;
    }
}

static size_t iov_bytes(const struct iovec *iov, size_t count)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += iov[i].iov_len;
    }
    return total;
}

static size_t ioc_bytes(const struct fi_ioc *ioc, size_t count, size_t size)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += ioc[i].count * size;
    }
    return total;
}

static bool is_atomic(enum strictmr_post_kind kind)
{
    return kind == STRICTMR_POST_ATOMIC || kind == STRICTMR_POST_FETCH ||
           kind == STRICTMR_POST_COMPARE;
}

/*
 * A record of the call; arrays copied, and an inject's data (the caller may reuse its buffer
 * at return) when the record is held.
 */
static struct engine_rec *rec_make(const struct strictmr_post *p, bool held)
{
    bool copy = held && (p->inject || (p->flags & FI_INJECT));
    size_t len = 0;
    struct engine_rec *r;

    if (copy) {
        len = is_atomic(p->kind) ? ioc_bytes(p->ioc[0], p->ioc_count[0], p->datatype_size)
                                 : iov_bytes(p->iov, p->iov_count);
    }
    r = calloc(1, sizeof(*r) + len);
    if (!r) {
        return NULL;
    }
    r->magic = ENGINE_MAGIC;
    r->call = *p;
    r->held = held;
    memcpy(r->iov, p->iov, p->iov_count * sizeof(*p->iov));
    r->call.iov = r->iov;
    for (int i = 0; i < 3; i++) {
        memcpy(r->ioc[i], p->ioc[i], p->ioc_count[i] * sizeof(*p->ioc[i]));
        r->call.ioc[i] = r->ioc[i];
    }
    if (p->rma) {
        memcpy(r->rma, p->rma, p->rma_count * sizeof(*p->rma));
    }
    if (p->rma_ioc) {
        memcpy(r->rma_ioc, p->rma_ioc, p->rma_count * sizeof(*p->rma_ioc));
    }
    r->call.rma = r->rma;
    r->call.rma_ioc = r->rma_ioc;
    if (copy) {
        uint8_t *at = r->payload;

        if (is_atomic(p->kind)) {
            for (size_t i = 0; i < p->ioc_count[0]; i++) {
                size_t n = p->ioc[0][i].count * p->datatype_size;

                memcpy(at, p->ioc[0][i].addr, n);
                at += n;
            }
            r->ioc[0][0] = (struct fi_ioc){.addr = r->payload, .count = len / p->datatype_size};
            r->call.ioc_count[0] = 1;
        } else {
            for (size_t i = 0; i < p->iov_count; i++) {
                memcpy(at, p->iov[i].iov_base, p->iov[i].iov_len);
                at += p->iov[i].iov_len;
            }
            r->iov[0] = (struct iovec){.iov_base = r->payload, .iov_len = len};
            r->call.iov_count = p->iov_count ? 1 : 0;
        }
        r->payload_len = len;
    }
    return r;
}

/* Hands one record of an atomic kind to the core (core_post's part). */
static ssize_t core_post_atomic(struct strictmr_ep *ep, struct engine_rec *r, void **nodesc)
{
    const struct strictmr_post *p = &r->call;
    void *nodesc2[STRICTMR_IOV_LIMIT] = {0};
    void *nodesc3[STRICTMR_IOV_LIMIT] = {0};
    struct fi_msg_atomic msg = {.msg_iov = p->ioc[0],
                                .desc = nodesc,
                                .iov_count = p->ioc_count[0],
                                .addr = p->addr,
                                .rma_iov = p->rma_ioc,
                                .rma_iov_count = p->rma_count,
                                .datatype = p->datatype,
                                .op = p->op,
                                .context = r,
                                .data = p->data};

    if (p->kind == STRICTMR_POST_FETCH) {
        return fi_fetch_atomicmsg(ep->core, &msg, (struct fi_ioc *)p->ioc[1], nodesc2,
                                  p->ioc_count[1], r->flags);
    }
    if (p->kind == STRICTMR_POST_COMPARE) {
        return fi_compare_atomicmsg(ep->core, &msg, p->ioc[2], nodesc3, p->ioc_count[2],
                                    (struct fi_ioc *)p->ioc[1], nodesc2, p->ioc_count[1], r->flags);
    }
    if (p->inject) {
        return fi_inject_atomic(ep->core, p->ioc[0][0].addr, p->ioc[0][0].count, p->addr,
                                p->rma_ioc[0].addr, p->rma_ioc[0].key, p->datatype, p->op);
    }
    return fi_atomicmsg(ep->core, &msg, r->flags);
}

/* Hands one record to the core. */
static ssize_t core_post(struct strictmr_ep *ep, struct engine_rec *r)
{
    const struct strictmr_post *p = &r->call;
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    bool data = (r->flags & FI_REMOTE_CQ_DATA) != 0;
    const void *buf = p->iov_count ? p->iov[0].iov_base : NULL;
    size_t len = p->iov_count ? p->iov[0].iov_len : 0;

    switch (p->kind) {
    case STRICTMR_POST_SEND:
        if (p->inject) {
            return data ? fi_injectdata(ep->core, buf, len, p->data, p->addr)
                        : fi_inject(ep->core, buf, len, p->addr);
        }
        return fi_sendmsg(ep->core,
                          &(struct fi_msg){.msg_iov = p->iov, .desc = nodesc,
                                           .iov_count = p->iov_count, .addr = p->addr,
                                           .context = r, .data = p->data},
                          r->flags);
    case STRICTMR_POST_RECV:
        return fi_recvmsg(ep->core,
                          &(struct fi_msg){.msg_iov = p->iov, .desc = nodesc,
                                           .iov_count = p->iov_count, .addr = p->addr,
                                           .context = r},
                          r->flags);
    case STRICTMR_POST_WRITE:
    case STRICTMR_POST_READ: {
        struct fi_msg_rma msg = {.msg_iov = p->iov, .desc = nodesc, .iov_count = p->iov_count,
                                 .addr = p->addr, .rma_iov = p->rma,
                                 .rma_iov_count = p->rma_count, .context = r, .data = p->data};

        if (p->kind == STRICTMR_POST_READ) {
            return fi_readmsg(ep->core, &msg, r->flags);
        }
        if (p->inject) {
            return data ? fi_inject_writedata(ep->core, buf, len, p->data, p->addr,
                                              p->rma[0].addr, p->rma[0].key)
                        : fi_inject_write(ep->core, buf, len, p->addr, p->rma[0].addr,
                                          p->rma[0].key);
        }
        return fi_writemsg(ep->core, &msg, r->flags);
    }
    default:
        return core_post_atomic(ep, r, nodesc);
    }
}

/* ---------------------------------------------------------------- release */
/* Hands the endpoint's held records to the core in a permuted order. */
void engine_release(struct strictmr_engine_ep *eep, bool by_thread)
{
    while (eep->held_count) {
        size_t k = engine_rng_next(&eep->rng) % eep->held_count;
        struct engine_rec *r = eep->held[k];
        ssize_t ret = core_post(eep->ep, r);

        if (ret == -FI_EAGAIN) {
            return; /* the core is full: held until the next release */
        }
        eep->held[k] = eep->held[--eep->held_count];
        if (ret) {
            FI_WARN(&strictmr_prov, FI_LOG_EP_DATA,
                    "a held operation failed at release: %s; reported as an error completion\n",
                    fi_strerror((int)-ret));
            if (!eep->ep->tx_cq || strictmr_cq_raise(eep->ep->tx_cq, r->call.context,
                                                     engine_rec_cq_flags(r), (int)-ret)) {
                FI_WARN(&strictmr_prov, FI_LOG_EP_DATA,
                        "and its error completion could not be queued\n");
            }
            engine_rec_done(r);
            engine_rec_free(r);
            continue;
        }
        if (r->seq + 1 < eep->max_handed) {
            strictmr_event(STRICTMR_EV_REORDERED, 1);
        }
        if (r->seq + 1 > eep->max_handed) {
            eep->max_handed = r->seq + 1;
        }
        if (by_thread) {
            strictmr_event(STRICTMR_EV_THREAD_OPS, 1);
        }
        r->held = false;
        if (r->call.inject) {
            engine_rec_done(r);
            engine_rec_free(r);
        }
    }
}

/* ---------------------------------------------------------------- endpoints */
ssize_t strictmr_engine_size_left(struct strictmr_ep *ep, bool rx)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    size_t limit = rx ? strictmr_config.nic.rx_size : strictmr_config.nic.tx_size;
    ssize_t ret;

    pthread_mutex_lock(&d->lock);
    if (limit) {
        ret = (ssize_t)(limit - ep->engine->outstanding[rx]);
    } else {
        ret = rx ? ep->core->ops->rx_size_left(ep->core) : ep->core->ops->tx_size_left(ep->core);
        if (ret >= 0 && !rx) {
            /* held operations will take core slots too */
            ret = ret > (ssize_t)ep->engine->held_count ? ret - (ssize_t)ep->engine->held_count
                                                        : 0;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

/* A held operation is cancelled here; one in the core is the core's to cancel. */
ssize_t strictmr_engine_cancel(struct strictmr_ep *ep, void *context)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    struct strictmr_engine_ep *eep = ep->engine;
    ssize_t ret = -FI_ENOENT;

    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < eep->held_count; i++) {
        struct engine_rec *r = eep->held[i];

        if (r->call.context == context && !r->call.inject) {
            eep->held[i] = eep->held[--eep->held_count];
            ret = strictmr_cq_raise(ep->tx_cq, context, engine_rec_cq_flags(r), FI_ECANCELED);
            engine_rec_done(r);
            engine_rec_free(r);
            break;
        }
    }
    if (ret == -FI_ENOENT) {
        for (struct engine_rec *r = d->live.next; r != &d->live; r = r->next) {
            if (r->eep == eep && r->call.context == context) {
                ret = fi_cancel(&ep->core->fid, r);
                break;
            }
        }
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

/* ---------------------------------------------------------------- post */
ssize_t strictmr_engine_post(struct strictmr_ep *ep, const struct strictmr_post *p)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    struct strictmr_engine_ep *eep = ep->engine;
    bool rx = p->kind == STRICTMR_POST_RECV;
    bool hold = strictmr_config.nic.reorder && p->kind != STRICTMR_POST_SEND && !rx;
    size_t limit = rx ? strictmr_config.nic.rx_size : strictmr_config.nic.tx_size;
    uint64_t flags;
    struct engine_rec *r;
    ssize_t ret = 0;

    pthread_mutex_lock(&d->lock); /* fi_control(FI_SETOPSFLAG) may be setting op_flags */
    flags = p->op_flags ? (eep->op_flags[rx] | p->flags) & ~(FI_TRANSMIT | FI_RECV) : p->flags;
    if (flags & FI_MULTI_RECV) {
        pthread_mutex_unlock(&d->lock);
        FI_WARN(&strictmr_prov, FI_LOG_EP_DATA,
                "FI_MULTI_RECV is not served with the NIC data path on\n");
        return -FI_EINVAL;
    }
    if (limit && eep->outstanding[rx] >= limit) {
        strictmr_event(rx ? STRICTMR_EV_RX_EAGAIN : STRICTMR_EV_TX_EAGAIN, 1);
        pthread_mutex_unlock(&d->lock);
        return -FI_EAGAIN;
    }
    if (hold && eep->held_count >= strictmr_config.nic.reorder_window) {
        /* the held array is full because the core refused a release (-FI_EAGAIN): the
         * transmit queue is full until the core takes some */
        engine_release(eep, false);
        if (eep->held_count >= strictmr_config.nic.reorder_window) {
            strictmr_event(STRICTMR_EV_TX_EAGAIN, 1);
            pthread_mutex_unlock(&d->lock);
            return -FI_EAGAIN;
        }
    }
    r = rec_make(p, hold);
    if (!r) {
        pthread_mutex_unlock(&d->lock);
        return -FI_ENOMEM;
    }
    r->eep = eep;
    r->rx = rx;
    r->flags = flags;
    r->seq = eep->seq++;
    r->want = !p->inject && (!eep->selective[rx] || (flags & FI_COMPLETION));
    live_add(d, r);
    eep->outstanding[rx]++;
    if (hold) {
        eep->held[eep->held_count++] = r;
        if (eep->held_count >= strictmr_config.nic.reorder_window) {
            engine_release(eep, false);
        }
    } else {
        ret = core_post(ep, r);
        if (ret || p->inject) {
            engine_rec_done(r);
            engine_rec_free(r);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

/* ---------------------------------------------------------------- call forms */
static size_t datatype_size(enum fi_datatype datatype)
{
    switch (datatype) {
    case FI_INT8:
    case FI_UINT8:
        return 1;
    case FI_INT16:
    case FI_UINT16:
        return 2;
    case FI_INT32:
    case FI_UINT32:
    case FI_FLOAT:
        return 4;
    case FI_INT64:
    case FI_UINT64:
    case FI_DOUBLE:
    case FI_FLOAT_COMPLEX:
        return 8;
    case FI_DOUBLE_COMPLEX:
        return 16;
    case FI_LONG_DOUBLE:
        return sizeof(long double);
    case FI_LONG_DOUBLE_COMPLEX:
        return 2 * sizeof(long double);
    default:
        return 16; /* 128-bit integers of libfabric 2.x */
    }
}

static void call_flags(struct strictmr_post *p, uint64_t flags, enum strictmr_call how)
{
    p->flags = flags;
    p->op_flags = how == STRICTMR_CALL_PLAIN;
    p->inject = how == STRICTMR_CALL_INJECT;
}

ssize_t strictmr_engine_msg(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                            const struct iovec *iov, size_t count, fi_addr_t addr, uint64_t flags,
                            uint64_t data, enum strictmr_call how, void *context)
{
    struct strictmr_post p = {
        .kind = kind, .iov = iov, .iov_count = count, .addr = addr, .data = data,
        .context = context};

    call_flags(&p, flags, how);
    return strictmr_engine_post(ep, &p);
}

ssize_t strictmr_engine_rma(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                            const struct iovec *iov, size_t count, fi_addr_t addr,
                            const struct fi_rma_iov *rma, uint64_t flags, uint64_t data,
                            enum strictmr_call how, void *context)
{
    struct strictmr_post p = {
        .kind = kind, .iov = iov, .iov_count = count, .rma = rma, .rma_count = 1,
        .addr = addr, .data = data, .context = context};

    call_flags(&p, flags, how);
    return strictmr_engine_post(ep, &p);
}

ssize_t strictmr_engine_rma_msg(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                                const struct fi_msg_rma *msg, uint64_t flags)
{
    struct strictmr_post p = {
        .kind = kind, .iov = msg->msg_iov, .iov_count = msg->iov_count, .rma = msg->rma_iov,
        .rma_count = msg->rma_iov_count, .addr = msg->addr, .data = msg->data,
        .context = msg->context};

    call_flags(&p, flags, STRICTMR_CALL_MSG);
    return strictmr_engine_post(ep, &p);
}

ssize_t strictmr_engine_atomic(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                               const struct fi_msg_atomic *msg, const struct fi_ioc *resultv,
                               size_t result_count, const struct fi_ioc *comparev,
                               size_t compare_count, uint64_t flags, enum strictmr_call how)
{
    struct strictmr_post p = {
        .kind = kind,
        .ioc = {msg->msg_iov, resultv, comparev},
        .ioc_count = {msg->iov_count, result_count, compare_count},
        .datatype_size = datatype_size(msg->datatype),
        .rma_ioc = msg->rma_iov,
        .rma_count = msg->rma_iov_count,
        .addr = msg->addr,
        .data = msg->data,
        .datatype = msg->datatype,
        .op = msg->op,
        .context = msg->context};

    if (kind != STRICTMR_POST_ATOMIC && (how == STRICTMR_CALL_INJECT || (flags & FI_INJECT))) {
        return -FI_EINVAL;
    }
    call_flags(&p, flags, how);
    return strictmr_engine_post(ep, &p);
}
