/*
 * Raw libfabric measurement, no MPI and no btl-ofi: what a provider does with
 * a remote access through a key whose registration is gone.
 *
 * Every probe runs in a fresh pair of processes (fork), so that what one probe
 * does to a connection (tcp;ofi_rxm tears it down on a bad key) cannot decide
 * the next one. In each pair the target registers region A, the origin writes
 * through A's key (control: it must complete and land), then:
 *   bogus_key    write to live A through a key never registered
 *   stale_write  the target closes A (fi_close); write through A's old key
 *   stale_read   likewise, a read through A's old key
 *   same_key     A closed, a new region B (another buffer) is registered with
 *                the SAME key A had (what an application reusing key values
 *                does; btl-ofi never does); write through the old key and A's
 *                address: does it land in A or B?
 *   fresh_key    A closed, the same memory is registered again as region B
 *                under a FRESH key (as btl-ofi's key counter does when a freed
 *                window's memory is registered again); write through the old
 *                key and address: does it change B?
 * A probe's wait for its completion is bounded (--wait-ms); after it the target
 * keeps progressing and watching its memory for --settle-ms. The parent kills a
 * pair that does not finish in time, so no run can hang.
 *
 * Configurations (one output row each):
 *   default  per provider: delivery-complete asked and not, FI_MR_PROV_KEY
 *            offered ("prov") and not ("app", key 0x5a1 requested)
 *   --btl    per provider: the configuration btl-ofi negotiates by default
 *            (its fi_getinfo hints; FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|
 *            FI_MR_ALLOCATED offered; delivery-complete if granted, else
 *            read-after-write ordering; keys from a counter 1, 2, ... unless
 *            the provider grants FI_MR_PROV_KEY)
 *   -o       do not offer FI_MR_VIRT_ADDR (offsets, btl_ofi_mr_mode=none)
 *
 *   stale_key [-o] [--btl] [--json] [--wait-ms N] [--settle-ms N]
 *             [--probes LIST] [PROVIDER...]      default: shm sockets "tcp;ofi_rxm"
 *
 * Prints a table, or with --json one JSON object per row. Exit 0 when it ran
 * (it measures, it does not judge), 2 on usage or a pipe/fork failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUESTED_KEY 0x5a1
#define BOGUS_KEY_DISTANCE 0x1000
#define BYTES 8
#define TAG_LEN 96
#define ADDR_LEN 256

enum { P_BOGUS, P_STALE_WRITE, P_STALE_READ, P_SAME_KEY, P_FRESH_KEY, NPROBES };
static const char *const probe_names[NPROBES] = {"bogus_key", "stale_write", "stale_read",
                                                 "same_key", "fresh_key"};

enum { CFG_APP, CFG_PROV, CFG_BTL };
static const char *const cfg_names[] = {"app", "prov", "btl"};

struct config {
    const char *prov;
    int kind;     /* CFG_* */
    int delivery; /* app/prov: ask for FI_DELIVERY_COMPLETE; btl: negotiated */
};

static int offer_virt_addr = 1;
static long wait_ms = 5000;
static long settle_ms = 200;

/* One operation posted by the origin. */
struct outcome {
    int tried;
    int post_rc;         /* 0, or the last posting's negative libfabric error */
    char completion[16]; /* ok, error, none (within wait_ms), not_posted, not_tried */
    int err, prov_errno; /* error completion */
    char error[TAG_LEN]; /* fi_strerror(err) */
    long waited_ms;
    char late[TAG_LEN]; /* a completion that came after the wait ended, "" if none */
    uint8_t data[BYTES];
};

/* What one side saw, sent back to the parent through a pipe. */
struct result {
    char setup[TAG_LEN];                   /* first failing setup call and its error, "" if none */
    uint64_t mr_mode, op_flags, msg_order; /* granted */
    uint64_t key_a, key_b;                 /* target */
    char reg_b[TAG_LEN];                   /* target: "", "ok" or "refused: ..." */
    int control_landed;                    /* target */
    int changed_a, changed_b;              /* target: memory changed during the probe */
    int cq_errors;                         /* error entries on this side's own CQ */
    struct outcome control, probe;         /* origin */
};

