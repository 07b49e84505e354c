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
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strictmr.h"

#define ENGINE_MAGIC 0x53544d52454e4731ULL
#define REAP_BATCH 16

struct engine_rec {
    uint64_t magic;
    struct engine_rec *prev, *next; /* the domain's live records */
    struct strictmr_engine_ep *eep; /* NULL once the endpoint closed */
    struct strictmr_post call;      /* its arrays point into the record */
    uint64_t flags;                 /* what the core gets */
    uint64_t seq;
    bool rx;
    bool want; /* the caller asked for a completion */
    bool held;
    struct iovec iov[STRICTMR_IOV_LIMIT];
    struct fi_ioc ioc[3][STRICTMR_IOV_LIMIT];
    struct fi_rma_iov rma[STRICTMR_IOV_LIMIT];
    struct fi_rma_ioc rma_ioc[STRICTMR_IOV_LIMIT];
    size_t payload_len;
    uint8_t payload[]; /* an inject's data */
};

struct strictmr_engine_ep {
    struct strictmr_ep *ep;
    struct strictmr_engine_ep *next; /* the domain's endpoints */
    uint64_t op_flags[2];            /* tx, rx */
    bool selective[2];
    size_t outstanding[2];
    struct engine_rec **held;
    size_t held_count;
    uint64_t seq;
    uint64_t max_handed; /* 1 + the highest seq handed to the core */
    uint64_t rng;
};

struct ring_entry {
    struct fi_cq_data_entry e;
    fi_addr_t src;
};

struct strictmr_engine_cq {
    struct strictmr_cq *cq;
    struct strictmr_engine_cq *next; /* the domain's CQs */
    enum fi_cq_format format;
    struct ring_entry *ring;
    size_t cap, head, count;
    struct ring_entry stash; /* read while the ring was full: logically still the core's */
    bool stashed;
    bool core_error; /* the core said -FI_EAVAIL */
    bool no_readfrom;
    bool enabled; /* an endpoint bound to it is enabled: the thread may read it (a core such
                   * as shm reads its endpoints' state there, which exists from enable on) */
    uint64_t rng;
};

struct strictmr_engine_domain {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    bool thread_on, stop;
    struct strictmr_engine_domain *next_running; /* threads_running's list, under its lock */
    struct strictmr_engine_ep *eps;
    struct strictmr_engine_cq *cqs;
    struct engine_rec live; /* list head */
};

bool strictmr_engine_on(void)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;

    return nic->reorder || nic->progress_us >= 0 || nic->tx_size || nic->rx_size ||
           nic->cq_size;
}

/* ---------------------------------------------------------------- getinfo */
/* With reordering, only send-after-send ordering can still be granted: sends are never held. */
#define ENGINE_ORDER FI_ORDER_SAS

bool strictmr_engine_hints_ok(const struct fi_info *hints)
{
    if (!hints || !strictmr_config.nic.reorder) {
        return true;
    }
    if ((hints->tx_attr && (hints->tx_attr->msg_order & ~ENGINE_ORDER)) ||
        (hints->rx_attr && (hints->rx_attr->msg_order & ~ENGINE_ORDER))) {
        FI_INFO(&strictmr_prov, FI_LOG_CORE,
                "hints ask an ordering that reordering (FI_OFI_STRICTMR_REORDER) does not "
                "keep\n");
        return false;
    }
    return true;
}

void strictmr_engine_shape_info(struct fi_info *info)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;

    if (nic->reorder) {
        info->tx_attr->msg_order &= ENGINE_ORDER;
        info->rx_attr->msg_order &= ENGINE_ORDER;
    }
    if (nic->tx_size) {
        info->tx_attr->size = nic->tx_size;
    }
    if (nic->rx_size) {
        info->rx_attr->size = nic->rx_size;
    }
    /* Our thread progresses data whether or not the caller calls us: automatic progress
     * (fi_domain(3)), and a caller that asked for manual progress still gets it. */
    if (nic->progress_us >= 0) {
        info->domain_attr->data_progress = FI_PROGRESS_AUTO;
    }
}

