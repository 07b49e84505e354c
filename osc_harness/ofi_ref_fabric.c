/*
 * Raw libfabric reference: provider selection on the BTL's terms, the fid
 * chain, memory registration, the out-of-band exchange and the posting and
 * completion helpers (see ofi_ref.h).
 */
#define _GNU_SOURCE
#include "ofi_ref.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_PAGE 4096
#define REF_NAME_MAX 256
#define REF_CQ_BATCH 64

/* What the BTL asks of providers that do not demand local or endpoint (btl_ofi_discovery.c),
 * so the reference runs on the same terms. */
#define REF_MR_SERVED (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define REF_PROOF_ORDER (FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW)

static void die(const char *what, int rc)
{
    fprintf(stderr, "ofi_rma_ref: %s: %s (%d)\n", what, fi_strerror(-rc), rc);
    exit(1);
}

static struct fi_info *getinfo(const char *prov, uint64_t op_flags, uint64_t msg_order, int hmem)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL, *match = NULL;

    if (NULL == hints) {
        return NULL;
    }
    hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = (int)REF_MR_SERVED;
    if (hmem) {
        /* as the BTL asks where libfabric >= 1.18: system memory only */
        hints->caps |= FI_HMEM;
        hints->domain_attr->mr_mode |= FI_MR_HMEM;
    }
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
    hints->tx_attr->op_flags = op_flags;
    hints->tx_attr->msg_order = msg_order;

    if (0 == fi_getinfo(hmem ? FI_VERSION(1, 18) : REF_FI_VERSION, NULL, NULL, 0, hints, &list)) {
        for (struct fi_info *cur = list; cur && !match; cur = cur->next) {
            if (0 == strcmp(cur->fabric_attr->prov_name, prov)) {
                match = fi_dupinfo(cur);
            }
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(hints);
    return match;
}

/* With FI_HMEM where libfabric has API 1.18 and the provider grants it, as the BTL does. */
static struct fi_info *getinfo_as_btl(const char *prov, uint64_t op_flags, uint64_t msg_order)
{
    struct fi_info *info = NULL;

    if (fi_version() >= FI_VERSION(1, 18)) {
        info = getinfo(prov, op_flags, msg_order, 1);
    }
    return info ? info : getinfo(prov, op_flags, msg_order, 0);
}

/* Delivery-complete when the provider grants it, else read-after-write ordering. */
static struct fi_info *select_provider(const char *prov, int *delivery_complete)
{
    struct fi_info *info = getinfo_as_btl(prov, FI_DELIVERY_COMPLETE, 0);

    *delivery_complete = NULL != info;
    if (NULL == info) {
        info = getinfo_as_btl(prov, 0, REF_PROOF_ORDER);
    }
    return info;
}

static void open_fids(ref_fabric_t *f)
{
    struct fi_av_attr av_attr = {
        .type = FI_AV_UNSPEC == f->info->domain_attr->av_type ? FI_AV_TABLE
                                                              : f->info->domain_attr->av_type,
    };
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
    int rc;

    if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)))
        die("fi_fabric", rc);
    if ((rc = fi_domain(f->fabric, f->info, &f->domain, NULL)))
        die("fi_domain", rc);
    if ((rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)))
        die("fi_av_open", rc);
    if ((rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)))
        die("fi_cq_open", rc);
    if ((rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)))
        die("fi_endpoint", rc);
    if ((rc = fi_ep_bind(f->ep, &f->av->fid, 0)))
        die("fi_ep_bind(av)", rc);
    if ((rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)))
        die("fi_ep_bind(cq)", rc);
    if ((rc = fi_enable(f->ep)))
        die("fi_enable", rc);
}

