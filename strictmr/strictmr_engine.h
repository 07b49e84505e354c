/*
 * The NIC data path's private declarations (the engine's overview heads strictmr_engine.c),
 * included only by its files, each above the one before: strictmr_engine.c (records and
 * posting to the core), strictmr_engine_cq.c (the completion ring: reaping, reordering, the
 * caller's reads) and strictmr_engine_domain.c (infos, the domain's lock, the engine's part of
 * a CQ's, endpoint's and domain's life, the progress thread). The engine's API for the rest of
 * the provider is declared in strictmr.h.
 *
 * Locking:
 * - A domain's lock (strictmr_engine_domain.lock) guards the domain's lists (eps, cqs, and live
 *   with every record on it); of each endpoint outstanding, held, held_count, seq, max_handed
 *   and rng; of each CQ the ring's entries, head, count, stash, stashed, core_error,
 *   no_readfrom, enabled and rng; the domain's stop (cond waits on it); and every call into
 *   the core's data path. The caller of strictmr_engine_ep_close, strictmr_engine_cq_close and
 *   strictmr_engine_ep_enabled holds it (strictmr_engine_lock), around the core's close or
 *   enable too.
 * - An endpoint's op_flags are set at open, before it is on the list, then under the domain's
 *   lock: strictmr_engine_ep_op_flags writes and reads them (fi_control FI_SETOPSFLAG and
 *   FI_GETOPSFLAG, which a FI_THREAD_SAFE caller may make while another thread posts on the
 *   endpoint) and strictmr_engine_post reads them.
 * - An endpoint's selective is written by strictmr_engine_ep_bind_cq once the core's bind
 *   succeeded, with the lock held (bind_cq in strictmr_ep.c holds it around both), and read
 *   by strictmr_engine_post under it, and by nothing else (not the progress thread).
 * - threads_lock (strictmr_engine_domain.c) guards threads_running and each domain's next_running.
 * - Set once and not under a lock: what an endpoint or CQ has before it goes on its domain's
 *   list (ep, cq, format, cap, ring); a domain's thread and thread_on, which its open and
 *   close (or the cleanup, under threads_lock) alone touch.
 */
#ifndef STRICTMR_ENGINE_H
#define STRICTMR_ENGINE_H

#include "strictmr.h"

#define ENGINE_MAGIC 0x53544d52454e4731ULL

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

static inline uint64_t engine_rng_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* ---------------------------------------------------------------- strictmr_engine.c */
/* Records, each with the domain's lock held. */
void engine_rec_free(struct engine_rec *r);
bool engine_rec_live(struct strictmr_engine_domain *d, const void *p);
/* A slot of the record's endpoint is free again. */
void engine_rec_done(struct engine_rec *r);
uint64_t engine_rec_cq_flags(const struct engine_rec *r);
/* Hands the endpoint's held records to the core in a permuted order. */
void engine_release(struct strictmr_engine_ep *eep, bool by_thread);

/* ---------------------------------------------------------------- strictmr_engine_cq.c */
/* Releases every endpoint's held records and reaps the CQs, with the domain's lock held. */
void engine_progress(struct strictmr_engine_domain *d, bool by_thread);

#endif
