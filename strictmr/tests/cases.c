/*
 * The strictmr test cases (cases.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cases.h"

#define LEN 64
#define CTX ((void *)0x5ca1ab1e)
#define RECV_CTX ((void *)0x2ecebe)
#define CTRL_LEN 300 /* a control message */
#define SENTINEL 0xee

int rule_errno(int rule)
{
    switch (rule) {
    case STRICTMR_RULE_KEY_IN_USE:
        return FI_ENOKEY;
    case STRICTMR_RULE_KEY_UNKNOWN:
    case STRICTMR_RULE_KEY_CLOSED:
    case STRICTMR_RULE_KEY_WIDTH:
    case STRICTMR_RULE_TARGET_UNKNOWN:
    case STRICTMR_RULE_MR_UNBOUND:
    case STRICTMR_RULE_MR_DISABLED:
    case STRICTMR_RULE_RAW_UNMAPPED:
        return FI_EKEYREJECTED;
    default:
        return FI_EINVAL;
    }
}

/* Posts are followed by a wait for their completion. */
static int waited(struct env *e, int ret, struct outcome *out)
{
    out->ret = ret;
    return ret ? 0 : fixture_wait(e->f, out);
}

static int write_to(struct env *e, void *buf, void *desc, fi_addr_t peer, uint64_t addr,
                    uint64_t key, struct outcome *out)
{
    return waited(e, POST_RETRY(e->f, fi_write(e->f->a.ep, buf, LEN, desc, peer, addr, key, CTX)),
                  out);
}

static int write_plain(struct env *e, uint64_t key, uint64_t offset, struct outcome *out)
{
    return write_to(e, e->lbuf, e->ldesc, e->f->a.peer, e->base + offset, key, out);
}

/* A second MR on the target's region, for cases that need one of their own. */
static int target_mr(struct env *e, uint64_t access, struct fid_mr **mr, uint64_t *key)
{
    uint64_t base;
    int ret = fi_mr_reg(e->f->b.domain, e->tbuf, REGION, access, 0, e->next_key++, 0, mr, NULL);

    return ret ? ret : remote_of(e->f, *mr, e->tbuf, key, &base);
}

/* A transmit completion may come before the target applied the operation. */
static int await_equal(struct env *e, const volatile void *a, const void *b, size_t len)
{
    for (int i = 0; memcmp((const void *)a, b, len) && i < 1000000; i++)
        fixture_progress(e->f);
    return memcmp((const void *)a, b, len) ? -FI_EIO : 0;
}

/* ---------------------------------------------------------------- positive */
static int case_write_ok(struct env *e, struct outcome *out)
{
    memset(e->lbuf, 0xab, LEN);
    int ret = write_plain(e, e->key, 0, out);

    return ret ? ret : await_equal(e, e->tbuf, e->lbuf, LEN);
}

static int case_read_ok(struct env *e, struct outcome *out)
{
    memset(e->tbuf, 0xcd, LEN);
    int ret = waited(e,
                     POST_RETRY(e->f, fi_read(e->f->a.ep, e->lbuf, LEN, e->ldesc, e->f->a.peer,
                                              e->base, e->key, CTX)),
                     out);

    return ret ? ret : (memcmp(e->tbuf, e->lbuf, LEN) ? -FI_EIO : 0);
}

static int case_writemsg_ok(struct env *e, struct outcome *out)
{
    struct iovec iov[2] = {{.iov_base = e->lbuf, .iov_len = 16},
                           {.iov_base = e->lbuf + 32, .iov_len = 16}};
    void *desc[2] = {e->ldesc, e->ldesc};
    struct fi_rma_iov rma = {.addr = e->base + 128, .len = 32, .key = e->key};
    struct fi_msg_rma msg = {.msg_iov = iov,
                             .desc = desc,
                             .iov_count = 2,
                             .addr = e->f->a.peer,
                             .rma_iov = &rma,
                             .rma_iov_count = 1,
                             .context = CTX};

    int ret;

    memset(e->lbuf, 0x5a, 48);
    ret = waited(e, POST_RETRY(e->f, fi_writemsg(e->f->a.ep, &msg, FI_COMPLETION)), out);
    return ret ? ret : await_equal(e, e->tbuf + 128, e->lbuf, 32);
}