/*
 * Our info says what the engine adds (automatic progress, its queue sizes); the core is asked
 * for what it has. Also for the hints of getinfo, which may be one of our infos (a caller
 * asking again with FI_MSG added): a core without automatic progress would offer nothing.
 */
void strictmr_engine_core_hints(struct fi_info *asked)
{
    if (strictmr_config.nic.progress_us >= 0) {
        asked->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
    }
    if (strictmr_config.nic.tx_size) {
        asked->tx_attr->size = 0;
    }
    if (strictmr_config.nic.rx_size) {
        asked->rx_attr->size = 0;
    }
}

void strictmr_engine_lock(struct strictmr_domain *dom)
{
    if (dom->engine) {
        pthread_mutex_lock(&dom->engine->lock);
    }
}

void strictmr_engine_unlock(struct strictmr_domain *dom)
{
    if (dom->engine) {
        pthread_mutex_unlock(&dom->engine->lock);
    }
}

/* ---------------------------------------------------------------- helpers */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static void live_add(struct strictmr_engine_domain *d, struct engine_rec *r)
{
    r->next = d->live.next;
    r->prev = &d->live;
    d->live.next->prev = r;
    d->live.next = r;
}

static void rec_free(struct engine_rec *r)
{
    r->prev->next = r->next;
    r->next->prev = r->prev;
    r->magic = 0;
    free(r);
}

static bool rec_live(struct strictmr_engine_domain *d, const void *p)
{
    for (const struct engine_rec *r = d->live.next; r != &d->live; r = r->next) {
        if (r == p) {
            return true;
        }
    }
    return false;
}

/* A slot of the record's endpoint is free again. */
static void rec_done(struct engine_rec *r)
{
    if (r->eep && r->eep->outstanding[r->rx]) {
        r->eep->outstanding[r->rx]--;
    }
}

static uint64_t rec_cq_flags(const struct engine_rec *r)
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

/* Hands one record to the core. */
static ssize_t core_post(struct strictmr_ep *ep, struct engine_rec *r)
{
    const struct strictmr_post *p = &r->call;
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    void *nodesc2[STRICTMR_IOV_LIMIT] = {0};
    void *nodesc3[STRICTMR_IOV_LIMIT] = {0};
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
    default: {
        struct fi_msg_atomic msg = {.msg_iov = p->ioc[0], .desc = nodesc,
                                    .iov_count = p->ioc_count[0], .addr = p->addr,
                                    .rma_iov = p->rma_ioc, .rma_iov_count = p->rma_count,
                                    .datatype = p->datatype, .op = p->op, .context = r,
                                    .data = p->data};

        if (p->kind == STRICTMR_POST_FETCH) {
            return fi_fetch_atomicmsg(ep->core, &msg, (struct fi_ioc *)p->ioc[1], nodesc2, p->ioc_count[1],
                                      r->flags);
        }
        if (p->kind == STRICTMR_POST_COMPARE) {
            return fi_compare_atomicmsg(ep->core, &msg, p->ioc[2], nodesc3, p->ioc_count[2],
                                        (struct fi_ioc *)p->ioc[1], nodesc2, p->ioc_count[1],
                                        r->flags);
        }
        if (p->inject) {
            return fi_inject_atomic(ep->core, p->ioc[0][0].addr, p->ioc[0][0].count, p->addr,
                                    p->rma_ioc[0].addr, p->rma_ioc[0].key, p->datatype, p->op);
        }
        return fi_atomicmsg(ep->core, &msg, r->flags);
    }
    }
}

