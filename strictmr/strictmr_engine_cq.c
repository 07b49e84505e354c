/*
 * The NIC data path's completion side (the engine's overview heads strictmr_engine.c): each
 * CQ's ring, filled from the core CQ (reaping, by the caller's reads or the progress thread)
 * and handed out with RMA and atomic completions reordered; the core's error completions given
 * back to the caller.
 */
#include <sched.h>
#include <time.h>

#include "strictmr_engine.h"

#define REAP_BATCH 16

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
    engine_rec_done(r);
    engine_rec_free(r);
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
            FI_WARN(&strictmr_prov, FI_LOG_CQ, "reading the core CQ: %s\n", fi_strerror((int)-got));
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

void engine_progress(struct strictmr_engine_domain *d, bool by_thread)
{
    for (struct strictmr_engine_ep *eep = d->eps; eep; eep = eep->next) {
        engine_release(eep, by_thread);
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

        *m =
            (struct fi_cq_msg_entry){.op_context = e->op_context, .flags = e->flags, .len = e->len};
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

static size_t hand_out(struct strictmr_engine_cq *ecq, void *buf, size_t count, fi_addr_t *src_addr)
{
    size_t n = 0;

    while (n < count && ecq->count) {
        size_t k = 0;

        if (strictmr_config.nic.reorder) {
            size_t span = ecq->count < strictmr_config.nic.reorder_window
                              ? ecq->count
                              : strictmr_config.nic.reorder_window;
            size_t j = engine_rng_next(&ecq->rng) % span;

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
    engine_progress(d, false);
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
    engine_progress(d, false);
    ret = fi_cq_readerr(cq->core, buf, flags);
    if (ret > 0) {
        cq->engine->core_error = false;
        /* errors carry no trustworthy flags: only a live record is ours */
        if (buf->op_context && engine_rec_live(d, buf->op_context)) {
            struct engine_rec *r = buf->op_context;

            buf->op_context = r->call.context;
            engine_rec_done(r);
            engine_rec_free(r);
        }
    } else if (ret == -FI_EAGAIN) {
        cq->engine->core_error = false;
    }
    pthread_mutex_unlock(&d->lock);
    return ret;
}