static int case_atomic_ok(struct env *e, struct outcome *out)
{
    uint64_t *target = (uint64_t *)e->tbuf;
    uint64_t *operand = (uint64_t *)e->lbuf;
    int ret;

    *operand = 5;
    *target = 0;
    ret = waited(e,
                 POST_RETRY(e->f, fi_atomic(e->f->a.ep, operand, 1, e->ldesc, e->f->a.peer, e->base,
                                            e->key, FI_UINT64, FI_SUM, CTX)),
                 out);
    return ret ? ret : await_equal(e, target, &(uint64_t){5}, sizeof(uint64_t));
}

static int case_fetch_ok(struct env *e, struct outcome *out)
{
    uint64_t *operand = (uint64_t *)e->lbuf, *result = operand + 1;

    *operand = 1;
    *(uint64_t *)e->tbuf = 41;
    int ret = waited(
        e,
        POST_RETRY(e->f, fi_fetch_atomic(e->f->a.ep, operand, 1, e->ldesc, result, e->ldesc,
                                         e->f->a.peer, e->base, e->key, FI_UINT64, FI_SUM, CTX)),
        out);

    return ret ? ret : (*result == 41 && *(uint64_t *)e->tbuf == 42 ? 0 : -FI_EIO);
}

static int compare_swap(struct env *e, void *compare_desc, struct outcome *out)
{
    uint64_t *v = (uint64_t *)e->lbuf; /* operand, compare, result */

    v[0] = 7;
    v[1] = 3;
    *(uint64_t *)e->tbuf = 3;
    return waited(e,
                  POST_RETRY(e->f, fi_compare_atomic(e->f->a.ep, &v[0], 1, e->ldesc, &v[1],
                                                     compare_desc, &v[2], e->ldesc, e->f->a.peer,
                                                     e->base, e->key, FI_UINT64, FI_CSWAP, CTX)),
                  out);
}

static int case_cswap_ok(struct env *e, struct outcome *out)
{
    int ret = compare_swap(e, e->ldesc, out);

    return ret ? ret : (*(uint64_t *)e->tbuf == 7 ? 0 : -FI_EIO);
}

/* ---------------------------------------------------------------- remote rules */
static int case_key_unknown(struct env *e, struct outcome *out)
{
    uint8_t raw[16] = {0x42};
    uint64_t key = e->key + 1;

    if (e->f->mode & FI_MR_RAW) {
        int ret = fi_mr_map_raw(e->f->a.domain, e->base, raw, e->f->key_size, &key, 0);

        if (ret)
            return ret;
    }
    return write_plain(e, key, 0, out);
}

static int case_key_closed(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_WRITE, &mr, &key);

    if (ret)
        return ret;
    fi_close(&mr->fid);
    return write_plain(e, key, 0, out);
}

static int case_range(struct env *e, struct outcome *out)
{
    return write_plain(e, e->key, REGION - LEN / 2, out);
}

static int case_remote_access(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_READ, &mr, &key);

    if (ret)
        return ret;
    if (e->f->mode & FI_MR_ENDPOINT) {
        fi_mr_bind(mr, &e->f->b.ep->fid, 0);
        fi_mr_enable(mr);
    }
    ret = write_plain(e, key, 0, out);
    fi_close(&mr->fid);
    return ret;
}

/* The address of an endpoint that existed on b and was closed again. */
static int case_target_unknown(struct env *e, struct outcome *out)
{
    struct side gone = {.domain = e->f->b.domain, .cq = e->f->b.cq, .av = e->f->b.av};
    fi_addr_t addr;
    int ret = side_endpoint(e->f, &gone);

    if (!ret)
        ret = side_insert(&e->f->a, &gone, &addr);
    if (gone.ep)
        fi_close(&gone.ep->fid);
    return ret ? ret : write_to(e, e->lbuf, e->ldesc, addr, e->base, e->key, out);
}

/* ---------------------------------------------------------------- local rules */
static int case_desc_missing(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf, NULL, e->f->a.peer, e->base, e->key, out);
}

static int case_desc_invalid(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf, (void *)0x1234, e->f->a.peer, e->base, e->key, out);
}

static int case_desc_range(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf + REGION, e->ldesc, e->f->a.peer, e->base, e->key, out);
}

static int case_fetch_result_desc(struct env *e, struct outcome *out)
{
    uint64_t *operand = (uint64_t *)e->lbuf;

    return waited(
        e,
        POST_RETRY(e->f, fi_fetch_atomic(e->f->a.ep, operand, 1, e->ldesc, operand + 1, NULL,
                                         e->f->a.peer, e->base, e->key, FI_UINT64, FI_SUM, CTX)),
        out);
}