/* ---------------------------------------------------------------- release */
/* Hands the endpoint's held records to the core in a permuted order. */
static void release(struct strictmr_engine_ep *eep, bool by_thread)
{
    while (eep->held_count) {
        size_t k = rng_next(&eep->rng) % eep->held_count;
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
            if (!eep->ep->tx_cq ||
                strictmr_cq_raise(eep->ep->tx_cq, r->call.context, rec_cq_flags(r), (int)-ret)) {
                FI_WARN(&strictmr_prov, FI_LOG_EP_DATA,
                        "and its error completion could not be queued\n");
            }
            rec_done(r);
            rec_free(r);
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
            rec_done(r);
            rec_free(r);
        }
    }
}

/* ---------------------------------------------------------------- completions */
static bool remote_entry(const struct fi_cq_data_entry *e)
{
    return (e->flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) != 0 || !e->op_context;
}

/* A core completion: frees its record's slot; false when the caller did not ask for it. */
static bool translate(struct fi_cq_data_entry *e)
{
    struct engine_rec *r;
    bool want;

    if (remote_entry(e)) {
        return true;
    }
    r = e->op_context;
    if (r->magic != ENGINE_MAGIC) {
        FI_WARN(&strictmr_prov, FI_LOG_CQ, "a core completion names no operation of ours\n");
        return true;
    }
    want = r->want;
    e->op_context = r->call.context;
    rec_done(r);
    rec_free(r);
    return want;
}

static size_t ring_space(const struct strictmr_engine_cq *ecq)
{
    return ecq->cap - ecq->count;
}

static void ring_push(struct strictmr_engine_cq *ecq, const struct ring_entry *x)
{
    ecq->ring[(ecq->head + ecq->count) % ecq->cap] = *x;
    ecq->count++;
}

static ssize_t core_reap(struct strictmr_engine_cq *ecq, struct ring_entry *x, size_t n)
{
    struct fi_cq_data_entry e[REAP_BATCH];
    fi_addr_t src[REAP_BATCH];
    ssize_t got;

    if (!ecq->no_readfrom) {
        got = fi_cq_readfrom(ecq->cq->core, e, n, src);
        if (got == -FI_ENOSYS) {
            ecq->no_readfrom = true;
        }
    }
    if (ecq->no_readfrom) {
        got = fi_cq_read(ecq->cq->core, e, n);
        for (size_t i = 0; i < n; i++) {
            src[i] = FI_ADDR_NOTAVAIL;
        }
    }
    for (ssize_t i = 0; i < got; i++) {
        x[i] = (struct ring_entry){.e = e[i], .src = src[i]};
    }
    return got;
}

/* Reads the core's completions into the ring while it has room. */
static void reap(struct strictmr_engine_cq *ecq, bool by_thread)
{
    struct ring_entry x[REAP_BATCH];
    ssize_t got;

    if (ecq->stashed && ring_space(ecq)) {
        ecq->stashed = false;
        if (translate(&ecq->stash.e)) {
            ring_push(ecq, &ecq->stash);
        }
    }
    while (!ecq->stashed && !ecq->core_error) {
        size_t space = ring_space(ecq);

        /* A full ring still reads one: if there is one, it stays (in the stash, which stands
         * for the core) and the overrun is counted. */
        got = core_reap(ecq, x, space ? (space < REAP_BATCH ? space : REAP_BATCH) : 1);
        if (got == -FI_EAVAIL) {
            ecq->core_error = true;
        } else if (got < 0 && got != -FI_EAGAIN) {
            FI_WARN(&strictmr_prov, FI_LOG_CQ, "reading the core CQ: %s\n",
                    fi_strerror((int)-got));
        }
        if (got <= 0) {
            return;
        }
        if (by_thread) {
            strictmr_event(STRICTMR_EV_THREAD_COMPLETIONS, (uint64_t)got);
        }
        if (!space) {
            ecq->stash = x[0];
            ecq->stashed = true;
            strictmr_event(STRICTMR_EV_CQ_FULL, 1);
            return;
        }
        for (ssize_t i = 0; i < got; i++) {
            if (translate(&x[i].e)) {
                ring_push(ecq, &x[i]);
            }
        }
    }
}

