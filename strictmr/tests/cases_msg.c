/*
 * strictmr test cases (cases_impl.h): messages that must arrive, payload, length, contexts and
 * flags verified, and sends and receives refused under FI_MR_LOCAL.
 */
#include <string.h>

#include "cases_impl.h"

#define RECV_CTX ((void *)0x2ecebe)
#define CTRL_LEN 300 /* a control message */
#define SENTINEL 0xee

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

int case_send_recv_ok(struct env *e, struct outcome *out)
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
int case_sendmsg_recvv_ok(struct env *e, struct outcome *out)
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
int case_inject_ok(struct env *e, struct outcome *out)
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

int case_send_desc_missing(struct env *e, struct outcome *out)
{
    return send_refused(e, e->sbuf, NULL, out);
}

int case_send_desc_invalid(struct env *e, struct outcome *out)
{
    void *desc;
    int ret = closed_desc(e, &e->f->a, e->sbuf + MSG_MAX, FI_SEND, &desc);

    return ret ? ret : send_refused(e, e->sbuf + MSG_MAX, desc, out);
}

int case_send_desc_range(struct env *e, struct outcome *out)
{
    return send_refused(e, e->sbuf + MSG_MAX - LEN / 2, e->sdesc, out);
}

/* The gathered form: the second piece's desc is missing. */
int case_sendmsg_desc_missing(struct env *e, struct outcome *out)
{
    struct iovec iov[2] = {{.iov_base = e->sbuf, .iov_len = LEN},
                           {.iov_base = e->sbuf + REGION, .iov_len = LEN}};
    void *desc[2] = {e->sdesc, NULL};
    struct fi_msg msg = {
        .msg_iov = iov, .desc = desc, .iov_count = 2, .addr = e->f->a.peer, .context = CTX};
    int ret = waited(e, POST_RETRY(e->f, fi_sendmsg(e->f->a.ep, &msg, FI_COMPLETION)), out);

    return ret || out->ret ? ret : completion_is(out, CTX, FI_SEND | FI_MSG);
}

int case_recv_desc_missing(struct env *e, struct outcome *out)
{
    return recv_refused(e, e->rbuf, NULL, out);
}

int case_recv_desc_invalid(struct env *e, struct outcome *out)
{
    void *desc;
    int ret = closed_desc(e, &e->f->b, e->rbuf + MSG_MAX, FI_RECV, &desc);

    return ret ? ret : recv_refused(e, e->rbuf + MSG_MAX, desc, out);
}

int case_recv_desc_range(struct env *e, struct outcome *out)
{
    return recv_refused(e, e->rbuf + MSG_MAX, e->rdesc, out);
}

/* The scattered form: a desc of the other domain (a's send MR) for b's buffer. */
int case_recvv_foreign_desc(struct env *e, struct outcome *out)
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
