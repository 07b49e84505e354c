/*
 * What the two sides of a stale_key pair do in one probe, once their endpoints are up
 * (stale_key_pair.c): the target registers region A, checks that the origin's control
 * write landed, then closes A and registers region B as the probe asks, and watches both
 * while the origin's probe runs; the origin posts the control write and the probe, each
 * with a bounded wait for its completion.
 */
#include "stale_key_probe.h"

#include <rdma/fi_rma.h>
#include <string.h>
#include <unistd.h>

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

/* With A closed, region B: for same_key another buffer under A's key, for fresh_key A's
 * memory under a new key. Returns fi_mr_reg's error, 0 when registered or not asked. */
static int register_b(struct side *s, int probe, uint64_t access, int prov_key,
                      struct fid_mr **mr_b)
{
    struct result *res = s->res;
    int rc = 0;

    if (P_SAME_KEY == probe || P_FRESH_KEY == probe) {
        uint8_t *region = P_SAME_KEY == probe ? region_b : region_a;
        uint64_t want = P_SAME_KEY == probe ? res->key_a : res->key_a + 1;
        memset(region, 0xbb, BYTES);
        rc = fi_mr_reg(s->domain, region, BYTES, access, 0, prov_key ? 0 : want, 0, mr_b, NULL);
        if (rc) {
            snprintf(res->reg_b, TAG_LEN, "refused: %s", fi_strerror(-rc));
        } else {
            res->key_b = fi_mr_key(*mr_b);
            snprintf(res->reg_b, TAG_LEN, "ok");
        }
    }
    return rc;
}

/* Progress for settle_ms after the probe, noting whether A or B changed from what they hold. */
static void watch(struct side *s, uint8_t a_now, uint8_t b_now)
{
    volatile uint8_t *a = region_a, *b = region_b;
    struct result *res = s->res;
    long deadline = now_ms() + settle_ms;

    do { /* a write may land after its completion (transmit) or without one */
        drain(s);
        res->changed_a |= !all_bytes(a, a_now);
        res->changed_b |= !all_bytes(b, b_now);
        nap();
    } while (now_ms() <= deadline);
}

int target(struct side *s, const struct config *cfg, int probe, struct fi_info *info)
{
    volatile uint8_t *a = region_a;
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
    if (P_FRESH_KEY == probe) {
        a_now = 0xbb; /* register_b fills A's memory as B */
    }
    rc = register_b(s, probe, access, prov_key, &mr_b);
    CHECK(tell_peer(s, rc ? 'n' : 'p') ? -FI_EIO : 0);
    CHECK(wait_peer(s, &msg) ? -FI_ETIMEDOUT : 0); /* probe posted and waited for */
    watch(s, a_now, b_now);
    if (mr_b) {
        CHECK(fi_close(&mr_b->fid));
    }
    if (mr_a) {
        CHECK(fi_close(&mr_a->fid));
    }
    return 0;
}

int origin(struct side *s, int probe, struct fi_info *info)
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