static void progress(struct strictmr_engine_domain *d, bool by_thread)
{
    for (struct strictmr_engine_ep *eep = d->eps; eep; eep = eep->next) {
        release(eep, by_thread);
    }
    for (struct strictmr_engine_cq *ecq = d->cqs; ecq; ecq = ecq->next) {
        if (ecq->enabled || !by_thread) {
            reap(ecq, by_thread);
        }
    }
}

/* RMA and atomic completions may be handed out of order; receives and sends keep theirs. */
static bool permutable(const struct fi_cq_data_entry *e)
{
    return !remote_entry(e) && (e->flags & (FI_RMA | FI_ATOMIC)) && !(e->flags & FI_RECV);
}

static void put_entry(struct strictmr_engine_cq *ecq, void *buf, size_t i,
                      const struct fi_cq_data_entry *e)
{
    switch (ecq->format) {
    case FI_CQ_FORMAT_MSG: {
        struct fi_cq_msg_entry *m = (struct fi_cq_msg_entry *)buf + i;

        *m = (struct fi_cq_msg_entry){.op_context = e->op_context, .flags = e->flags,
                                      .len = e->len};
        break;
    }
    case FI_CQ_FORMAT_DATA:
        ((struct fi_cq_data_entry *)buf)[i] = *e;
        break;
    default:
        ((struct fi_cq_entry *)buf)[i].op_context = e->op_context;
        break;
    }
}

static size_t hand_out(struct strictmr_engine_cq *ecq, void *buf, size_t count,
                       fi_addr_t *src_addr)
{
    size_t n = 0;

    while (n < count && ecq->count) {
        size_t k = 0;

        if (strictmr_config.nic.reorder) {
            size_t span = ecq->count < strictmr_config.nic.reorder_window
                              ? ecq->count
                              : strictmr_config.nic.reorder_window;
            size_t j = rng_next(&ecq->rng) % span;

            if (permutable(&ecq->ring[(ecq->head + j) % ecq->cap].e)) {
                k = j;
            }
        }
        struct ring_entry x = ecq->ring[(ecq->head + k) % ecq->cap];

        /* the entries before k move up one */
        for (size_t i = k; i > 0; i--) {
            ecq->ring[(ecq->head + i) % ecq->cap] = ecq->ring[(ecq->head + i - 1) % ecq->cap];
        }
        ecq->head = (ecq->head + 1) % ecq->cap;
        ecq->count--;
        if (k) {
            strictmr_event(STRICTMR_EV_COMPLETIONS_REORDERED, 1);
        }
        put_entry(ecq, buf, n, &x.e);
        if (src_addr) {
            src_addr[n] = x.src;
        }
        n++;
    }
    return n;
}

