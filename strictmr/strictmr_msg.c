/*
 * ofi_strictmr messages (FI_MSG): sends and receives go to the core endpoint
 * unchanged but for their descs. Under FI_MR_LOCAL every send and receive
 * buffer must come with a desc of this domain that covers it, checked like an
 * RMA call's local buffers (strictmr_xfer.c); a receive's violation becomes
 * an error completion on the receive CQ. Injects need no desc (fi_msg(3)).
 * The core was opened without FI_MR_LOCAL, so it gets no descs; its
 * completions reach the caller unchanged (strictmr_cq.c).
 */
#include "strictmr.h"

static int check_buffers(struct strictmr_ep *ep, enum strictmr_op op, const struct iovec *iov,
                         void **desc, size_t count, void *context)
{
    struct strictmr_xfer x = {
        .op = op,
        .local = {{.iov = iov, .desc = desc, .count = count}},
        .context = context,
    };

    if (count > STRICTMR_IOV_LIMIT) {
        return -FI_EINVAL;
    }
    return strictmr_xfer_check(ep, &x, NULL);
}

static int check_one(struct strictmr_ep *ep, enum strictmr_op op, const void *buf, size_t len,
                     void *desc, void *context)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return check_buffers(ep, op, &iov, &desc, 1, context);
}

/* fi_sendmsg with FI_INJECT leaves its buffers to the caller at once: no descs to check. */
static int check_msg(struct strictmr_ep *ep, enum strictmr_op op, const struct fi_msg *msg,
                     uint64_t flags)
{
    size_t local = op == STRICTMR_OP_SEND && (flags & FI_INJECT) ? 0 : msg->iov_count;
    size_t len = 0;
    int ret;

    if (msg->iov_count > STRICTMR_IOV_LIMIT) {
        return -FI_EINVAL;
    }
    for (size_t i = 0; i < msg->iov_count; i++) {
        len += msg->msg_iov[i].iov_len;
    }
    ret = op == STRICTMR_OP_SEND ? strictmr_nic_post(op, len, flags) : 0;
    if (ret) {
        return ret;
    }
    return check_buffers(ep, op, msg->msg_iov, msg->desc, local, msg->context);
}

/* ---------------------------------------------------------------- receive */
static ssize_t msg_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc, fi_addr_t src,
                        void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    int ret = check_one(ep, STRICTMR_OP_RECV, buf, len, desc, context);

    struct iovec iov = {.iov_base = buf, .iov_len = len};

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_RECV, &iov, 1, src, 0, 0, STRICTMR_CALL_PLAIN,
                                              context)
                        : fi_recv(ep->core, buf, len, NULL, src, context);
}

static ssize_t msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    int ret = check_buffers(ep, STRICTMR_OP_RECV, iov, desc, count, context);

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_RECV, iov, count, src, 0, 0, STRICTMR_CALL_PLAIN,
                                              context)
                        : fi_recvv(ep->core, iov, nodesc, count, src, context);
}

static ssize_t msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_msg copy = *msg;
    int ret = check_msg(ep, STRICTMR_OP_RECV, msg, flags);

    if (ret) {
        return strictmr_verdict(ret);
    }
    copy.desc = nodesc;
    if (ep->engine) {
        return strictmr_engine_msg(ep, STRICTMR_POST_RECV, copy.msg_iov, copy.iov_count,
                                   copy.addr, flags, copy.data, STRICTMR_CALL_MSG, copy.context);
    }
    return fi_recvmsg(ep->core, &copy, flags);
}

/* ---------------------------------------------------------------- send */
static ssize_t msg_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
                        fi_addr_t dest, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    int ret = check_one(ep, STRICTMR_OP_SEND, buf, len, desc, context);

    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_SEND, &iov, 1, dest, 0, 0, STRICTMR_CALL_PLAIN,
                                              context)
                        : fi_send(ep->core, buf, len, NULL, dest, context);
}

static ssize_t msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    int ret = check_buffers(ep, STRICTMR_OP_SEND, iov, desc, count, context);

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_SEND, iov, count, dest, 0, 0, STRICTMR_CALL_PLAIN,
                                              context)
                        : fi_sendv(ep->core, iov, nodesc, count, dest, context);
}

static ssize_t msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_msg copy = *msg;
    int ret = check_msg(ep, STRICTMR_OP_SEND, msg, flags);

    if (ret) {
        return strictmr_verdict(ret);
    }
    copy.desc = nodesc;
    if (ep->engine) {
        return strictmr_engine_msg(ep, STRICTMR_POST_SEND, copy.msg_iov, copy.iov_count,
                                   copy.addr, flags, copy.data, STRICTMR_CALL_MSG,
                                   copy.context);
    }
    return fi_sendmsg(ep->core, &copy, flags);
}

static ssize_t msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len, fi_addr_t dest)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    int ret = strictmr_nic_post(STRICTMR_OP_SEND, len, FI_INJECT);

    if (ret) {
        return ret;
    }
    return ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_SEND, &iov, 1, dest, 0, 0,
                                            STRICTMR_CALL_INJECT, NULL)
                      : fi_inject(ep->core, buf, len, dest);
}

static ssize_t msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    int ret = check_one(ep, STRICTMR_OP_SEND, buf, len, desc, context);

    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return ret          ? strictmr_verdict(ret)
           : ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_SEND, &iov, 1, dest,
                                              FI_REMOTE_CQ_DATA, data, STRICTMR_CALL_PLAIN, context)
                        : fi_senddata(ep->core, buf, len, NULL, data, dest, context);
}

static ssize_t msg_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    int ret = strictmr_nic_post(STRICTMR_OP_SEND, len, FI_INJECT);

    if (ret) {
        return ret;
    }
    return ep->engine ? strictmr_engine_msg(ep, STRICTMR_POST_SEND, &iov, 1, dest,
                                            FI_REMOTE_CQ_DATA, data, STRICTMR_CALL_INJECT, NULL)
                      : fi_injectdata(ep->core, buf, len, data, dest);
}

struct fi_ops_msg strictmr_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};