struct side {
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
    int to_peer, from_peer;
    struct result *res;
};

enum { OP_PENDING, OP_OK, OP_ERROR };
struct op {
    struct fi_context2 ctx; /* first: the provider's room (FI_CONTEXT / FI_CONTEXT2) */
    int state;
    int waiting; /* the bounded wait is still running */
    struct outcome *out;
    uint8_t buf[BYTES];
};

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ < 0) {                                                                             \
            snprintf(s->res->setup, TAG_LEN, "%.50s: %s", #call, fi_strerror(-rc_));               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void nap(void)
{
    struct timespec ts = {0, 200000};

    nanosleep(&ts, NULL);
}

static void completed(void *context, int err, int prov_errno)
{
    struct op *op = context;

    if (NULL == op) { /* the target posts nothing */
        return;
    }
    if (op->waiting) {
        op->state = err ? OP_ERROR : OP_OK;
        op->out->err = err;
        op->out->prov_errno = prov_errno;
        snprintf(op->out->error, TAG_LEN, "%s", err ? fi_strerror(err) : "");
    } else if (op->out && !op->out->late[0]) {
        snprintf(op->out->late, TAG_LEN, "%s%s", err ? "error: " : "ok",
                 err ? fi_strerror(err) : "");
    }
}

/* Read what the CQ holds (a target must, for manual-progress providers). */
static void drain(struct side *s)
{
    struct fi_cq_entry entry;
    struct fi_cq_err_entry err;

    for (int i = 0; i < 16; i++) {
        ssize_t n = fi_cq_read(s->cq, &entry, 1);
        if (1 == n) {
            completed(entry.op_context, 0, 0);
        } else if (-FI_EAVAIL == n) {
            memset(&err, 0, sizeof(err));
            if (1 == fi_cq_readerr(s->cq, &err, 0)) {
                s->res->cq_errors++;
                completed(err.op_context, err.err ? err.err : FI_EOTHER, err.prov_errno);
            }
        } else {
            return;
        }
    }
}

/* Progress our CQ until `len` bytes came from the peer, at most `ms`; 0 on success. */
static int recv_peer(struct side *s, void *msg, size_t len, long ms)
{
    long deadline = now_ms() + ms;
    size_t got = 0;

    while (got < len && now_ms() <= deadline) {
        if (s->cq) {
            drain(s);
        }
        struct pollfd pfd = {.fd = s->from_peer, .events = POLLIN};
        if (poll(&pfd, 1, s->cq ? 0 : 10) <= 0) {
            if (s->cq) {
                nap();
            }
            continue;
        }
        ssize_t n = read(s->from_peer, (char *)msg + got, len - got);
        if (0 == n || (n < 0 && EAGAIN != errno && EINTR != errno)) {
            return 1; /* the peer is gone */
        }
        got += n > 0 ? (size_t)n : 0;
    }
    return got == len ? 0 : 1;
}

/* Bound for waiting on the peer: it may be in a bounded wait of its own. */
static long peer_ms(void)
{
    return 2 * wait_ms + settle_ms + 15000;
}

static int wait_peer(struct side *s, char *msg)
{
    return recv_peer(s, msg, 1, peer_ms());
}

static int tell_peer(struct side *s, char msg)
{
    return write(s->to_peer, &msg, 1) == 1 ? 0 : 1;
}

/* Post (retrying -FI_EAGAIN) and wait for the completion, all within wait_ms. */
static void post_and_wait(struct side *s, struct op *op, int is_read, uint64_t addr, uint64_t key,
                          struct outcome *out)
{
    long start = now_ms(), deadline = start + wait_ms;
    ssize_t rc;

    op->state = OP_PENDING;
    op->out = out;
    op->waiting = 1;
    out->tried = 1;
    do {
        rc = is_read ? fi_read(s->ep, op->buf, BYTES, NULL, s->peer, addr, key, op)
                     : fi_write(s->ep, op->buf, BYTES, NULL, s->peer, addr, key, op);
        if (-FI_EAGAIN == rc) {
            drain(s);
            nap();
        }
    } while (-FI_EAGAIN == rc && now_ms() < deadline);
    out->post_rc = (int)rc;
    if (rc) {
        snprintf(out->completion, sizeof(out->completion), "not_posted");
        op->out = NULL; /* the provider never saw this context */
    } else {
        while (OP_PENDING == op->state && now_ms() < deadline) {
            drain(s);
            if (OP_PENDING == op->state) {
                nap();
            }
        }
        snprintf(out->completion, sizeof(out->completion), "%s",
                 OP_OK == op->state      ? "ok"
                 : OP_ERROR == op->state ? "error"
                                         : "none");
    }
    op->waiting = 0;
    out->waited_ms = now_ms() - start;
    memcpy(out->data, op->buf, BYTES);
}

static int all_bytes(const volatile uint8_t *p, uint8_t v)
{
    for (int i = 0; i < BYTES; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

/* Progress and watch `p` for up to `ms`: 1 as soon as all its bytes are `v`. */
static int becomes(struct side *s, const volatile uint8_t *p, uint8_t v, long ms)
{
    long deadline = now_ms() + ms;

    do {
        drain(s);
        if (all_bytes(p, v)) {
            return 1;
        }
        nap();
    } while (now_ms() <= deadline);
    return 0;
}

static uint8_t region_a[BYTES], region_b[BYTES];

static int target(struct side *s, const struct config *cfg, int probe, struct fi_info *info)
{
    volatile uint8_t *a = region_a, *b = region_b;
    struct result *res = s->res;
    int prov_key = !!(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    uint64_t access = FI_REMOTE_READ | FI_REMOTE_WRITE;
    uint64_t first_key = REQUESTED_KEY, base = (uintptr_t)region_a;
    struct fid_mr *mr_a = NULL, *mr_b = NULL;
    uint8_t a_now = 0xaa, b_now = 0xbb;
    char msg;
    int rc = 0;

    if (CFG_BTL == cfg->kind) { /* btl_ofi_mr.c: access flags, counter starting at 1 */
        access |= FI_READ | FI_WRITE;
        first_key = 1;
    }
    memset(region_a, 0xaa, BYTES);
    memset(region_b, 0xbb, BYTES);
    CHECK(
        fi_mr_reg(s->domain, region_a, BYTES, access, 0, prov_key ? 0 : first_key, 0, &mr_a, NULL));
    res->key_a = fi_mr_key(mr_a);
    if (write(s->to_peer, &res->key_a, 8) != 8 || write(s->to_peer, &base, 8) != 8) {
        return 1;
    }
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* control write done */
    res->control_landed = becomes(s, a, 0x11, wait_ms);
    memset(region_a, 0xaa, BYTES);
    CHECK(tell_peer(s, 'k') ? -FI_EIO : 0);

    if (P_BOGUS != probe) {
        CHECK(fi_close(&mr_a->fid));
        mr_a = NULL;
    }
    if (P_SAME_KEY == probe || P_FRESH_KEY == probe) {
        /* same_key: another buffer under A's key; fresh_key: A's memory, new key */
        uint8_t *region = P_SAME_KEY == probe ? region_b : region_a;
        uint64_t want = P_SAME_KEY == probe ? res->key_a : res->key_a + 1;
        memset(region, 0xbb, BYTES);
        if (P_FRESH_KEY == probe) {
            a_now = 0xbb;
        }
        rc = fi_mr_reg(s->domain, region, BYTES, access, 0, prov_key ? 0 : want, 0, &mr_b, NULL);
        if (rc) {
            snprintf(res->reg_b, TAG_LEN, "refused: %s", fi_strerror(-rc));
        } else {
            res->key_b = fi_mr_key(mr_b);
            snprintf(res->reg_b, TAG_LEN, "ok");
        }
    }
    CHECK(tell_peer(s, rc ? 'n' : 'p') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* probe posted and waited for */
    long deadline = now_ms() + settle_ms;
    do { /* a write may land after its completion (transmit) or without one */
        drain(s);
        res->changed_a |= !all_bytes(a, a_now);
        res->changed_b |= !all_bytes(b, b_now);
        nap();
    } while (now_ms() <= deadline);
    if (mr_b) {
        CHECK(fi_close(&mr_b->fid));
    }
    if (mr_a) {
        CHECK(fi_close(&mr_a->fid));
    }
    return 0;
}

static int origin(struct side *s, int probe, struct fi_info *info)
{
    static struct op control, probe_op;
    struct result *res = s->res;
    uint64_t key, base;
    char msg;

    CHECK(recv_peer(s, &key, 8, peer_ms()) || recv_peer(s, &base, 8, peer_ms()) ? -FI_ETIMEDOUT
                                                                                : 0);
    /* without FI_MR_VIRT_ADDR remote addresses are offsets into the region */
    uint64_t addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? base : 0;

    memset(control.buf, 0x11, BYTES);
    post_and_wait(s, &control, 0, addr, key, &res->control);
    CHECK(tell_peer(s, 'w') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* control checked */
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* probe prepared ('p') or not ('n') */
    if ('p' == msg) {
        const uint8_t fill[NPROBES] = {0x44, 0x22, 0, 0x33, 0x33};
        memset(probe_op.buf, fill[probe], BYTES);
        post_and_wait(s, &probe_op, P_STALE_READ == probe, addr,
                      P_BOGUS == probe ? key + BOGUS_KEY_DISTANCE : key, &res->probe);
    } else {
        snprintf(res->probe.completion, sizeof(res->probe.completion), "not_tried");
    }
    CHECK(tell_peer(s, 'd') ? -FI_EIO : 0);
    return 0;
}

static int get_info(const struct config *cfg, struct fi_info **info)
{
    struct fi_info *hints = fi_allocinfo();
    int rc;

    if (NULL == hints) {
        return -FI_ENOMEM;
    }
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup(cfg->prov);
    if (CFG_BTL == cfg->kind) { /* btl_ofi_discovery.c, mca_btl_ofi_getinfo and _select */
        hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        hints->mode = FI_CONTEXT | FI_CONTEXT2;
        hints->domain_attr->mr_mode =
            (offer_virt_addr ? FI_MR_VIRT_ADDR : 0) | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
        hints->domain_attr->threading = FI_THREAD_DOMAIN;
        hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
        hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
        rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
        if (-FI_ENODATA == rc) {
            hints->tx_attr->op_flags = 0;
            hints->tx_attr->msg_order = FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW;
            rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
        }
    } else {
        hints->caps = FI_RMA;
        hints->domain_attr->mr_mode = (offer_virt_addr ? FI_MR_VIRT_ADDR : 0) | FI_MR_ALLOCATED |
                                      (CFG_PROV == cfg->kind ? FI_MR_PROV_KEY : 0);
        /* delivery: a write completes once the data is visible at the target;
         * otherwise the provider's default (transmit) completion */
        hints->tx_attr->op_flags = cfg->delivery ? FI_DELIVERY_COMPLETE : 0;
        rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
    }
    fi_freeinfo(hints);
    return rc;
}

static int run(const struct config *cfg, int probe, int is_target, struct side *s, int report)
{
    struct fi_info *info = NULL;
    struct fid_fabric *fabric = NULL;
    struct fid_av *av = NULL;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    char addr[ADDR_LEN] = {0}, peer_addr[ADDR_LEN];
    size_t addrlen = sizeof(addr);
    char bye;

    CHECK(get_info(cfg, &info));
    s->res->mr_mode = info->domain_attr->mr_mode;
    s->res->op_flags = info->tx_attr->op_flags;
    s->res->msg_order = info->tx_attr->msg_order;
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &s->domain, NULL));
    CHECK(fi_av_open(s->domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
    CHECK(fi_endpoint(s->domain, info, &s->ep, NULL));
    CHECK(fi_ep_bind(s->ep, &av->fid, 0));
    CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(s->ep));
    CHECK(fi_getname(&s->ep->fid, addr, &addrlen));
    CHECK(write(s->to_peer, addr, sizeof(addr)) != sizeof(addr) ? -FI_EIO : 0);
    CHECK(recv_peer(s, peer_addr, sizeof(peer_addr), peer_ms()) ? -FI_ETIMEDOUT : 0);
    CHECK(fi_av_insert(av, peer_addr, 1, &s->peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);
    int rc = is_target ? target(s, cfg, probe, info) : origin(s, probe, info);
    /* keep progressing until the peer is done too */
    if (0 == rc && (tell_peer(s, 'x') || wait_peer(s, &bye))) {
        snprintf(s->res->setup, TAG_LEN, "the peer did not finish");
    }
    /* report before tearing down: the parent bounds the teardown */
    if (write(report, s->res, sizeof(*s->res)) != sizeof(*s->res)) {
        _exit(1);
    }
    fi_close(&s->ep->fid);
    fi_close(&s->cq->fid);
    fi_close(&av->fid);
    fi_close(&s->domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    return 0;
}

static pid_t spawn(const struct config *cfg, int probe, int is_target, int to_peer, int from_peer,
                   int report, const int *others, int nothers)
{
    pid_t pid = fork();

    if (0 == pid) {
        struct result res;
        struct side s = {.to_peer = to_peer, .from_peer = from_peer, .res = &res};

        memset(&res, 0, sizeof(res));
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int i = 0; i < nothers; i++) { /* so that a dead peer reads as EOF */
            close(others[i]);
        }
        fcntl(from_peer, F_SETFL, O_NONBLOCK);
        if (run(cfg, probe, is_target, &s, report)) { /* setup failed: report it */
            _exit(write(report, &res, sizeof(res)) == sizeof(res) ? 0 : 1);
        }
        _exit(0);
    }
    return pid;
}

/* One probe in a fresh process pair. Returns 0, or 2 on a pipe/fork failure. */
struct probe_run {
    int got_t, got_o; /* reports received */
    int killed;       /* the pair did not finish within the bound */
    struct result t, o;
};

static int run_probe(const struct config *cfg, int probe, struct probe_run *pr)
{
    int t2o[2], o2t[2], rep_t[2], rep_o[2];
    long deadline = now_ms() + 3 * wait_ms + settle_ms + 30000;
    size_t got[2] = {0, 0};

    memset(pr, 0, sizeof(*pr));
    if (pipe(t2o) || pipe(o2t) || pipe(rep_t) || pipe(rep_o)) {
        return 2;
    }
    int not_t[] = {t2o[0], o2t[1], rep_t[0], rep_o[0], rep_o[1]};
    int not_o[] = {o2t[0], t2o[1], rep_o[0], rep_t[0], rep_t[1]};
    fflush(stdout);
    pid_t pids[2] = {spawn(cfg, probe, 1, t2o[1], o2t[0], rep_t[1], not_t, 5),
                     spawn(cfg, probe, 0, o2t[1], t2o[0], rep_o[1], not_o, 5)};
    close(t2o[0]), close(t2o[1]), close(o2t[0]), close(o2t[1]), close(rep_t[1]), close(rep_o[1]);
    if (pids[0] < 0 || pids[1] < 0) {
        return 2;
    }
    struct pollfd pfd[2] = {{.fd = rep_t[0], .events = POLLIN}, {.fd = rep_o[0], .events = POLLIN}};
    char *dst[2] = {(char *)&pr->t, (char *)&pr->o};
    int open_fds = 2, exited = 0, status;
    while ((open_fds || exited < 2) && now_ms() < deadline) {
        if (open_fds && poll(pfd, 2, 50) > 0) {
            for (int i = 0; i < 2; i++) {
                if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                    continue;
                }
                ssize_t n = read(pfd[i].fd, dst[i] + got[i], sizeof(struct result) - got[i]);
                got[i] += n > 0 ? (size_t)n : 0;
                if (n <= 0 || got[i] == sizeof(struct result)) {
                    close(pfd[i].fd);
                    pfd[i].fd = -1;
                    open_fds--;
                }
            }
        } else if (!open_fds) {
            poll(NULL, 0, 20);
        }
        for (int i = 0; i < 2; i++) {
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                pids[i] = 0;
                exited++;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (pfd[i].fd >= 0) {
            close(pfd[i].fd);
        }
        if (pids[i] > 0) {
            pr->killed = 1;
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status, 0);
        }
    }
    pr->got_t = got[0] == sizeof(struct result);
    pr->got_o = got[1] == sizeof(struct result);
    return 0;
}

/* ---- output ---- */

static int json = 0;

static const char *addressing(uint64_t mr_mode)
{
    return (mr_mode & FI_MR_VIRT_ADDR) ? "virt_addr" : "offset";
}

static const char *completion_mode(uint64_t op_flags)
{
    return (op_flags & FI_DELIVERY_COMPLETE) ? "delivery" : "transmit";
}

static const char *key_mode(const struct config *cfg, uint64_t mr_mode)
{
    if (mr_mode & FI_MR_PROV_KEY) {
        return "provider";
    }
    return CFG_BTL == cfg->kind ? "btl_counter" : "requested";
}

static const char *landed(const struct result *t)
{
    static const char *const names[] = {"nowhere", "A", "B", "A and B"};
    return names[(t->changed_a ? 1 : 0) | (t->changed_b ? 2 : 0)];
}

static void json_str(const char *text)
{
    putchar('"');
    for (const char *c = text; *c; c++) {
        if ('"' == *c || '\\' == *c) {
            printf("\\%c", *c);
        } else if ((unsigned char)*c < 0x20) {
            printf("\\u%04x", *c);
        } else {
            putchar(*c);
        }
    }
    putchar('"');
}

static void json_outcome(const struct outcome *out)
{
    printf("{\"completion\":\"%s\",\"posted_rc\":%d,\"posted\":", out->completion, out->post_rc);
    if (out->tried) {
        json_str(out->post_rc ? fi_strerror(-out->post_rc) : "ok");
    } else {
        printf("null");
    }
    printf(",\"waited_ms\":%ld,\"error\":", out->waited_ms);
    if ('e' == out->completion[0]) {
        json_str(out->error);
        printf(",\"errno\":%d,\"prov_errno\":%d", out->err, out->prov_errno);
    } else {
        printf("null");
    }
    printf(",\"late\":");
    if (out->late[0]) {
        json_str(out->late);
    } else {
        printf("null");
    }
    putchar('}');
}

static void json_probe(int probe, const struct probe_run *pr)
{
    const struct result *t = &pr->t, *o = &pr->o;
    const char *setup = t->setup[0] ? t->setup : o->setup;

    printf("\"%s\":{\"status\":", probe_names[probe]);
    if (!pr->got_t || !pr->got_o || setup[0]) {
        json_str(pr->killed ? "killed: the pair did not finish in time"
                 : setup[0] ? "setup failed"
                            : "a side died");
        printf(",\"setup_error\":");
        json_str(setup);
        printf("}");
        return;
    }
    printf("\"%s\",\"control\":", pr->killed ? "ran (teardown killed)" : "ran");
    json_outcome(&o->control);
    printf(",\"control_landed\":%s,\"key_a\":%llu", t->control_landed ? "true" : "false",
           (unsigned long long)t->key_a);
    if (t->reg_b[0]) {
        printf(",\"register_b\":");
        json_str(t->reg_b);
        printf(",\"key_b\":%llu", (unsigned long long)t->key_b);
    }
    printf(",\"probe\":");
    json_outcome(&o->probe);
    if (P_STALE_READ == probe) {
        printf(",\"read_returned_a_data\":%s",
               'o' == o->probe.completion[0] && all_bytes(o->probe.data, 0xaa) ? "true" : "false");
    }
    printf(",\"target_memory_changed\":%s", t->changed_a || t->changed_b ? "true" : "false");
    if (P_SAME_KEY == probe) {
        printf(",\"landed\":\"%s\"", landed(t));
    }
    printf(",\"target_cq_errors\":%d}", t->cq_errors);
}

/* a short cell for the table */
static void cell(int probe, const struct probe_run *pr, int width)
{
    const struct result *t = &pr->t, *o = &pr->o;
    const struct outcome *out = &o->probe;
    char text[TAG_LEN * 2];

    if (!pr->got_t || !pr->got_o || t->setup[0] || o->setup[0]) {
        snprintf(text, sizeof(text), "%s", pr->killed ? "KILLED" : "did not run");
    } else if (!t->control_landed || 'o' != o->control.completion[0]) {
        snprintf(text, sizeof(text), "ctl %s%s", o->control.completion,
                 t->control_landed ? "" : ",LOST");
    } else if (t->reg_b[0] && 'o' != t->reg_b[0]) {
        snprintf(text, sizeof(text), "reg B %s", t->reg_b);
    } else {
        const char *how = out->completion;
        if ('e' == how[0]) {
            how = out->err == FI_EACCES      ? "err:EACCES"
                  : out->err == FI_ECANCELED ? "err:ECANCELED"
                  : out->err == FI_ENOTCONN  ? "err:ENOTCONN"
                                             : out->error;
        } else if (0 == strcmp(how, "not_posted")) {
            how = -FI_EAGAIN == out->post_rc ? "post:EAGAIN" : "post:error";
        }
        if (P_SAME_KEY == probe) {
            snprintf(text, sizeof(text), "%s -> %s", how, landed(t));
        } else {
            snprintf(
                text, sizeof(text), "%s%s%s", how, t->changed_a || t->changed_b ? " WROTE" : "",
                P_STALE_READ == probe && 'o' == out->completion[0] && all_bytes(out->data, 0xaa)
                    ? ",A data"
                    : "");
        }
        if (out->late[0]) { /* a completion after the wait ended */
            size_t used = strlen(text);
            snprintf(text + used, sizeof(text) - used, ",late %.20s", out->late);
        }
    }
    printf(" %-*.*s|", width, width, text);
}

static void print_row(const struct config *cfg, int selected, const struct probe_run *runs)
{
    const struct result *first = NULL;
    int varied = 0;

    for (int p = 0; p < NPROBES; p++) {
        const struct result *t = &runs[p].t;
        if (!(selected & (1 << p)) || !runs[p].got_t || t->setup[0]) {
            continue;
        }
        if (first && (first->mr_mode != t->mr_mode || first->op_flags != t->op_flags)) {
            varied = 1;
        }
        first = first ? first : t;
    }
    if (json) {
        printf("{\"tool\":\"stale_key\",\"libfabric\":\"%u.%u\",\"provider\":",
               FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
        json_str(cfg->prov);
        printf(",\"config\":\"%s\",\"offered_virt_addr\":%s", cfg_names[cfg->kind],
               offer_virt_addr ? "true" : "false");
        if (CFG_BTL != cfg->kind) {
            printf(",\"asked_delivery\":%s", cfg->delivery ? "true" : "false");
        }
        if (first) {
            printf(",\"addressing\":\"%s\",\"completion_mode\":\"%s\",\"key_mode\":\"%s\","
                   "\"mr_mode\":%llu,\"op_flags\":%llu,\"msg_order\":%llu",
                   addressing(first->mr_mode), completion_mode(first->op_flags),
                   key_mode(cfg, first->mr_mode), (unsigned long long)first->mr_mode,
                   (unsigned long long)first->op_flags, (unsigned long long)first->msg_order);
        } else {
            printf(",\"addressing\":null,\"completion_mode\":null,\"key_mode\":null");
        }
        printf(",\"negotiation_varied\":%s,\"wait_ms\":%ld,\"settle_ms\":%ld,\"probes\":{",
               varied ? "true" : "false", wait_ms, settle_ms);
        for (int p = 0, n = 0; p < NPROBES; p++) {
            if (selected & (1 << p)) {
                printf("%s", n++ ? "," : "");
                json_probe(p, &runs[p]);
            }
        }
        printf("}}\n");
    } else {
        printf("%-12s %-4s %-9s %-8s %-11s|", cfg->prov, cfg_names[cfg->kind],
               first ? addressing(first->mr_mode) : "-",
               first ? completion_mode(first->op_flags) : "-",
               first ? key_mode(cfg, first->mr_mode) : "-");
        for (int p = 0; p < NPROBES; p++) {
            if (selected & (1 << p)) {
                cell(p, &runs[p], 19);
            }
        }
        printf("%s\n", varied ? " (negotiation varied between probes)" : "");
    }
    fflush(stdout);
}

static int measure(const struct config *cfg, int selected)
{
    struct probe_run runs[NPROBES];

    memset(runs, 0, sizeof(runs));
    for (int p = 0; p < NPROBES; p++) {
        if ((selected & (1 << p)) && run_probe(cfg, p, &runs[p])) {
            return 2;
        }
    }
    print_row(cfg, selected, runs);
    return 0;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [-o] [--btl] [--json] [--wait-ms N] [--settle-ms N] [--probes LIST] "
            "[PROVIDER...]\n  LIST: comma list of bogus_key,stale_write,stale_read,same_key,"
            "fresh_key (default all)\n",
            argv0);
    return 2;
}

static int parse_probes(char *list, int *selected)
{
    *selected = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int p = 0;
        while (p < NPROBES && strcmp(name, probe_names[p])) {
            p++;
        }
        if (NPROBES == p) {
            return 1;
        }
        *selected |= 1 << p;
    }
    return 0 == *selected;
}

static int parse_ms(const char *text, long *value)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (end == text || *end || v < 0 || v > 600000) {
        return 1;
    }
    *value = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *defaults[] = {"shm", "sockets", "tcp;ofi_rxm"};
    int btl = 0, selected = (1 << NPROBES) - 1, i = 1;

    for (; i < argc && '-' == argv[i][0]; i++) {
        if (0 == strcmp(argv[i], "-o")) {
            offer_virt_addr = 0;
        } else if (0 == strcmp(argv[i], "--btl")) {
            btl = 1;
        } else if (0 == strcmp(argv[i], "--json")) {
            json = 1;
        } else if (0 == strcmp(argv[i], "--wait-ms") && i + 1 < argc) {
            if (parse_ms(argv[++i], &wait_ms)) {
                return usage(argv[0]);
            }
        } else if (0 == strcmp(argv[i], "--settle-ms") && i + 1 < argc) {
            if (parse_ms(argv[++i], &settle_ms)) {
                return usage(argv[0]);
            }
        } else if (0 == strcmp(argv[i], "--probes") && i + 1 < argc) {
            if (parse_probes(argv[++i], &selected)) {
                return usage(argv[0]);
            }
        } else {
            return usage(argv[0]);
        }
    }
    const char **provs = i < argc ? (const char **)argv + i : defaults;
    int n = i < argc ? argc - i : 3;

    if (!json) {
        printf("stale_key: libfabric %u.%u; 8-byte regions; every probe in a fresh process "
               "pair, completion waits bounded at %ld ms\n",
               FI_MAJOR(fi_version()), FI_MINOR(fi_version()), wait_ms);
        printf("%-12s %-4s %-9s %-8s %-11s|", "provider", "ask", "mr addr", "complete", "keys");
        for (int p = 0; p < NPROBES; p++) {
            if (selected & (1 << p)) {
                printf(" %-19s|", probe_names[p]);
            }
        }
        printf("\n");
    }
    for (int k = 0; k < n; k++) {
        if (btl) {
            struct config cfg = {provs[k], CFG_BTL, 1};
            if (measure(&cfg, selected)) {
                return 2;
            }
            continue;
        }
        for (int delivery = 1; delivery >= 0; delivery--) {
            for (int kind = CFG_APP; kind <= CFG_PROV; kind++) {
                struct config cfg = {provs[k], kind, delivery};
                if (measure(&cfg, selected)) {
                    return 2;
                }
            }
        }
    }
    if (!json) {
        printf("ask: app = FI_MR_PROV_KEY not offered (key %#x requested), prov = offered, "
               "btl = btl-ofi's negotiation (keys 1, 2, ...)\n"
               "complete: delivery = FI_DELIVERY_COMPLETE granted, transmit = provider default\n"
               "cell: ok / err:X error completion / none: no completion within the wait /\n"
               "      post:X posting failed (post:EAGAIN: -FI_EAGAIN for the whole wait);\n"
               "      late X: a completion that came after the wait;\n"
               "      WROTE: the target's memory changed; -> where the same-key write landed;\n"
               "      ctl ...: the control write through the live key failed (probe void)\n",
               REQUESTED_KEY);
    }
    return 0;
}
