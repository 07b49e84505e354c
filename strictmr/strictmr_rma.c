/*
 * ofi_strictmr RMA: every call is checked (strictmr_xfer.c) and then handed
 * to the core with the core's key and address and no local descs (the core
 * was opened without FI_MR_LOCAL).
 */
#include "strictmr.h"

static size_t iov_total(const struct iovec *iov, size_t count)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += iov[i].iov_len;
    }
    return total;
}

static size_t rma_total(const struct fi_rma_iov *rma, size_t count)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += rma[i].len;
    }
    return total;
}

/* flags: the call's (FI_INJECT, completion levels), for what the emulated NIC refuses. */
static int check_rma(struct strictmr_ep *ep, enum strictmr_op op, const struct iovec *iov,
                     void **desc, size_t count, fi_addr_t peer, const struct fi_rma_iov *rma,
                     size_t rma_count, void *context, uint64_t flags, struct fi_rma_iov *core)
{
    struct strictmr_xfer x = {
        .op = op,
        .local = {{.iov = iov, .desc = desc, .count = count}},
        .peer = peer,
        .rma = rma,
        .rma_count = rma_count,
        .context = context,
    };
    int ret;

    if (count > STRICTMR_IOV_LIMIT || rma_count > STRICTMR_IOV_LIMIT || !rma_count) {
        return -FI_EINVAL;
    }
    ret = strictmr_nic_post(op, rma_total(rma, rma_count), flags);
    return ret ? ret : strictmr_xfer_check(ep, &x, core);
}

/* Local iovs into one remote segment [addr, + their total). */
static int check_contig(struct strictmr_ep *ep, enum strictmr_op op, const struct iovec *iov,
                        void **desc, size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
                        void *context, struct fi_rma_iov *core)
{
    struct fi_rma_iov rma = {.addr = addr, .len = iov_total(iov, count), .key = key};

    return check_rma(ep, op, iov, desc, count, peer, &rma, 1, context, 0, core);
}

/* An inject's buffer needs no desc. */
static int check_inject(struct strictmr_ep *ep, size_t len, fi_addr_t peer, uint64_t addr,
                        uint64_t key, struct fi_rma_iov *core)
{
    struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

    return check_rma(ep, STRICTMR_OP_WRITE, NULL, NULL, 0, peer, &rma, 1, NULL, FI_INJECT, core);
}

static int check_msg(struct strictmr_ep *ep, enum strictmr_op op, const struct fi_msg_rma *msg,
                     uint64_t flags, struct fi_rma_iov *core)
{
    size_t local = flags & FI_INJECT ? 0 : msg->iov_count;

    /* an inject skips the desc checks, not the limit: the core gets our desc array */
    if (msg->iov_count > STRICTMR_IOV_LIMIT) {
        return -FI_EINVAL;
    }
    return check_rma(ep, op, msg->msg_iov, msg->desc, local, msg->addr, msg->rma_iov,
                     msg->rma_iov_count, msg->context, flags, core);
}

static ssize_t rma_read(struct fid_ep *ep_fid, void *buf, size_t len, void *desc, fi_addr_t src,
                        uint64_t addr, uint64_t key, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct fi_rma_iov core;
    int ret = check_contig(ep, STRICTMR_OP_READ, &iov, &desc, 1, src, addr, key, context, &core);

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_rma(ep, STRICTMR_POST_READ, &iov, 1, src, &core, 0, 0,
                                              STRICTMR_CALL_PLAIN, context)
                        : fi_read(ep->core, buf, len, NULL, src, core.addr, core.key, context);
}

static ssize_t rma_readv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_iov core;
    int ret = check_contig(ep, STRICTMR_OP_READ, iov, desc, count, src, addr, key, context, &core);

    return ret ? strictmr_verdict(ret)
           : ep->engine
               ? strictmr_engine_rma(ep, STRICTMR_POST_READ, iov, count, src, &core, 0, 0, STRICTMR_CALL_PLAIN,
                                     context)
               : fi_readv(ep->core, iov, nodesc, count, src, core.addr, core.key, context);
}

typedef ssize_t (*rma_msg_fn)(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags);