static ssize_t read_once(struct strictmr_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
    struct strictmr_engine_cq *ecq = cq->engine;
    struct strictmr_engine_domain *d = cq->domain->engine;
    ssize_t ret;

    pthread_mutex_lock(&d->lock);
    progress(d, false);
    ret = (ssize_t)hand_out(ecq, buf, count, src_addr);
    if (!ret) {
        ret = ecq->core_error ? -FI_EAVAIL : -FI_EAGAIN;
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * timeout < 0 waits for ever, 0 is a plain read. A blocking read polls (yielding the CPU)
 * rather than block in the core with the domain lock held.
 */
ssize_t strictmr_engine_cq_read(struct strictmr_cq *cq, void *buf, size_t count,
                                fi_addr_t *src_addr, int timeout)
{
    int64_t end = timeout > 0 ? now_ms() + timeout : 0;
    ssize_t ret;

    for (;;) {
        ret = read_once(cq, buf, count, src_addr);
        if (ret != -FI_EAGAIN || !timeout || (timeout > 0 && now_ms() >= end)) {
            return ret;
        }
        sched_yield();
    }
}

ssize_t strictmr_engine_cq_readerr(struct strictmr_cq *cq, struct fi_cq_err_entry *buf,
                                   uint64_t flags)
{
    struct strictmr_engine_domain *d = cq->domain->engine;
    ssize_t ret;

    pthread_mutex_lock(&d->lock);
    progress(d, false);
    ret = fi_cq_readerr(cq->core, buf, flags);
    if (ret > 0) {
        cq->engine->core_error = false;
        /* errors carry no trustworthy flags: only a live record is ours */
        if (buf->op_context && rec_live(d, buf->op_context)) {
            struct engine_rec *r = buf->op_context;

            buf->op_context = r->call.context;
            rec_done(r);
            rec_free(r);
        }
    } else if (ret == -FI_EAGAIN) {
        cq->engine->core_error = false;
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

int strictmr_engine_cq_open(struct strictmr_cq *cq, const struct fi_cq_attr *attr, void *context)
{
    struct strictmr_engine_domain *d = cq->domain->engine;
    struct strictmr_engine_cq *ecq;
    struct fi_cq_attr core_attr = *attr;
    size_t cap = attr->size ? attr->size : STRICTMR_CQ_DEFAULT_ENTRIES;
    int ret;

    switch (attr->format) {
    case FI_CQ_FORMAT_UNSPEC:
    case FI_CQ_FORMAT_CONTEXT:
    case FI_CQ_FORMAT_MSG:
    case FI_CQ_FORMAT_DATA:
        break;
    default:
        FI_WARN(&strictmr_prov, FI_LOG_CQ, "CQ format %d is not served\n", attr->format);
        return -FI_ENOSYS;
    }
    /* fi_cq(3): attr.size is the least the caller may get. A NIC with CQs of cq_size
     * entries gives that size to a caller asking none, and cannot make a larger one. */
    if (strictmr_config.nic.cq_size && attr->size > strictmr_config.nic.cq_size) {
        FI_WARN(&strictmr_prov, FI_LOG_CQ,
                "a CQ of %zu entries asked; this NIC's hold at most %zu "
                "(FI_OFI_STRICTMR_CQ_SIZE)\n",
                attr->size, strictmr_config.nic.cq_size);
        return -FI_EINVAL;
    }
    if (strictmr_config.nic.cq_size && !attr->size) {
        cap = strictmr_config.nic.cq_size;
    }
    ecq = calloc(1, sizeof(*ecq));
    if (!ecq || !(ecq->ring = calloc(cap, sizeof(*ecq->ring)))) {
        free(ecq);
        return -FI_ENOMEM;
    }
    ecq->cq = cq;
    ecq->cap = cap;
    ecq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
    ecq->rng = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)cq;
    core_attr.format = FI_CQ_FORMAT_DATA;
    ret = fi_cq_open(cq->domain->core, &core_attr, &cq->core, context);
    if (ret) {
        free(ecq->ring);
        free(ecq);
        return ret;
    }
    cq->engine = ecq;
    pthread_mutex_lock(&d->lock);
    ecq->next = d->cqs;
    d->cqs = ecq;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

void strictmr_engine_cq_close(struct strictmr_cq *cq)
{
    struct strictmr_engine_domain *d = cq->domain->engine;
    struct strictmr_engine_cq **at;

    for (at = &d->cqs; *at; at = &(*at)->next) {
        if (*at == cq->engine) {
            *at = cq->engine->next;
            break;
        }
    }
    free(cq->engine->ring);
    free(cq->engine);
    cq->engine = NULL;
}

/* ---------------------------------------------------------------- endpoints */
int strictmr_engine_ep_open(struct strictmr_ep *ep, const struct fi_info *info)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    struct strictmr_engine_ep *eep = calloc(1, sizeof(*eep));

    if (!eep || !(eep->held = calloc(strictmr_config.nic.reorder_window, sizeof(*eep->held)))) {
        free(eep);
        return -FI_ENOMEM;
    }
    eep->ep = ep;
    if (info) {
        eep->op_flags[0] = info->tx_attr->op_flags;
        eep->op_flags[1] = info->rx_attr->op_flags;
    }
    eep->rng = 0x2545f4914f6cdd1dULL * (ep->id + 1) ^ ep->domain->id;
    ep->engine = eep;
    pthread_mutex_lock(&d->lock);
    eep->next = d->eps;
    d->eps = eep;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

void strictmr_engine_ep_enabled(struct strictmr_ep *ep)
{
    struct strictmr_cq *cqs[2] = {ep->tx_cq, ep->rx_cq};

    for (int i = 0; i < 2; i++) {
        if (cqs[i] && cqs[i]->engine) {
            cqs[i]->engine->enabled = true;
        }
    }
}

void strictmr_engine_ep_bind_cq(struct strictmr_ep *ep, uint64_t *flags)
{
    if (*flags & FI_TRANSMIT) {
        ep->engine->selective[0] = (*flags & FI_SELECTIVE_COMPLETION) != 0;
    }
    if (*flags & FI_RECV) {
        ep->engine->selective[1] = (*flags & FI_SELECTIVE_COMPLETION) != 0;
    }
    *flags &= ~FI_SELECTIVE_COMPLETION;
}

void strictmr_engine_ep_set_op_flags(struct strictmr_ep *ep, uint64_t flags)
{
    struct strictmr_engine_domain *d = ep->domain->engine;

    pthread_mutex_lock(&d->lock);
    if (flags & FI_TRANSMIT) {
        ep->engine->op_flags[0] = flags & ~FI_TRANSMIT;
    }
    if (flags & FI_RECV) {
        ep->engine->op_flags[1] = flags & ~FI_RECV;
    }
    pthread_mutex_unlock(&d->lock);
}

/* Before the core endpoint closes: what is still held is cancelled, the rest forgets it. */
void strictmr_engine_ep_close(struct strictmr_ep *ep)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    struct strictmr_engine_ep *eep = ep->engine, **at;

    for (at = &d->eps; *at; at = &(*at)->next) {
        if (*at == eep) {
            *at = eep->next;
            break;
        }
    }
    for (size_t i = 0; i < eep->held_count; i++) {
        struct engine_rec *r = eep->held[i];

        if (r->call.inject || !r->want || !ep->tx_cq ||
            strictmr_cq_raise(ep->tx_cq, r->call.context, rec_cq_flags(r), FI_ECANCELED)) {
            FI_WARN(&strictmr_prov, FI_LOG_EP_CTRL,
                    "endpoint %u closed with an operation held: dropped\n", ep->id);
        }
        rec_free(r);
    }
    for (struct engine_rec *r = d->live.next; r != &d->live; r = r->next) {
        if (r->eep == eep) {
            r->eep = NULL;
        }
    }
    free(eep->held);
    free(eep);
    ep->engine = NULL;
}

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
            ret = strictmr_cq_raise(ep->tx_cq, context, rec_cq_flags(r), FI_ECANCELED);
            rec_done(r);
            rec_free(r);
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
    uint64_t flags = p->op_flags ? (eep->op_flags[rx] | p->flags) & ~(FI_TRANSMIT | FI_RECV)
                                 : p->flags;
    struct engine_rec *r;
    ssize_t ret = 0;

    if (flags & FI_MULTI_RECV) {
        FI_WARN(&strictmr_prov, FI_LOG_EP_DATA,
                "FI_MULTI_RECV is not served with the NIC data path on\n");
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&d->lock);
    if (limit && eep->outstanding[rx] >= limit) {
        strictmr_event(rx ? STRICTMR_EV_RX_EAGAIN : STRICTMR_EV_TX_EAGAIN, 1);
        pthread_mutex_unlock(&d->lock);
        return -FI_EAGAIN;
    }
    if (hold && eep->held_count >= strictmr_config.nic.reorder_window) {
        /* the held array is full because the core refused a release (-FI_EAGAIN): the
         * transmit queue is full until the core takes some */
        release(eep, false);
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
            release(eep, false);
        }
    } else {
        ret = core_post(ep, r);
        if (ret || p->inject) {
            rec_done(r);
            rec_free(r);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}

/* ---------------------------------------------------------------- domain */
static void *progress_thread(void *arg)
{
    struct strictmr_engine_domain *d = arg;
    long us = strictmr_config.nic.progress_us;

    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        struct timespec ts;

        progress(d, true);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += us / 1000000;
        ts.tv_nsec += (us % 1000000) * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (!us) {
            /* no cadence: let the application at the lock between rounds */
            pthread_mutex_unlock(&d->lock);
            sched_yield();
            pthread_mutex_lock(&d->lock);
            continue;
        }
        pthread_cond_timedwait(&d->cond, &d->lock, &ts);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/*
 * Domains whose progress thread runs. A program that leaves the fabric open at exit (an MPI
 * whose finalize did not close its BTLs: MPI_T left initialized) has libfabric's destructor
 * unload this provider (fi_fini: cleanup, then dlclose) while the thread runs in its code;
 * strictmr_engine_cleanup stops them first.
 */
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strictmr_engine_domain *threads_running;

/* With threads_lock held, d off its list. */
static void thread_join(struct strictmr_engine_domain *d)
{
    pthread_mutex_lock(&d->lock);
    d->stop = true;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    d->thread_on = false;
}

static void thread_stop(struct strictmr_engine_domain *d)
{
    struct strictmr_engine_domain **at;

    pthread_mutex_lock(&threads_lock);
    for (at = &threads_running; *at && *at != d; at = &(*at)->next_running) {
    }
    if (*at) { /* else the cleanup stopped it */
        *at = d->next_running;
        thread_join(d);
    }
    pthread_mutex_unlock(&threads_lock);
}

void strictmr_engine_cleanup(void)
{
    uint64_t stopped = 0;

    pthread_mutex_lock(&threads_lock);
    while (threads_running) {
        struct strictmr_engine_domain *d = threads_running;

        FI_WARN(&strictmr_prov, FI_LOG_DOMAIN,
                "unloaded with a domain left open: its progress thread is stopped\n");
        threads_running = d->next_running;
        thread_join(d);
        stopped++;
    }
    pthread_mutex_unlock(&threads_lock);
    if (stopped) {
        /* the fabric never closed, so its report line was never written: write it now */
        strictmr_event(STRICTMR_EV_UNLOAD_STOPPED, stopped);
        strictmr_report_write();
    }
}

int strictmr_engine_domain_open(struct strictmr_domain *dom)
{
    struct strictmr_engine_domain *d;
    pthread_condattr_t attr;
    int ret;

    if (!strictmr_engine_on()) {
        return 0;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cond, &attr);
    pthread_condattr_destroy(&attr);
    d->live.next = d->live.prev = &d->live;
    dom->engine = d;
    if (strictmr_config.nic.progress_us >= 0) {
        ret = pthread_create(&d->thread, NULL, progress_thread, d);
        if (ret) {
            FI_WARN(&strictmr_prov, FI_LOG_DOMAIN, "starting the progress thread: %s\n",
                    strerror(ret));
            strictmr_engine_domain_close(dom);
            return -FI_EOTHER;
        }
        d->thread_on = true;
        pthread_mutex_lock(&threads_lock);
        d->next_running = threads_running;
        threads_running = d;
        pthread_mutex_unlock(&threads_lock);
    }
    return 0;
}

void strictmr_engine_domain_close(struct strictmr_domain *dom)
{
    struct strictmr_engine_domain *d = dom->engine;

    if (!d) {
        return;
    }
    if (d->thread_on) {
        thread_stop(d);
    }
    while (d->live.next != &d->live) {
        rec_free(d->live.next);
    }
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->lock);
    free(d);
    dom->engine = NULL;
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
