/*
 * The strictmr test fixture: one process, two domains on one fabric (an
 * initiator side "a" and a target side "b"), each with a CQ (FI_CQ_FORMAT_DATA),
 * an AV holding both endpoints' addresses, and an enabled endpoint.
 */
#ifndef STRICTMR_TEST_FIXTURE_H
#define STRICTMR_TEST_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../strictmr_ext.h"

#define EXIT_SKIP 77
#define REGION 4096

struct side {
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_cq *rx_cq; /* receives complete here if set, else on cq */
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t peer; /* the other side's address in this side's AV */
};

struct fixture {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct side a, b;
    struct strictmr_stats_ops *stats;
    uint64_t mode;
    size_t key_size;
};

/* What one operation did: the return of the call and its completion. */
struct outcome {
    int ret;     /* the call's return value */
    int cq_err;  /* 0: completed fine; else the error completion's err */
    bool waited; /* a completion was expected and seen */
    /* The completion's op_context, flags and len, error or not. */
    void *context;
    uint64_t flags;
    size_t len;
};

/* RDM hints naming one provider, with caps, mr_mode and a table AV (fi_freeinfo them). */
struct fi_info *fixture_hints(const char *prov_name, uint64_t caps, uint64_t mr_mode);
int fixture_open(struct fixture *f, const char *prov_name);
/* The same with other caps in the hints (fixture_open asks FI_MSG | FI_RMA | FI_ATOMIC). */
int fixture_open_caps(struct fixture *f, const char *prov_name, uint64_t caps);
void fixture_close(struct fixture *f);
/* Opens, binds and enables s->ep on s's domain, AV and CQ. */
int side_endpoint(struct fixture *f, struct side *s);
/* Inserts from's address into to's AV. */
int side_insert(struct side *to, struct side *from, fi_addr_t *addr);
/* Drives both sides' progress once. */
void fixture_progress(struct fixture *f);
/* Retries a post while the core says -FI_EAGAIN, driving progress (shm maps peers lazily). */
#define POST_RETRY(f, call)                                                                        \
    ({                                                                                             \
        ssize_t post_ret_;                                                                         \
        int post_tries_ = 100000;                                                                  \
        while ((post_ret_ = (call)) == -FI_EAGAIN && post_tries_--)                                \
            fixture_progress(f);                                                                   \
        (int)post_ret_;                                                                            \
    })
/* Waits for one completion on a's CQ, driving b's progress too (b's completions are dropped). */
int fixture_wait(struct fixture *f, struct outcome *out);
/* Waits for one completion on s's CQ, driving the other side's progress but leaving its
 * completions queued. */
int fixture_wait_on(struct fixture *f, struct side *s, struct outcome *out);

/* An MR on a side, bound and enabled on that side's endpoint as FI_MR_ENDPOINT asks. */
int mr_open(struct fixture *f, struct side *s, void *buf, size_t len, uint64_t access,
            uint64_t requested_key, struct fid_mr **mr);
/* The key and address base an initiator on a uses for an MR of b. */
int remote_of(struct fixture *f, struct fid_mr *mr, void *buf, uint64_t *key, uint64_t *base);

#endif
