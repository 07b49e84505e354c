/*
 * Raw libfabric measurement, no MPI and no btl-ofi: what a provider does with
 * a remote access through a key whose registration is gone. Two processes
 * (fork) per provider and key mode: the target registers region A, the origin
 * writes through its key (control), the target closes A (fi_close), and the
 * origin writes and reads through the old key. Then the target registers
 * region B asking for the SAME key (what an application reusing key values
 * does; btl-ofi's counter never does) and the origin writes through the old
 * key and A's address once more: does it land in B?
 * With "prov" key mode FI_MR_PROV_KEY is offered to the provider; if granted,
 * the row shows whether the provider hands B the key A had.
 *
 *   stale_key [-o] [PROVIDER...]     default: shm sockets "tcp;ofi_rxm"
 *   -o: do not offer FI_MR_VIRT_ADDR (offset addressing, btl_ofi_mr_mode=none)
 *
 * Prints one row per provider and key mode; exit 0 when it ran (it measures,
 * it does not judge), 2 on usage or a pipe failure.
 */
#include <fcntl.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUESTED_KEY 0x5a1

/* FI_MR_VIRT_ADDR is offered unless -o (offset addressing) */
static int offer_virt_addr = 1;
#define BYTES 8
#define TAG_LEN 64

#define CHECK(call)                                                                            \
    do {                                                                                       \
        int rc_ = (int) (call);                                                                \
        if (rc_ < 0) {                                                                         \
            snprintf(res->setup, TAG_LEN, "%.40s", #call);                                        \
            fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_));                             \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* what one side saw, sent back to the parent through a pipe */
struct result {
    char setup[TAG_LEN];     /* first failing setup call, "" if none */
    uint64_t mr_mode;        /* granted */
    uint64_t key_a, key_b;   /* actual keys (target) */
    char reg_b[TAG_LEN];     /* outcome of registering B with A's key (target) */
    char control[TAG_LEN];   /* write through the live key (origin) */
    char bogus[TAG_LEN];     /* write to live A through a key never registered (origin) */
    char stale_write[TAG_LEN];
    char stale_read[TAG_LEN];
    char reuse_write[TAG_LEN];
    int control_landed;      /* target: bytes arrived in A while registered */
    int bogus_changed_a;     /* target: the never-registered key wrote into live A */
    int stale_changed_a;     /* target: A's bytes changed after fi_close */
    int reuse_landed;        /* target: 0 nowhere, 1 in A, 2 in B, 3 both */
};

struct side {
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
    int to_peer, from_peer;
};

/* Progress our CQ (a target must, for manual-progress providers) until `len`
 * bytes came from the peer. 0 on success. */
static int recv_peer(struct side *s, void *msg, size_t len)
{
    struct fi_cq_entry entry;
    struct fi_cq_err_entry err = {0};
    time_t deadline = time(NULL) + 20;
    size_t got = 0;

    while (got < len && time(NULL) <= deadline) {
        if (fi_cq_read(s->cq, &entry, 1) == -FI_EAVAIL) {
            (void) fi_cq_readerr(s->cq, &err, 0);
        }
        ssize_t n = read(s->from_peer, (char *) msg + got, len - got);
        got += n > 0 ? (size_t) n : 0;
    }
    return got == len ? 0 : 1;
}

static int wait_peer(struct side *s, char *msg)
{
    return recv_peer(s, msg, 1);
}

static int tell_peer(struct side *s, char msg)
{
    return write(s->to_peer, &msg, 1) == 1 ? 0 : 1;
}

/* Post (retrying -FI_EAGAIN) and wait for the completion; describe the outcome. */
static void post_and_wait(struct side *s, int is_read, void *buf, uint64_t addr, uint64_t key,
                          char *out)
{
    struct fi_cq_entry entry;
    struct fi_cq_err_entry err = {0};
    time_t deadline = time(NULL) + 5;
    ssize_t rc;

    do {
        rc = is_read ? fi_read(s->ep, buf, BYTES, NULL, s->peer, addr, key, NULL)
                     : fi_write(s->ep, buf, BYTES, NULL, s->peer, addr, key, NULL);
        if (rc == -FI_EAGAIN) {
            (void) fi_cq_read(s->cq, &entry, 0);
        }
    } while (rc == -FI_EAGAIN && time(NULL) <= deadline);
    if (rc) {
        snprintf(out, TAG_LEN, "post:%s", rc == -FI_EAGAIN ? "EAGAIN" : fi_strerror((int) -rc));
        return;
    }
    while (time(NULL) <= deadline) {
        rc = fi_cq_read(s->cq, &entry, 1);
        if (rc == 1) {
            snprintf(out, TAG_LEN, "OK");
            return;
        }
        if (rc == -FI_EAVAIL && fi_cq_readerr(s->cq, &err, 0) == 1) {
            snprintf(out, TAG_LEN, "err:%s", err.err == FI_EACCES ? "EACCES" : err.err == FI_ECANCELED ? "ECANCELED" : err.err == FI_ENOTCONN ? "ENOTCONN" : fi_strerror(err.err));
            return;
        }
    }
    snprintf(out, TAG_LEN, "none in 5 s");
}

static int all_bytes(const uint8_t *p, uint8_t v)
{
    for (int i = 0; i < BYTES; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

static int target(struct side *s, struct fi_info *info, struct result *res)
{
    uint8_t *a = calloc(BYTES, 1), *b = calloc(BYTES, 1);
    uint64_t prov_key = info->domain_attr->mr_mode & FI_MR_PROV_KEY;
    struct fid_mr *mr_a, *mr_b;
    char msg;
    int rc;

    memset(a, 0xaa, BYTES);
    CHECK(fi_mr_reg(s->domain, a, BYTES, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, REQUESTED_KEY, 0,
                    &mr_a, NULL));
    res->key_a = fi_mr_key(mr_a);
    uint64_t base = (uintptr_t) a;
    if (write(s->to_peer, &res->key_a, 8) != 8 || write(s->to_peer, &base, 8) != 8) {
        return 1;
    }
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* control write done */
    res->control_landed = all_bytes(a, 0x11);
    CHECK(tell_peer(s, 'k') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* bogus-key write done */
    res->bogus_changed_a = all_bytes(a, 0x44);

    CHECK(fi_close(&mr_a->fid));
    memset(a, 0xaa, BYTES);
    CHECK(tell_peer(s, 'c') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* stale write + read done */
    res->stale_changed_a = !all_bytes(a, 0xaa);

    memset(a, 0xaa, BYTES);
    memset(b, 0xbb, BYTES);
    rc = fi_mr_reg(s->domain, b, BYTES, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                   prov_key ? 0 : res->key_a, 0, &mr_b, NULL);
    if (rc) {
        snprintf(res->reg_b, TAG_LEN, "refused:%d", rc);
    } else {
        res->key_b = fi_mr_key(mr_b);
        snprintf(res->reg_b, TAG_LEN, "%s", res->key_b == res->key_a ? "same key" : "new key");
    }
    CHECK(tell_peer(s, rc ? 'n' : 'b') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* reuse write done (or skipped) */
    res->reuse_landed = (!all_bytes(a, 0xaa) ? 1 : 0) | (!all_bytes(b, 0xbb) ? 2 : 0);
    if (!rc) {
        CHECK(fi_close(&mr_b->fid));
    }
    return 0;
}

static int origin(struct side *s, struct fi_info *info, struct result *res)
{
    uint8_t buf[BYTES];
    uint64_t key, base;
    char msg;

    CHECK(recv_peer(s, &key, 8) || recv_peer(s, &base, 8) ? -FI_ETIMEDOUT : 0);
    /* without FI_MR_VIRT_ADDR remote addresses are offsets into the region */
    uint64_t addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? base : 0;

    memset(buf, 0x11, BYTES);
    post_and_wait(s, 0, buf, addr, key, res->control);
    CHECK(tell_peer(s, 'w') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* control checked */
    memset(buf, 0x44, BYTES);
    post_and_wait(s, 0, buf, addr, key + 0x1000, res->bogus);
    CHECK(tell_peer(s, 'k') ? -FI_EIO : 0);

    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* A closed */
    memset(buf, 0x22, BYTES);
    post_and_wait(s, 0, buf, addr, key, res->stale_write);
    memset(buf, 0, BYTES);
    post_and_wait(s, 1, buf, addr, key, res->stale_read);
    if (strstr(res->stale_read, "OK") && all_bytes(buf, 0xaa)) {
        strncat(res->stale_read, ",A data", TAG_LEN - strlen(res->stale_read) - 1);
    }
    CHECK(tell_peer(s, 's') ? -FI_EIO : 0);

    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* B registered (or refused) */
    if (msg == 'b') {
        memset(buf, 0x33, BYTES);
        post_and_wait(s, 0, buf, addr, key, res->reuse_write);
    } else {
        snprintf(res->reuse_write, TAG_LEN, "not tried");
    }
    CHECK(tell_peer(s, 'r') ? -FI_EIO : 0);
    return 0;
}

static int run(const char *prov, int offer_prov_key, int delivery, int is_target, int to_peer, int from_peer,
               struct result *res)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fid_fabric *fabric;
    struct fid_av *av;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    struct side s = {.to_peer = to_peer, .from_peer = from_peer};
    char addr[256], peer_addr[256];
    size_t addrlen = sizeof(addr);

    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA;
    hints->domain_attr->mr_mode =
        (offer_virt_addr ? FI_MR_VIRT_ADDR : 0) | FI_MR_ALLOCATED |
        (offer_prov_key ? FI_MR_PROV_KEY : 0);
    hints->fabric_attr->prov_name = strdup(prov);
    /* delivery: as btl-ofi by default, a write completes once the data is visible
     * at the target (the target's check after our message cannot race the data);
     * otherwise the provider's default completion */
    hints->tx_attr->op_flags = delivery ? FI_DELIVERY_COMPLETE : 0;
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    res->mr_mode = info->domain_attr->mr_mode;
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &s.domain, NULL));
    CHECK(fi_av_open(s.domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(s.domain, &cq_attr, &s.cq, NULL));
    CHECK(fi_endpoint(s.domain, info, &s.ep, NULL));
    CHECK(fi_ep_bind(s.ep, &av->fid, 0));
    CHECK(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(s.ep));
    CHECK(fi_getname(&s.ep->fid, addr, &addrlen));
    if (write(to_peer, addr, sizeof(addr)) != sizeof(addr) ||
        read(from_peer, peer_addr, sizeof(peer_addr)) != sizeof(peer_addr)) {
        return 1;
    }
    CHECK(fi_av_insert(av, peer_addr, 1, &s.peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);
    fcntl(from_peer, F_SETFL, O_NONBLOCK);
    int rc = is_target ? target(&s, info, res) : origin(&s, info, res);
    /* keep progressing until the peer is done too, then tear down */
    char bye = 'x';
    if (write(to_peer, &bye, 1) != 1 || wait_peer(&s, &bye)) {
        rc = 1;
    }
    fi_close(&s.ep->fid);
    fi_close(&s.cq->fid);
    fi_close(&av->fid);
    fi_close(&s.domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return rc;
}

static pid_t spawn(const char *prov, int offer_prov_key, int delivery, int is_target,
                   int to_peer, int from_peer, int report)
{
    pid_t pid = fork();

    if (0 == pid) {
        struct result res = {0};
        int rc = run(prov, offer_prov_key, delivery, is_target, to_peer, from_peer, &res);
        _exit(write(report, &res, sizeof(res)) == sizeof(res) ? rc : 1);
    }
    return pid;
}

static const char *landed_name(int landed)
{
    static const char *const names[] = {"nowhere", "A (closed)", "B", "A and B"};
    return names[landed & 3];
}

static int measure(const char *prov, int offer_prov_key, int delivery)
{
    int a2b[2], b2a[2], rep_t[2], rep_o[2], st_t = 0, st_o = 0;
    struct result t = {0}, o = {0};

    if (pipe(a2b) || pipe(b2a) || pipe(rep_t) || pipe(rep_o)) {
        return 2;
    }
    pid_t pt = spawn(prov, offer_prov_key, delivery, 1, a2b[1], b2a[0], rep_t[1]);
    pid_t po = spawn(prov, offer_prov_key, delivery, 0, b2a[1], a2b[0], rep_o[1]);
    int got_t = read(rep_t[0], &t, sizeof(t)) == sizeof(t);
    int got_o = read(rep_o[0], &o, sizeof(o)) == sizeof(o);
    waitpid(pt, &st_t, 0);
    waitpid(po, &st_o, 0);
    for (int *fd = &a2b[0]; fd <= &a2b[1]; fd++) close(*fd);
    for (int *fd = &b2a[0]; fd <= &b2a[1]; fd++) close(*fd);
    close(rep_t[0]), close(rep_t[1]), close(rep_o[0]), close(rep_o[1]);

    printf("%-12s %-4s %-8s ", prov, offer_prov_key ? "prov" : "app",
           delivery ? "delivery" : "default");
    if (!got_t || !got_o || t.setup[0] || o.setup[0]) {
        printf("did not run: %s%s%s\n", got_t && got_o ? "" : "a side died; ", t.setup, o.setup);
        return 0;
    }
    printf("%-9s %-8s %-3s | %-16s %-3s | %-16s %-3s | %-16s | %-9s | %-16s %s\n",
           (t.mr_mode & FI_MR_VIRT_ADDR) ? "virt_addr" : "offsets",
           (t.mr_mode & FI_MR_PROV_KEY) ? "provider" : "asked", t.control_landed ? "ok" : "LOST",
           o.bogus, t.bogus_changed_a ? "YES" : "no", o.stale_write,
           t.stale_changed_a ? "YES" : "no", o.stale_read, t.reg_b, o.reuse_write,
           landed_name(t.reuse_landed));
    if (!WIFEXITED(st_t) || !WIFEXITED(st_o)) {
        printf("    (a side died: target %d, origin %d)\n", st_t, st_o);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *defaults[] = {"shm", "sockets", "tcp;ofi_rxm"};
    const char **provs;
    int n;

    if (argc > 1 && 0 == strcmp(argv[1], "-o")) {
        offer_virt_addr = 0;
        argv++, argc--;
    }
    provs = argc > 1 ? (const char **) argv + 1 : defaults;
    n = argc > 1 ? argc - 1 : 3;
    if (argc > 1 && argv[1][0] == '-') {
        fprintf(stderr, "usage: %s [-o] [PROVIDER...]\n", argv[0]);
        return 2;
    }
    printf("stale_key: libfabric %u.%u; A and B are %d-byte regions of the target\n",
           FI_MAJOR(fi_version()), FI_MINOR(fi_version()), BYTES);
    printf("%-12s %-4s %-8s %-9s %-8s %-3s | %-20s | %-20s | %-16s | %-9s | %s\n", "provider",
           "ask", "complete", "mr addr", "keys", "ctl", "never-registered key", "stale write  A?",
           "stale read", "B, A's key", "old key+addr -> landed");
    for (int i = 0; i < n; i++) {
        for (int delivery = 1; delivery >= 0; delivery--) {
            for (int offer_prov_key = 0; offer_prov_key <= 1; offer_prov_key++) {
                if (measure(provs[i], offer_prov_key, delivery) == 2) {
                    return 2;
                }
            }
        }
    }
    printf("ask: app = FI_MR_PROV_KEY not offered (key %#x requested), prov = offered;\n"
           "ctl: the write through the live key landed; A?: closed A's bytes changed;\n"
           "err:X error completion, post:X posting failed, none in 5 s: no completion\n",
           REQUESTED_KEY);
    return 0;
}