static int case_compare_desc(struct env *e, struct outcome *out)
{
    return compare_swap(e, NULL, out);
}

/* ---------------------------------------------------------------- registration rules */
static int case_allocated(struct env *e, struct outcome *out)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *hole = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct fid_mr *mr = NULL;

    if (hole == MAP_FAILED)
        return -FI_ENOMEM;
    munmap(hole, 2 * page);
    out->ret = fi_mr_reg(e->f->a.domain, hole, 2 * page, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

static int case_key_width(struct env *e, struct outcome *out)
{
    struct fid_mr *mr = NULL;
    uint64_t key;

    if (e->f->key_size >= 8)
        return 1; /* every 64-bit key fits */
    key = 1ULL << (8 * e->f->key_size);
    out->ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, key, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

static int case_key_in_use(struct env *e, struct outcome *out)
{
    struct fid_mr *mr = NULL;

    out->ret = fi_mr_reg(e->f->b.domain, e->tbuf, LEN, FI_REMOTE_WRITE, 0, e->key, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

static int case_prov_key_width(struct env *e, struct outcome *out)
{
    size_t bits = 8 * e->f->key_size;
    uint64_t top = e->key >> (bits - 8);

    return top && (bits == 64 || top < 256) ? 0 : -FI_EINVAL;
}

/* ---------------------------------------------------------------- FI_MR_ENDPOINT */
static int endpoint_case(struct env *e, bool bind, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_WRITE, &mr, &key);

    if (ret)
        return ret;
    if (bind)
        ret = fi_mr_bind(mr, &e->f->b.ep->fid, 0);
    if (!ret)
        ret = write_plain(e, key, 0, out);
    fi_close(&mr->fid);
    return ret;
}

static int case_mr_unbound(struct env *e, struct outcome *out)
{
    return endpoint_case(e, false, out);
}

static int case_mr_disabled(struct env *e, struct outcome *out)
{
    return endpoint_case(e, true, out);
}

static int case_mr_bind_order(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    int ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);

    if (ret)
        return ret;
    out->ret = fi_mr_enable(mr);
    fi_close(&mr->fid);
    return 0;
}

/* A local MR bound to a second endpoint of a's domain, used on a's first. */
static int case_local_mr_unbound(struct env *e, struct outcome *out)
{
    struct side other = {.domain = e->f->a.domain, .cq = e->f->a.cq, .av = e->f->a.av};
    struct fid_mr *mr = NULL;
    int ret = side_endpoint(e->f, &other);

    if (!ret)
        ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);
    if (!ret)
        ret = fi_mr_bind(mr, &other.ep->fid, 0);
    if (!ret)
        ret = fi_mr_enable(mr);
    if (!ret)
        ret = write_to(e, e->lbuf, fi_mr_desc(mr), e->f->a.peer, e->base, e->key, out);
    if (mr)
        fi_close(&mr->fid);
    if (other.ep)
        fi_close(&other.ep->fid);
    return ret;
}

/* ---------------------------------------------------------------- FI_MR_RAW */
static int case_raw_unmapped(struct env *e, struct outcome *out)
{
    return write_plain(e, 0xdead, 0, out);
}

static int case_raw_attr_small(struct env *e, struct outcome *out)
{
    uint8_t raw[1];
    size_t size = sizeof(raw);
    uint64_t base;
    int ret = fi_mr_raw_attr(e->tmr, &base, raw, &size, 0);

    return ret == -FI_ETOOSMALL && size == e->f->key_size && fi_mr_key(e->tmr) == FI_KEY_NOTAVAIL
               ? 0
               : -FI_EINVAL;
}

/* ---------------------------------------------------------------- messages */
/* The completion a message operation must have produced: its own context and kind. */
static int completion_is(const struct outcome *o, void *context, uint64_t kind)
{
    return o->context == context && (o->flags & kind) == kind ? 0 : -FI_EIO;
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7);
}

/* The receive's completion on b, then (unless it was an inject) the send's on a. */
static int message_done(struct env *e, size_t len, bool injected, struct outcome *out)
{
    struct outcome rx = {0};
    int ret = fixture_wait_on(e->f, &e->f->b, &rx);

    out->cq_err = rx.cq_err;
    if (!ret && !rx.cq_err)
        ret = rx.len == len ? completion_is(&rx, RECV_CTX, FI_RECV | FI_MSG) : -FI_EIO;
    if (!ret && !injected) {
        ret = fixture_wait_on(e->f, &e->f->a, out);
        if (!ret && !out->cq_err)
            ret = completion_is(out, CTX, FI_SEND | FI_MSG);
    }
    return ret;
}

