/*
 * Tagged messages are not served: ofi_strictmr's infos do not offer
 * FI_TAGGED, and every call here returns -FI_ENOSYS. (Messages are served:
 * strictmr_msg.c.)
 */
#include "strictmr.h"

#define NOSYS(name, ...)                                                                           \
    static ssize_t name(__VA_ARGS__)                                                               \
    {                                                                                              \
        return -FI_ENOSYS;                                                                         \
    }

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
