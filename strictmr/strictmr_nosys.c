/*
 * Messages and tagged messages are not served: ofi_strictmr's infos do not
 * offer FI_MSG or FI_TAGGED, and every call here returns -FI_ENOSYS.
 */
#include "strictmr.h"

#define NOSYS(name, ...)                                                                           \
    static ssize_t name(__VA_ARGS__)                                                               \
    {                                                                                              \
        return -FI_ENOSYS;                                                                         \
    }

NOSYS(msg_recv, struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, void *ctx)
NOSYS(msg_recvv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t src, void *ctx)
NOSYS(msg_recvmsg, struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
NOSYS(msg_send, struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
      void *ctx)
NOSYS(msg_sendv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t dest, void *ctx)
NOSYS(msg_sendmsg, struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
NOSYS(msg_inject, struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
NOSYS(msg_senddata, struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
      fi_addr_t dest, void *ctx)
NOSYS(msg_injectdata, struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest)

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

NOSYS(tagged_recv, struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
      uint64_t tag, uint64_t ignore, void *ctx)
NOSYS(tagged_recvv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
NOSYS(tagged_recvmsg, struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
NOSYS(tagged_send, struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
      uint64_t tag, void *ctx)
NOSYS(tagged_sendv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t dest, uint64_t tag, void *ctx)
NOSYS(tagged_sendmsg, struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
NOSYS(tagged_inject, struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag)
NOSYS(tagged_senddata, struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
      fi_addr_t dest, uint64_t tag, void *ctx)
NOSYS(tagged_injectdata, struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
      fi_addr_t dest, uint64_t tag)

struct fi_ops_tagged strictmr_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tagged_recv,
    .recvv = tagged_recvv,
    .recvmsg = tagged_recvmsg,
    .send = tagged_send,
    .sendv = tagged_sendv,
    .sendmsg = tagged_sendmsg,
    .inject = tagged_inject,
    .senddata = tagged_senddata,
    .injectdata = tagged_injectdata,
};