static ssize_t rma_msg(struct fid_ep *ep_fid, enum strictmr_op op, const struct fi_msg_rma *msg,
                       uint64_t flags, rma_msg_fn post)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_iov core[STRICTMR_IOV_LIMIT];
    struct fi_msg_rma copy = *msg;
    int ret = check_msg(ep, op, msg, flags, core);

    if (ret) {
        return strictmr_verdict(ret);
    }
    copy.desc = nodesc;
    copy.rma_iov = core;
    if (ep->engine) {
        return strictmr_engine_rma_msg(ep, op == STRICTMR_OP_READ ? STRICTMR_POST_READ
                                                                   : STRICTMR_POST_WRITE,
                                       &copy, flags);
    }
    return post(ep->core, &copy, flags);
}

static ssize_t rma_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep_fid, STRICTMR_OP_READ, msg, flags, fi_readmsg);
}

static ssize_t rma_write(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
                         fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct fi_rma_iov core;
    int ret = check_contig(ep, STRICTMR_OP_WRITE, &iov, &desc, 1, dest, addr, key, context, &core);

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_rma(ep, STRICTMR_POST_WRITE, &iov, 1, dest, &core, 0, 0,
                                              STRICTMR_CALL_PLAIN, context)
                        : fi_write(ep->core, buf, len, NULL, dest, core.addr, core.key, context);
}

static ssize_t rma_writev(struct fid_ep *ep_fid, const struct iovec *iov, void **desc, size_t count,
                          fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_iov core;
    int ret =
        check_contig(ep, STRICTMR_OP_WRITE, iov, desc, count, dest, addr, key, context, &core);

    return ret ? strictmr_verdict(ret)
           : ep->engine
               ? strictmr_engine_rma(ep, STRICTMR_POST_WRITE, iov, count, dest, &core, 0, 0, STRICTMR_CALL_PLAIN,
                                     context)
               : fi_writev(ep->core, iov, nodesc, count, dest, core.addr, core.key, context);
}

static ssize_t rma_writemsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep_fid, STRICTMR_OP_WRITE, msg, flags, fi_writemsg);
}

static ssize_t rma_inject(struct fid_ep *ep_fid, const void *buf, size_t len, fi_addr_t dest,
                          uint64_t addr, uint64_t key)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_rma_iov core;
    int ret = check_inject(ep, len, dest, addr, key, &core);

    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_rma(ep, STRICTMR_POST_WRITE, &iov, 1, dest, &core,
                                              0, 0, STRICTMR_CALL_INJECT, NULL)
                        : fi_inject_write(ep->core, buf, len, dest, core.addr, core.key);
}

static ssize_t rma_writedata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
                             uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
                             void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct fi_rma_iov core;
    int ret = check_contig(ep, STRICTMR_OP_WRITE, &iov, &desc, 1, dest, addr, key, context, &core);

    return ret ? strictmr_verdict(ret)
           : ep->engine
               ? strictmr_engine_rma(ep, STRICTMR_POST_WRITE, &iov, 1, dest, &core,
                                     FI_REMOTE_CQ_DATA, data, STRICTMR_CALL_PLAIN, context)
               : fi_writedata(ep->core, buf, len, NULL, data, dest, core.addr, core.key, context);
}

static ssize_t rma_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest, uint64_t addr, uint64_t key)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_rma_iov core;
    int ret = check_inject(ep, len, dest, addr, key, &core);

    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return ret ? strictmr_verdict(ret)
           : ep->engine
               ? strictmr_engine_rma(ep, STRICTMR_POST_WRITE, &iov, 1, dest, &core,
                                     FI_REMOTE_CQ_DATA, data, STRICTMR_CALL_INJECT, NULL)
               : fi_inject_writedata(ep->core, buf, len, data, dest, core.addr, core.key);
}

struct fi_ops_rma strictmr_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = rma_read,
    .readv = rma_readv,
    .readmsg = rma_readmsg,
    .write = rma_write,
    .writev = rma_writev,
    .writemsg = rma_writemsg,
    .inject = rma_inject,
    .writedata = rma_writedata,
    .injectdata = rma_injectdata,
};