/* rbuf holds exactly the len bytes expected, and nothing was written past them. */
static int received(struct env *e, const uint8_t *expected, size_t len)
{
    for (size_t i = len; i < MSG_MAX; i++) {
        if (e->rbuf[i] != SENTINEL)
            return -FI_EIO;
    }
    return memcmp(e->rbuf, expected, len) ? -FI_EIO : 0;
}

static int post_recv(struct env *e, struct outcome *out)
{
    memset(e->rbuf, SENTINEL, MSG_MAX);
    out->ret =
        POST_RETRY(e->f, fi_recv(e->f->b.ep, e->rbuf, MSG_MAX, e->rdesc, FI_ADDR_UNSPEC, RECV_CTX));
    return out->ret;
}

static int case_send_recv_ok(struct env *e, struct outcome *out)
{
    int ret;

    fill(e->sbuf, CTRL_LEN, 1);
    if (post_recv(e, out))
        return 0;
    out->ret =
        POST_RETRY(e->f, fi_send(e->f->a.ep, e->sbuf, CTRL_LEN, e->sdesc, e->f->a.peer, CTX));
    if (out->ret)
        return 0;
    ret = message_done(e, CTRL_LEN, false, out);
    return ret ? ret : received(e, e->sbuf, CTRL_LEN);
}

/* A batch of gathered puts: MSG_MAX bytes from three pieces of sbuf into two receive iovs. */
static int case_sendmsg_recvv_ok(struct env *e, struct outcome *out)
{
    struct iovec siov[3] = {{.iov_base = e->sbuf + 4096, .iov_len = 1000},
                            {.iov_base = e->sbuf, .iov_len = 4096},
                            {.iov_base = e->sbuf + 5096, .iov_len = MSG_MAX - 5096}};
    struct iovec riov[2] = {{.iov_base = e->rbuf, .iov_len = 3000},
                            {.iov_base = e->rbuf + 3000, .iov_len = MSG_MAX - 3000}};
    void *sdesc[3] = {e->sdesc, e->sdesc, e->sdesc}, *rdesc[2] = {e->rdesc, e->rdesc};
    struct fi_msg msg = {
        .msg_iov = siov, .desc = sdesc, .iov_count = 3, .addr = e->f->a.peer, .context = CTX};
    uint8_t expected[MSG_MAX];
    size_t at = 0;
    int ret;

    fill(e->sbuf, MSG_MAX, 3);
    for (int i = 0; i < 3; i++) {
        memcpy(expected + at, siov[i].iov_base, siov[i].iov_len);
        at += siov[i].iov_len;
    }
    memset(e->rbuf, SENTINEL, MSG_MAX);
    out->ret = POST_RETRY(e->f, fi_recvv(e->f->b.ep, riov, rdesc, 2, FI_ADDR_UNSPEC, RECV_CTX));
    if (!out->ret)
        out->ret = POST_RETRY(e->f, fi_sendmsg(e->f->a.ep, &msg, FI_COMPLETION));
    if (out->ret)
        return 0;
    ret = message_done(e, MSG_MAX, false, out);
    return ret ? ret : received(e, expected, MSG_MAX);
}

/* An inject's buffer needs no desc, even under FI_MR_LOCAL, and is the caller's again at once. */
static int case_inject_ok(struct env *e, struct outcome *out)
{
    uint8_t small[LEN], expected[LEN];
    int ret;

    if (e->f->info->tx_attr->inject_size < LEN)
        return 1;
    fill(small, LEN, 5);
    memcpy(expected, small, LEN);
    if (post_recv(e, out))
        return 0;
    out->ret = POST_RETRY(e->f, fi_inject(e->f->a.ep, small, LEN, e->f->a.peer));
    memset(small, 0, LEN);
    if (out->ret)
        return 0;
    ret = message_done(e, LEN, true, out);
    return ret ? ret : received(e, expected, LEN);
}

/* A send the provider must refuse: its error completion is the send's, on a. */
static int send_refused(struct env *e, const void *buf, void *desc, struct outcome *out)
{
    int ret =
        waited(e, POST_RETRY(e->f, fi_send(e->f->a.ep, buf, LEN, desc, e->f->a.peer, CTX)), out);

    return ret || out->ret ? ret : completion_is(out, CTX, FI_SEND | FI_MSG);
}

/*
 * A receive the provider must refuse, posted on a second endpoint of b's whose receives complete
 * on a CQ of their own: the error completion is the receive's, there, and b's CQ (its transmit
 * CQ) stays empty.
 */
