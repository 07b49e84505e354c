/*
 * strictmr_engine_test's cases on an endpoint's control (engine_test.h): fi_control's
 * FI_SETOPSFLAG and FI_GETOPSFLAG beside selective completion (control), and a second CQ bound
 * for a direction that has one (rebind). Each opens an endpoint of a's with CQs of its own.
 */
#include <stdio.h>

#include "engine_test.h"

/* ---------------------------------------------------------------- control */
/* A plain write (flags 0: fi_write, the endpoint's operation flags apply) or a writemsg with
 * flags, from an endpoint of a's on its own CQ, retried while the core says -FI_EAGAIN. */
static int control_write(struct fid_ep *ep, struct fid_cq *cq, uint64_t flags, void *context)
{
    struct iovec iov = {.iov_base = &lbuf[40], .iov_len = sizeof(uint64_t)};
    struct fi_rma_iov rma = {.addr = taddr(40), .len = sizeof(uint64_t), .key = tkey};
    void *desc = fi_mr_desc(lmr);
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = fx.a.peer,
                             .rma_iov = &rma, .rma_iov_count = 1, .context = context};
    struct fi_cq_data_entry discard;
    ssize_t ret = -FI_EAGAIN;

    for (int tries = 100000; ret == -FI_EAGAIN && tries--;) {
        ret = flags ? fi_writemsg(ep, &msg, flags)
                    : fi_write(ep, &lbuf[40], sizeof(uint64_t), desc, fx.a.peer, taddr(40), tkey,
                               context);
        (void)fi_cq_read(cq, &discard, 0);
        fixture_progress(&fx);
    }
    return (int)ret;
}

/* Takes completions from cq until want's; counts those of unwanted. */
static bool control_until(struct fid_cq *cq, void *want, void *unwanted, int *seen)
{
    void *c = NULL;

    while (!take_cq(cq, &fx.b, &c, BOUND_MS)) {
        *seen += c == unwanted;
        if (c == want)
            return true;
    }
    return false;
}

static int opsflag(struct fid_ep *ep, int command, uint64_t flags, uint64_t *out)
{
    int ret = fi_control(&ep->fid, command, &flags);

    *out = flags;
    return ret;
}

/* Plain writes of an endpoint bound with FI_SELECTIVE_COMPLETION complete only once
 * FI_COMPLETION is among its operation flags. */
static void control_ep(struct fid_ep *ep, struct fid_cq *cq)
{
    /* a second bind for the transmit direction, refused before the core is asked (rebind):
     * taken, it would end selective completion */
    int plain, asked, later, seen = 0, ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT);
    uint64_t flags = 0, bad[] = {FI_COMPLETION, FI_TRANSMIT | FI_RECV};

    printf("INFO control: binding the transmit CQ again -> %s\n", fi_strerror(-ret));
    check(ret == -FI_EINVAL && !(ret = fi_enable(ep)),
          "control: a second bind of the transmit CQ is refused, the endpoint enables");
    ret = control_write(ep, cq, 0, &plain) || control_write(ep, cq, FI_COMPLETION, &asked);
    check(!ret && control_until(cq, &asked, &plain, &seen) && !seen,
          "control: after the refused bind, only the write asking FI_COMPLETION completes");
    check(!opsflag(ep, FI_SETOPSFLAG, FI_TRANSMIT | FI_COMPLETION, &flags) &&
              !opsflag(ep, FI_GETOPSFLAG, FI_TRANSMIT, &flags) && flags == FI_COMPLETION,
          "control: FI_SETOPSFLAG FI_TRANSMIT|FI_COMPLETION; FI_GETOPSFLAG reads FI_COMPLETION");
    check(!control_write(ep, cq, 0, &later) && control_until(cq, &later, &plain, &seen),
          "control: with FI_COMPLETION among the operation flags, a plain write completes");
    ret = fi_control(&ep->fid, FI_SETOPSFLAG, NULL) == -FI_EINVAL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ret &= opsflag(ep, FI_SETOPSFLAG, bad[i], &flags) == -FI_EINVAL;
    check(ret && !opsflag(ep, FI_GETOPSFLAG, FI_TRANSMIT, &flags) && flags == FI_COMPLETION &&
              !control_write(ep, cq, 0, &later) && control_until(cq, &later, &plain, &seen),
          "control: FI_SETOPSFLAG without flags, direction or with both: -FI_EINVAL, and "
          "plain writes still complete");
    check(!seen, "control: the plain write of the selective endpoint never completed");
}

/* An endpoint of a's, bound with FI_SELECTIVE_COMPLETION to its own CQ after a bind the core
 * refused, which takes no direction: see control_ep. */
