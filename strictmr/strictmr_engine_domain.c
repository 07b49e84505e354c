/*
 * The NIC data path's domain side (the engine's overview heads strictmr_engine.c): what the
 * engine adds to an info and asks of the core, the domain's lock, the engine's part of a CQ's
 * and an endpoint's life from open to close, and the domain's engine with its progress thread,
 * started at domain open and stopped at domain close or, for a domain left open, at unload.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strictmr_engine.h"

bool strictmr_engine_on(void)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;

    return nic->reorder || nic->progress_us >= 0 || nic->tx_size || nic->rx_size || nic->cq_size;
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
/* ---------------------------------------------------------------- CQs */
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

void strictmr_engine_ep_bind_cq(struct strictmr_ep *ep, uint64_t flags)
{
    if (flags & FI_TRANSMIT) {
        ep->engine->selective[0] = (flags & FI_SELECTIVE_COMPLETION) != 0;
    }
    if (flags & FI_RECV) {
        ep->engine->selective[1] = (flags & FI_SELECTIVE_COMPLETION) != 0;
    }
}

int strictmr_engine_ep_op_flags(struct strictmr_ep *ep, bool set, uint64_t *flags)
{
    struct strictmr_engine_domain *d = ep->domain->engine;
    uint64_t dir = flags ? *flags & (FI_TRANSMIT | FI_RECV) : 0;
    bool rx = dir == FI_RECV;

    if (dir != FI_TRANSMIT && dir != FI_RECV) {
        FI_WARN(&strictmr_prov, FI_LOG_EP_CTRL,
                "endpoint %u: fi_control(%s) %s: refused, nothing changed\n", ep->id,
                set ? "FI_SETOPSFLAG" : "FI_GETOPSFLAG",
                !flags ? "without flags" : "naming not exactly one of FI_TRANSMIT, FI_RECV");
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&d->lock);
    if (set) {
        ep->engine->op_flags[rx] = *flags & ~dir;
    } else {
        *flags = ep->engine->op_flags[rx];
    }
    pthread_mutex_unlock(&d->lock);
    return 0;
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
            strictmr_cq_raise(ep->tx_cq, r->call.context, engine_rec_cq_flags(r), FI_ECANCELED)) {
            FI_WARN(&strictmr_prov, FI_LOG_EP_CTRL,
                    "endpoint %u closed with an operation held: dropped\n", ep->id);
        }
        engine_rec_free(r);
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

/* ---------------------------------------------------------------- domain */
static void *progress_thread(void *arg)
{
    struct strictmr_engine_domain *d = arg;
    long us = strictmr_config.nic.progress_us;

    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        struct timespec ts;

        engine_progress(d, true);
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
        engine_rec_free(d->live.next);
    }
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->lock);
    free(d);
    dom->engine = NULL;
}