static int recv_refused(struct env *e, void *buf, void *desc, struct outcome *out)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA};
    struct side rx = {.domain = e->f->b.domain, .cq = e->f->b.cq, .av = e->f->b.av};
    struct side rx_only = {0};
    struct fi_cq_data_entry none;
    int ret = fi_cq_open(rx.domain, &attr, &rx.rx_cq, NULL);

    if (!ret)
        ret = side_endpoint(e->f, &rx);
    if (!ret)
        out->ret = POST_RETRY(e->f, fi_recv(rx.ep, buf, LEN, desc, FI_ADDR_UNSPEC, RECV_CTX));
    if (!ret && !out->ret) {
        rx_only.cq = rx.rx_cq;
        ret = fixture_wait_on(e->f, &rx_only, out);
    }
    if (!ret && !out->ret)
        ret = completion_is(out, RECV_CTX, FI_RECV | FI_MSG);
    if (!ret && !out->ret && fi_cq_read(rx.cq, &none, 1) != -FI_EAGAIN)
        ret = -FI_EIO;
    if (rx.ep)
        fi_close(&rx.ep->fid);
    if (rx.rx_cq)
        fi_close(&rx.rx_cq->fid);
    return ret;
}

/* The desc of an MR of side s's domain that was closed again. */
static int closed_desc(struct env *e, struct side *s, void *buf, uint64_t access, void **desc)
{
    struct fid_mr *mr;
    int ret = mr_open(e->f, s, buf, LEN, access, e->next_key++, &mr);

    if (ret)
        return ret;
    *desc = fi_mr_desc(mr);
    return fi_close(&mr->fid);
}

static int case_send_desc_missing(struct env *e, struct outcome *out)
{
    return send_refused(e, e->sbuf, NULL, out);
}

static int case_send_desc_invalid(struct env *e, struct outcome *out)
{
    void *desc;
    int ret = closed_desc(e, &e->f->a, e->sbuf + MSG_MAX, FI_SEND, &desc);

    return ret ? ret : send_refused(e, e->sbuf + MSG_MAX, desc, out);
}

static int case_send_desc_range(struct env *e, struct outcome *out)
{
    return send_refused(e, e->sbuf + MSG_MAX - LEN / 2, e->sdesc, out);
}

/* The gathered form: the second piece's desc is missing. */
static int case_sendmsg_desc_missing(struct env *e, struct outcome *out)
{
    struct iovec iov[2] = {{.iov_base = e->sbuf, .iov_len = LEN},
                           {.iov_base = e->sbuf + REGION, .iov_len = LEN}};
    void *desc[2] = {e->sdesc, NULL};
    struct fi_msg msg = {
        .msg_iov = iov, .desc = desc, .iov_count = 2, .addr = e->f->a.peer, .context = CTX};
    int ret = waited(e, POST_RETRY(e->f, fi_sendmsg(e->f->a.ep, &msg, FI_COMPLETION)), out);

    return ret || out->ret ? ret : completion_is(out, CTX, FI_SEND | FI_MSG);
}

static int case_recv_desc_missing(struct env *e, struct outcome *out)
{
    return recv_refused(e, e->rbuf, NULL, out);
}

static int case_recv_desc_invalid(struct env *e, struct outcome *out)
{
    void *desc;
    int ret = closed_desc(e, &e->f->b, e->rbuf + MSG_MAX, FI_RECV, &desc);

    return ret ? ret : recv_refused(e, e->rbuf + MSG_MAX, desc, out);
}

static int case_recv_desc_range(struct env *e, struct outcome *out)
{
    return recv_refused(e, e->rbuf + MSG_MAX, e->rdesc, out);
}

/* The scattered form: a desc of the other domain (a's send MR) for b's buffer. */
static int case_recvv_foreign_desc(struct env *e, struct outcome *out)
{
    struct iovec iov[2] = {{.iov_base = e->rbuf, .iov_len = LEN},
                           {.iov_base = e->sbuf, .iov_len = LEN}};
    void *desc[2] = {e->rdesc, e->sdesc};
    int ret;

    out->ret = POST_RETRY(e->f, fi_recvv(e->f->b.ep, iov, desc, 2, FI_ADDR_UNSPEC, RECV_CTX));
    if (out->ret)
        return 0;
    ret = fixture_wait_on(e->f, &e->f->b, out);
    return ret ? ret : completion_is(out, RECV_CTX, FI_RECV | FI_MSG);
}