static void register_region(ref_fabric_t *f)
{
    const uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    size_t len = f->data_len + REF_PAGE;
    int prov_key = !!(f->info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    int rc;

    if (posix_memalign((void **)&f->region, REF_PAGE, len) ||
        posix_memalign((void **)&f->origin, REF_PAGE, f->data_len)) {
        die("posix_memalign", -FI_ENOMEM);
    }
    memset(f->region, 0, len);
    memset(f->origin, 0x5a, f->data_len);
    f->ctrl = (volatile uint64_t *)(f->region + f->data_len);
    f->scratch = (uint64_t *)(f->region + f->data_len + 8);
    /* Each process has its own domain, so a fixed requested key cannot collide. */
    rc = fi_mr_reg(f->domain, f->region, len, access, 0, prov_key ? 0 : 1, 0, &f->mr, NULL);
    if (rc) {
        die("fi_mr_reg", rc);
    }
}

static int full_io(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

typedef struct ref_card {
    uint64_t base, key, name_len;
    char name[REF_NAME_MAX];
} ref_card_t;

static void exchange_addresses(ref_fabric_t *f)
{
    ref_card_t mine = {0}, theirs;
    size_t name_len = sizeof(mine.name);
    int rc;

    if ((rc = fi_getname(&f->ep->fid, mine.name, &name_len)))
        die("fi_getname", rc);
    mine.name_len = name_len;
    mine.key = fi_mr_key(f->mr);
    mine.base = (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)f->region : 0;
    if (full_io(f->sock, &mine, sizeof(mine), 1) || full_io(f->sock, &theirs, sizeof(theirs), 0)) {
        die("out-of-band exchange", -FI_EIO);
    }
    if (1 != fi_av_insert(f->av, theirs.name, 1, &f->peer, 0, NULL)) {
        die("fi_av_insert", -FI_EINVAL);
    }
    f->peer_base = theirs.base;
    f->peer_key = theirs.key;
}

int ref_fabric_open(ref_fabric_t *f, const char *prov, size_t data_len, int max_window)
{
    f->info = select_provider(prov, &f->delivery_complete);
    if (NULL == f->info) {
        return -FI_ENODATA;
    }
    f->data_len = data_len;
    f->nctx = max_window + 8;
    f->ctxs = calloc((size_t)f->nctx, sizeof(*f->ctxs));
    if (NULL == f->ctxs) {
        die("calloc", -FI_ENOMEM);
    }
    open_fids(f);
    register_region(f);
    exchange_addresses(f);
    return 0;
}

void ref_fabric_close(ref_fabric_t *f)
{
    ref_wait_all(f);
    if (f->mr)
        fi_close(&f->mr->fid);
    if (f->ep)
        fi_close(&f->ep->fid);
    if (f->cq)
        fi_close(&f->cq->fid);
    if (f->av)
        fi_close(&f->av->fid);
    if (f->domain)
        fi_close(&f->domain->fid);
    if (f->fabric)
        fi_close(&f->fabric->fid);
    fi_freeinfo(f->info);
    free(f->region);
    free(f->origin);
    free(f->ctxs);
}

void ref_fabric_describe(const ref_fabric_t *f, char *buf, size_t len)
{
    uint64_t m = (uint64_t)f->info->domain_attr->mr_mode;

    snprintf(buf, len, "provider %s, mr_mode%s%s%s%s, completion %s, data progress manual",
             f->info->fabric_attr->prov_name, (m & FI_MR_VIRT_ADDR) ? " virt_addr" : "",
             (m & FI_MR_PROV_KEY) ? " prov_key" : "", (m & FI_MR_ALLOCATED) ? " allocated" : "",
             (m & REF_MR_SERVED) ? "" : " none", f->delivery_complete ? "delivery" : "read_proof");
}

int ref_oob_barrier(ref_fabric_t *f)
{
    char token = 'b';

    return full_io(f->sock, &token, 1, 1) || full_io(f->sock, &token, 1, 0);
}

int ref_oob_exchange(ref_fabric_t *f, double mine, double *theirs)
{
    return full_io(f->sock, &mine, sizeof(mine), 1) || full_io(f->sock, theirs, sizeof(*theirs), 0);
}

int ref_progress(ref_fabric_t *f)
{
    struct fi_cq_entry entries[REF_CQ_BATCH];
    struct fi_cq_err_entry err = {0};
    ssize_t n = fi_cq_read(f->cq, entries, REF_CQ_BATCH);

    if (n > 0) {
        f->outstanding -= (uint64_t)n;
        return (int)n;
    }
    if (-FI_EAVAIL == n) {
        fi_cq_readerr(f->cq, &err, 0);
        fprintf(stderr, "ofi_rma_ref: operation failed: %s (prov_errno %d)\n", fi_strerror(err.err),
                err.prov_errno);
        exit(1);
    }
    if (-FI_EAGAIN != n) {
        die("fi_cq_read", (int)n);
    }
    return 0;
}

void ref_wait_all(ref_fabric_t *f)
{
    while (f->outstanding > 0) {
        ref_progress(f);
    }
}

/* Post, progressing while the provider is out of resources. */
#define REF_POST(f, what, call)                                                                    \
    do {                                                                                           \
        ssize_t rc_;                                                                               \
        while (-FI_EAGAIN == (rc_ = (call))) {                                                     \
            ref_progress(f);                                                                       \
        }                                                                                          \
        if (rc_) {                                                                                 \
            die(what, (int)rc_);                                                                   \
        }                                                                                          \
        ++(f)->outstanding;                                                                        \
    } while (0)

static void *ctx_of(ref_fabric_t *f, int slot)
{
    return &f->ctxs[slot % f->nctx];
}

void ref_write(ref_fabric_t *f, size_t off, size_t len, int slot)
{
    REF_POST(f, "fi_write",
             fi_write(f->ep, f->origin + off, len, NULL, f->peer, f->peer_base + off, f->peer_key,
                      ctx_of(f, slot)));
}

void ref_read(ref_fabric_t *f, size_t off, size_t len, int slot)
{
    REF_POST(f, "fi_read",
             fi_read(f->ep, f->origin + off, len, NULL, f->peer, f->peer_base + off, f->peer_key,
                     ctx_of(f, slot)));
}

void ref_atomic_add(ref_fabric_t *f, const int64_t *operand, size_t off, int slot)
{
    REF_POST(f, "fi_atomic",
             fi_atomic(f->ep, operand, 1, NULL, f->peer, f->peer_base + off, f->peer_key, FI_INT64,
                       FI_SUM, ctx_of(f, slot)));
}

void ref_fetch_add(ref_fabric_t *f, const int64_t *operand, int64_t *result, size_t off, int slot)
{
    REF_POST(f, "fi_fetch_atomic",
             fi_fetch_atomic(f->ep, operand, 1, NULL, result, NULL, f->peer, f->peer_base + off,
                             f->peer_key, FI_INT64, FI_SUM, ctx_of(f, slot)));
}

void ref_cswap(ref_fabric_t *f, const int64_t *desired, const int64_t *compare, int64_t *result,
               size_t off, int slot)
{
    REF_POST(f, "fi_compare_atomic",
             fi_compare_atomic(f->ep, desired, 1, NULL, compare, NULL, result, NULL, f->peer,
                               f->peer_base + off, f->peer_key, FI_INT64, FI_CSWAP,
                               ctx_of(f, slot)));
}

void ref_flush(ref_fabric_t *f, int after_atomics)
{
    const size_t scratch = f->data_len + 8;
    const int slot = f->nctx - 1;

    ref_wait_all(f);
    if (f->delivery_complete) {
        return;
    }
    if (after_atomics) {
        REF_POST(f, "fi_fetch_atomic (proof)",
                 fi_fetch_atomic(f->ep, &f->proof_src, 1, NULL, &f->proof_dst, NULL, f->peer,
                                 f->peer_base + scratch, f->peer_key, FI_INT64, FI_ATOMIC_READ,
                                 ctx_of(f, slot)));
    } else {
        REF_POST(f, "fi_read (proof)",
                 fi_read(f->ep, &f->proof_dst, 8, NULL, f->peer, f->peer_base + scratch,
                         f->peer_key, ctx_of(f, slot)));
    }
    ref_wait_all(f);
}

void ref_step_done(ref_fabric_t *f, uint64_t step)
{
    const int slot = f->nctx - 2;

    f->step_src = step;
    REF_POST(f, "fi_write (step)",
             fi_write(f->ep, &f->step_src, 8, NULL, f->peer, f->peer_base + f->data_len,
                      f->peer_key, ctx_of(f, slot)));
    ref_wait_all(f);
    while (*f->ctrl < step) {
        ref_progress(f);
    }
}
