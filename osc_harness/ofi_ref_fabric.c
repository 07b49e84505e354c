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

/* A libfabric call that returned rc: unless it is 0, the process ends with exit code 1. */
static void check(const char *what, int rc)
{
    if (rc) {
        fprintf(stderr, "ofi_rma_ref: %s: %s (%d)\n", what, fi_strerror(-rc), rc);
        exit(1);
    }
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

    check("fi_fabric", fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
    check("fi_domain", fi_domain(f->fabric, f->info, &f->domain, NULL));
    check("fi_av_open", fi_av_open(f->domain, &av_attr, &f->av, NULL));
    check("fi_cq_open", fi_cq_open(f->domain, &cq_attr, &f->cq, NULL));
    check("fi_endpoint", fi_endpoint(f->domain, f->info, &f->ep, NULL));
    check("fi_ep_bind(av)", fi_ep_bind(f->ep, &f->av->fid, 0));
    check("fi_ep_bind(cq)", fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
    check("fi_enable", fi_enable(f->ep));
}

static void register_region(ref_fabric_t *f)
{
    const uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    size_t len = f->data_len + REF_PAGE;
    int prov_key = !!(f->info->domain_attr->mr_mode & FI_MR_PROV_KEY);

    if (posix_memalign((void **)&f->region, REF_PAGE, len) ||
        posix_memalign((void **)&f->origin, REF_PAGE, f->data_len)) {
        check("posix_memalign", -FI_ENOMEM);
    }
    memset(f->region, 0, len);
    memset(f->origin, 0x5a, f->data_len);
    f->ctrl = (volatile uint64_t *)(f->region + f->data_len);
    f->scratch = (uint64_t *)(f->region + f->data_len + 8);
    /* Each process has its own domain, so a fixed requested key cannot collide. */
    check("fi_mr_reg",
          fi_mr_reg(f->domain, f->region, len, access, 0, prov_key ? 0 : 1, 0, &f->mr, NULL));
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

    check("fi_getname", fi_getname(&f->ep->fid, mine.name, &name_len));
    mine.name_len = name_len;
    mine.key = fi_mr_key(f->mr);
    mine.base = (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)f->region : 0;
    if (full_io(f->sock, &mine, sizeof(mine), 1) || full_io(f->sock, &theirs, sizeof(theirs), 0)) {
        check("out-of-band exchange", -FI_EIO);
    }
    if (1 != fi_av_insert(f->av, theirs.name, 1, &f->peer, 0, NULL)) {
        check("fi_av_insert", -FI_EINVAL);
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
    prov = f->info->fabric_attr->prov_name;
    f->acc_as_fetch = f->delivery_complete && (0 == strcmp(prov, "shm") || 0 == strncmp(prov, "shm;", 4));
    f->data_len = data_len;
    f->nctx = max_window + 8;
    f->ctxs = calloc((size_t)f->nctx, sizeof(*f->ctxs));
    if (NULL == f->ctxs) {
        check("calloc", -FI_ENOMEM);
    }
    open_fids(f);
    register_region(f);
    exchange_addresses(f);
    return 0;
}

/* Everything is open: ref_fabric_open ends the process on a failure. */
void ref_fabric_close(ref_fabric_t *f)
{
    ref_wait_all(f);
    fi_close(&f->mr->fid);
    fi_close(&f->ep->fid);
    fi_close(&f->cq->fid);
    fi_close(&f->av->fid);
    fi_close(&f->domain->fid);
    fi_close(&f->fabric->fid);
    fi_freeinfo(f->info);
    free(f->region);
    free(f->origin);
    free(f->ctxs);
}

void ref_fabric_describe(const ref_fabric_t *f, char *buf, size_t len)
{
    uint64_t m = (uint64_t)f->info->domain_attr->mr_mode;

    snprintf(buf, len, "provider %s, mr_mode%s%s%s%s, completion %s%s, data progress manual",
             f->info->fabric_attr->prov_name, (m & FI_MR_VIRT_ADDR) ? " virt_addr" : "",
             (m & FI_MR_PROV_KEY) ? " prov_key" : "", (m & FI_MR_ALLOCATED) ? " allocated" : "",
             (m & REF_MR_SERVED) ? "" : " none", f->delivery_complete ? "delivery" : "read_proof",
             f->acc_as_fetch ? ", acc as fi_fetch_atomic" : "");
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
        check("fi_cq_read", (int)n);
    }
    return 0;
}

void ref_wait_all(ref_fabric_t *f)
{
    while (f->outstanding > 0) {
        ref_progress(f);
    }
}

/* One attempt to post kind on the peer's region at off: buf (len bytes, or the int64 operand). */
static ssize_t try_post(ref_fabric_t *f, ref_kind_t kind, const void *buf, size_t len, size_t off,
                        void *result, void *ctx)
{
    static const int64_t zero = 0; /* what compare-and-swap compares with */
    const uint64_t to = f->peer_base + off, key = f->peer_key;

    switch (kind) {
    case REF_PUT:
        return fi_write(f->ep, buf, len, NULL, f->peer, to, key, ctx);
    case REF_GET:
        return fi_read(f->ep, (void *)buf, len, NULL, f->peer, to, key, ctx);
    case REF_ACC:
        return f->acc_as_fetch ? fi_fetch_atomic(f->ep, buf, 1, NULL, &f->acc_sink, NULL, f->peer,
                                                 to, key, FI_INT64, FI_SUM, ctx)
                               : fi_atomic(f->ep, buf, 1, NULL, f->peer, to, key, FI_INT64, FI_SUM,
                                           ctx);
    case REF_FOP:
    case REF_ATOMIC_READ:
        return fi_fetch_atomic(f->ep, buf, 1, NULL, result, NULL, f->peer, to, key, FI_INT64,
                               REF_FOP == kind ? FI_SUM : FI_ATOMIC_READ, ctx);
    default:
        return fi_compare_atomic(f->ep, buf, 1, NULL, &zero, NULL, result, NULL, f->peer, to, key,
                                 FI_INT64, FI_CSWAP, ctx);
    }
}

/* Post, progressing while the provider is out of resources; what names the call in errors. */
static void post(ref_fabric_t *f, const char *what, ref_kind_t kind, const void *buf, size_t len,
                 size_t off, void *result, int slot)
{
    ssize_t rc;

    while (-FI_EAGAIN ==
           (rc = try_post(f, kind, buf, len, off, result, &f->ctxs[slot % f->nctx]))) {
        ref_progress(f);
    }
    check(what, (int)rc);
    ++f->outstanding;
}

void ref_post(ref_fabric_t *f, const char *what, ref_kind_t kind, size_t off, size_t len,
              int64_t *result, int slot)
{
    static const int64_t one = 1; /* what the atomics add, and compare-and-swap swaps in */

    post(f, what, kind, kind <= REF_GET ? (const void *)(f->origin + off) : &one, len, off, result,
         slot);
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
        post(f, "fi_fetch_atomic (proof)", REF_ATOMIC_READ, &f->proof_src, 8, scratch,
             &f->proof_dst, slot);
    } else {
        post(f, "fi_read (proof)", REF_GET, &f->proof_dst, 8, scratch, NULL, slot);
    }
    ref_wait_all(f);
}

void ref_step_done(ref_fabric_t *f, uint64_t step)
{
    const int slot = f->nctx - 2;

    f->step_src = step;
    post(f, "fi_write (step)", REF_PUT, &f->step_src, 8, f->data_len, NULL, slot);
    ref_wait_all(f);
    while (*f->ctrl < step) {
        ref_progress(f);
    }
}