#define R(rule) STRICTMR_RULE_##rule

const struct test_case test_cases[] = {
    {.name = "write_ok", .rule = -1, .expect = EXPECT_OK, .run = case_write_ok},
    {.name = "read_ok", .rule = -1, .expect = EXPECT_OK, .run = case_read_ok},
    {.name = "writemsg_ok", .rule = -1, .expect = EXPECT_OK, .run = case_writemsg_ok},
    {.name = "atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_atomic_ok},
    {.name = "fetch_atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_fetch_ok},
    {.name = "compare_atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_cswap_ok},
    {.name = "send_recv_ok", .rule = -1, .expect = EXPECT_DELIVERED, .run = case_send_recv_ok},
    {.name = "sendmsg_recvv_8k_ok",
     .rule = -1,
     .expect = EXPECT_DELIVERED,
     .run = case_sendmsg_recvv_ok},
    {.name = "inject_no_desc_ok", .rule = -1, .expect = EXPECT_DELIVERED, .run = case_inject_ok},
    {.name = "key_unknown",
     .rule = R(KEY_UNKNOWN),
     .expect = EXPECT_CQ_ERR,
     .run = case_key_unknown},
    {.name = "key_closed", .rule = R(KEY_CLOSED), .expect = EXPECT_CQ_ERR, .run = case_key_closed},
    {.name = "range", .rule = R(RANGE), .expect = EXPECT_CQ_ERR, .run = case_range},
    {.name = "remote_access",
     .rule = R(REMOTE_ACCESS),
     .expect = EXPECT_CQ_ERR,
     .run = case_remote_access},
    {.name = "target_unknown",
     .rule = R(TARGET_UNKNOWN),
     .expect = EXPECT_CQ_ERR,
     .run = case_target_unknown},
    {.name = "desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_missing},
    {.name = "desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_invalid},
    {.name = "desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_range},
    {.name = "fetch_result_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_fetch_result_desc},
    {.name = "compare_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_compare_desc},
    {.name = "send_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_missing},
    {.name = "send_desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_invalid},
    {.name = "send_desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_range},
    {.name = "sendmsg_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_sendmsg_desc_missing},
    {.name = "recv_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_missing},
    {.name = "recv_desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_invalid},
    {.name = "recv_desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_range},
    {.name = "recvv_foreign_desc",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_recvv_foreign_desc},
    {.name = "allocated",
     .needs = FI_MR_ALLOCATED,
     .rule = R(ALLOCATED),
     .expect = EXPECT_SYNC_ERR,
     .run = case_allocated},
    {.name = "key_width",
     .excludes = FI_MR_PROV_KEY | FI_MR_RAW,
     .rule = R(KEY_WIDTH),
     .expect = EXPECT_SYNC_ERR,
     .run = case_key_width},
    {.name = "key_in_use",
     .excludes = FI_MR_PROV_KEY | FI_MR_RAW,
     .rule = R(KEY_IN_USE),
     .expect = EXPECT_SYNC_ERR,
     .run = case_key_in_use},
    {.name = "prov_key_width",
     .needs = FI_MR_PROV_KEY,
     .excludes = FI_MR_RAW,
     .rule = -1,
     .expect = EXPECT_PROPERTY,
     .run = case_prov_key_width},
    {.name = "mr_unbound",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_UNBOUND),
     .expect = EXPECT_CQ_ERR,
     .run = case_mr_unbound},
    {.name = "mr_disabled",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_DISABLED),
     .expect = EXPECT_CQ_ERR,
     .run = case_mr_disabled},
    {.name = "mr_enable_before_bind",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_BIND),
     .expect = EXPECT_SYNC_ERR,
     .run = case_mr_bind_order},
    {.name = "local_mr_unbound",
     .needs = FI_MR_ENDPOINT | FI_MR_LOCAL,
     .rule = R(MR_UNBOUND),
     .expect = EXPECT_CQ_ERR,
     .run = case_local_mr_unbound},
    {.name = "raw_unmapped",
     .needs = FI_MR_RAW,
     .rule = R(RAW_UNMAPPED),
     .expect = EXPECT_CQ_ERR,
     .run = case_raw_unmapped},
    {.name = "raw_attr_too_small",
     .needs = FI_MR_RAW,
     .rule = -1,
     .expect = EXPECT_PROPERTY,
     .run = case_raw_attr_small},
};

const size_t test_case_count = sizeof(test_cases) / sizeof(test_cases[0]);