void control(void)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA};
    struct fid_cq *cq = NULL;
    struct fid_ep *ep = NULL;
    int ret, refused = 0;

    ret = fi_cq_open(fx.a.domain, &attr, &cq, NULL);
    if (!ret)
        ret = fi_endpoint(fx.a.domain, fx.info, &ep, NULL);
    if (!ret)
        ret = fi_ep_bind(ep, &fx.a.av->fid, 0);
    if (!ret) {
        /* a flag no CQ bind takes, which every core refuses */
        refused = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_WRITE);
        printf("INFO control: binding the CQ with FI_WRITE -> %s\n", fi_strerror(-refused));
        ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
    }
    check(refused && !ret, "control: after a bind the core refuses, the endpoint binds its CQ "
                           "with FI_SELECTIVE_COMPLETION");
    if (!ret)
        control_ep(ep, cq);
    if (ep)
        fi_close(&ep->fid);
    if (cq)
        fi_close(&cq->fid);
}

/* ---------------------------------------------------------------- rebind */
/* A send from b to ep (its address added to b's AV), received on ep into lbuf[50]; its
 * completion on cq, b's on b's CQ. */
static int rebind_recv(struct fid_ep *ep, struct fid_cq *cq, void *context)
{
    struct side s = {.ep = ep};
    struct fi_cq_data_entry discard;
    fi_addr_t addr;
    void *c = NULL, *sent = NULL;
    ssize_t ret = side_insert(&fx.b, &s, &addr);

    lbuf[50] = 0;
    rbuf[50] = 0x5eed;
    if (!ret)
        ret = fi_recv(ep, &lbuf[50], sizeof(uint64_t), fi_mr_desc(lmr), FI_ADDR_UNSPEC, context);
    for (int tries = 100000; !ret && tries--;) {
        ret = fi_send(fx.b.ep, &rbuf[50], sizeof(uint64_t), fi_mr_desc(rmr), addr, &s);
        if (ret != -FI_EAGAIN)
            break;
        (void)fi_cq_read(cq, &discard, 0); /* the receiver's progress (tcp;ofi_rxm connects) */
        fixture_progress(&fx);
    }
    if (!ret)
        ret = take_cq(cq, &fx.b, &c, BOUND_MS);
    if (!ret)
        ret = take_cq(fx.b.cq, NULL, &sent, BOUND_MS);
    return ret ? (int)ret : c == context && sent == &s && lbuf[50] == 0x5eed ? 0 : -FI_EIO;
}

/* Every second bind is refused with -FI_EINVAL, the first CQ's own included; the second CQ
 * was never bound, so it closes while the endpoint is open. */
static int rebind_refused(struct fid_ep *ep, struct fid_cq *first, struct fid_cq *second)
{
    static const uint64_t dirs[] = {FI_TRANSMIT, FI_RECV, FI_TRANSMIT | FI_RECV};
    int refused = 0, ret;

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        ret = fi_ep_bind(ep, &second->fid, dirs[i]);
        printf("INFO rebind: a second CQ for 0x%llx -> %s\n", (unsigned long long)dirs[i],
               fi_strerror(-ret));
        refused += ret == -FI_EINVAL;
    }
    refused += fi_ep_bind(ep, &first->fid, FI_TRANSMIT) == -FI_EINVAL;
    check(refused == 4, "rebind: a second CQ for FI_TRANSMIT, FI_RECV or both, or the first CQ "
                        "again: -FI_EINVAL");
    ret = fi_close(&second->fid);
    check(!ret, "rebind: the refused CQ was not bound: it closes while the endpoint is open");
    return ret;
}

/* An endpoint of a's bound to its first CQ for both directions; a second CQ is refused, and
 * the first serves a write and a receive, and closes once the endpoint has. */
void rebind(bool engine)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA};
    struct fid_cq *first = NULL, *second = NULL;
    struct fid_ep *ep = NULL;
    int wrote, received, ret;
    void *c = NULL;

    if (engine)
        check(fx.info->tx_attr->size == 32, "rebind_engine: the info's tx_attr->size is "
                                            "FI_OFI_STRICTMR_TX_SIZE (32): the data path is on");
    ret = fi_cq_open(fx.a.domain, &attr, &first, NULL);
    if (!ret)
        ret = fi_cq_open(fx.a.domain, &attr, &second, NULL);
    if (!ret)
        ret = fi_endpoint(fx.a.domain, fx.info, &ep, NULL);
    if (!ret)
        ret = fi_ep_bind(ep, &fx.a.av->fid, 0);
    if (!ret)
        ret = fi_ep_bind(ep, &first->fid, FI_TRANSMIT | FI_RECV);
    check(!ret, "rebind: an endpoint bound to its first CQ for both directions");
    if (!ret && !rebind_refused(ep, first, second)) {
        second = NULL;
        check(!(ret = fi_enable(ep)), "rebind: the endpoint enables");
        check(!ret && !control_write(ep, first, 0, &wrote) &&
                  !take_cq(first, &fx.b, &c, BOUND_MS) && c == &wrote,
              "rebind: a write completes on the first CQ");
        check(!ret && !rebind_recv(ep, first, &received),
              "rebind: a receive completes on the first CQ, with the data sent");
    }
    check(ep && !fi_close(&ep->fid), "rebind: the endpoint closes");
    check(first && !fi_close(&first->fid), "rebind: the first CQ closes after it (not -FI_EBUSY)");
    if (second)
        fi_close(&second->fid);
}
