/*
 * strictmr_caps_test's scenarios of what a post may ask (caps_test.h): the completion level
 * (dc), the inject size (inject), the RMA size (max_rma) and reads (write_only): infos and hints,
 * the refusals and what still lands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps_test.h"

#define STRICTMR_DC_TEST_FLAGS (FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)

/* ---------------------------------------------------------------- dc */
/* FI_SETOPSFLAG making FI_DELIVERY_COMPLETE a transmit default: refused as the post is when the
 * NIC lacks it, changing nothing (FI_GETOPSFLAG answers as before, a plain write lands and is
 * not refused); else left to the data path or the core, which decide (op_refused stays). */
static void dc_setopsflag(struct nic *n, bool off)
{
    uint64_t flags = FI_TRANSMIT | FI_DELIVERY_COMPLETE, was = FI_TRANSMIT, now = FI_TRANSMIT;
    uint64_t before = event(n, STRICTMR_EV_OP_REFUSED);
    int got_was = fi_control(&n->f.a.ep->fid, FI_GETOPSFLAG, &was), got_now, ret;

    ret = fi_control(&n->f.a.ep->fid, FI_SETOPSFLAG, &flags);
    if (!off) {
        check(event(n, STRICTMR_EV_OP_REFUSED) == before,
              "dc: FI_SETOPSFLAG FI_TRANSMIT|FI_DELIVERY_COMPLETE -> %d, not refused by the NIC",
              ret);
        return;
    }
    refused(n, "dc: FI_SETOPSFLAG FI_TRANSMIT|FI_DELIVERY_COMPLETE", before, ret, -FI_EOPNOTSUPP);
    got_now = fi_control(&n->f.a.ep->fid, FI_GETOPSFLAG, &now);
    check(got_now == got_was && (got_was || now == was),
          "dc: FI_GETOPSFLAG FI_TRANSMIT after the refusal -> %d 0x%llx, before it -> %d 0x%llx",
          got_now, (unsigned long long)now, got_was, (unsigned long long)was);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    check(write_lands(n, 512, 0, 3) && event(n, STRICTMR_EV_OP_REFUSED) == before,
          "dc: after the refused FI_SETOPSFLAG a plain write lands, not refused");
}

void scenario_dc(struct nic *n, const char *prov, bool off)
{
    int with = getinfo_ret(prov, FI_RMA, ~0ULL, FI_DELIVERY_COMPLETE, NULL);
    int without = getinfo_ret(prov, FI_RMA, ~0ULL, 0, NULL);
    char *core = core_name(prov);
    int core_with = getinfo_ret(core, FI_RMA, CORE_MR_MODES, FI_DELIVERY_COMPLETE, NULL);
    uint64_t before;
    struct fi_info *info;
    struct fid_ep *ep = NULL;
    int ret;

    free(core);
    if (off)
        check(!(n->f.info->tx_attr->op_flags & STRICTMR_DC_TEST_FLAGS),
              "dc: info tx op_flags 0x%llx", (unsigned long long)n->f.info->tx_attr->op_flags);
    if (off)
        check(with == -FI_ENODATA && !without,
              "dc: hints asking FI_DELIVERY_COMPLETE -> %d, without -> %d", with, without);
    else
        check(with == core_with, "dc: hints asking FI_DELIVERY_COMPLETE -> %d, the core's -> %d",
              with, core_with);
    check(write_lands(n, 512, FI_TRANSMIT_COMPLETE, 1), "dc: writemsg FI_TRANSMIT_COMPLETE lands");
    if (!off) {
        check(write_lands(n, 512, FI_DELIVERY_COMPLETE, 2),
              "dc: writemsg FI_DELIVERY_COMPLETE lands");
        dc_setopsflag(n, off);
        return;
    }
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "dc: writemsg FI_DELIVERY_COMPLETE", before,
            write_msg(n, 512, FI_DELIVERY_COMPLETE), -FI_EOPNOTSUPP);
    info = fi_dupinfo(n->f.info);
    info->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
    before = event(n, STRICTMR_EV_OP_REFUSED);
    ret = fi_endpoint(n->f.a.domain, info, &ep, NULL);
    refused(n, "dc: fi_endpoint with op_flags FI_DELIVERY_COMPLETE", before, ret, -FI_EOPNOTSUPP);
    if (!ret)
        fi_close(&ep->fid);
    fi_freeinfo(info);
    dc_setopsflag(n, off);
}

/* ---------------------------------------------------------------- inject */
static bool inject_lands(struct nic *n, size_t len)
{
    int ret;

    fill(n->lbuf, len, 3);
    memset(n->tbuf, 0, REGION);
    ret = POST_RETRY(&n->f,
                     fi_inject_write(n->f.a.ep, n->lbuf, len, n->f.a.peer, n->base, n->key));
    return !ret && await_equal(n, n->tbuf, n->lbuf, len);
}

void scenario_inject(struct nic *n, size_t limit)
{
    size_t core = n->core->tx_attr->inject_size, want = core < limit ? core : limit;
    size_t big = limit + 1, words = big / 8 + 1;
    struct iovec iov = {.iov_base = n->lbuf, .iov_len = big};
    struct fi_rma_iov rma = {.addr = n->base, .len = big, .key = n->key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &n->ldesc,
                             .iov_count = 1,
                             .addr = n->f.a.peer,
                             .rma_iov = &rma,
                             .rma_iov_count = 1};
    uint64_t before;

    check(n->f.info->tx_attr->inject_size == want, "inject: info inject_size %zu, want min(%zu, %zu)",
          n->f.info->tx_attr->inject_size, core, limit);
    if (limit && limit <= core)
        check(inject_lands(n, limit), "inject: fi_inject_write of %zu bytes lands", limit);
    if (limit >= core) {
        printf("NOTE inject: limit %zu not below the core's %zu: nothing of ours to refuse\n", limit,
               core);
        return;
    }
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "inject: fi_inject_write above the limit", before,
            fi_inject_write(n->f.a.ep, n->lbuf, big, n->f.a.peer, n->base, n->key), -FI_EINVAL);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "inject: fi_writemsg FI_INJECT above the limit", before,
            fi_writemsg(n->f.a.ep, &msg, FI_INJECT), -FI_EINVAL);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "inject: fi_inject above the limit", before,
            fi_inject(n->f.a.ep, n->lbuf, big, n->f.a.peer), -FI_EINVAL);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "inject: fi_inject_atomic above the limit", before,
            fi_inject_atomic(n->f.a.ep, n->lbuf, words, n->f.a.peer, n->base, n->key, FI_UINT64,
                             FI_SUM),
            -FI_EINVAL);
}

/* ---------------------------------------------------------------- max_rma */
void scenario_max_rma(struct nic *n, size_t limit)
{
    uint64_t before;
    int ret;

#if FI_VERSION_GE(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), FI_VERSION(1, 20))
    size_t value = 0, len = sizeof(value);

    ret = fi_getopt(&n->f.a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_RMA_SIZE, &value, &len);
    check(!ret && value == limit, "max_rma: fi_getopt FI_OPT_MAX_RMA_SIZE -> %d, %zu", ret, value);
#else
    size_t core = n->core->ep_attr->max_msg_size;

    check(n->f.info->ep_attr->max_msg_size == (core < limit ? core : limit),
          "max_rma: (libfabric < 1.20) info max_msg_size %zu, want min(%zu, %zu)",
          n->f.info->ep_attr->max_msg_size, core, limit);
#endif
    check(write_lands(n, limit, 0, 4), "max_rma: a write of %zu bytes lands", limit);
    fill(n->tbuf, limit, 5);
    memset(n->lbuf, 0, REGION);
    ret = completed(n, rma_read(n, limit));
    check(!ret && !memcmp(n->tbuf, n->lbuf, limit), "max_rma: a read of %zu bytes -> %d", limit,
          ret);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "max_rma: a write one byte above", before, rma_write(n, limit + 1), -FI_EINVAL);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "max_rma: a read one byte above", before, rma_read(n, limit + 1), -FI_EINVAL);
}

/* ---------------------------------------------------------------- write_only */
void scenario_write_only(struct nic *n, const char *prov)
{
    uint64_t caps = n->f.info->caps, operand = 5, result = 0, before;
    int read_hints = getinfo_ret(prov, FI_RMA | FI_READ, ~0ULL, 0, NULL);
    int write_hints = getinfo_ret(prov, FI_RMA | FI_WRITE, ~0ULL, 0, NULL);
    size_t count = 0;
    int ret;

    check(!(caps & (FI_READ | FI_REMOTE_READ)) && (caps & FI_WRITE) && (caps & FI_REMOTE_WRITE),
          "write_only: info caps 0x%llx", (unsigned long long)caps);
    check(read_hints == -FI_ENODATA && !write_hints,
          "write_only: hints with FI_READ -> %d, with FI_WRITE -> %d", read_hints, write_hints);
    check(write_lands(n, 1024, 0, 6), "write_only: a write lands");
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "write_only: a read", before, rma_read(n, 64), -FI_EOPNOTSUPP);
    ret = fi_fetch_atomicvalid(n->f.a.ep, FI_UINT64, FI_SUM, &count);
    check(ret == -FI_EOPNOTSUPP, "write_only: fi_fetch_atomicvalid -> %d", ret);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "write_only: a fetching atomic", before,
            fetch_add(n, FI_UINT64, 1, &operand, &result), -FI_EOPNOTSUPP);
    memset(n->tbuf, 0, 8);
    memcpy(n->lbuf, &operand, sizeof(operand));
    ret = completed(n, POST_RETRY(&n->f, fi_atomic(n->f.a.ep, n->lbuf, 1, n->ldesc, n->f.a.peer,
                                                   n->base, n->key, FI_UINT64, FI_SUM, n)));
    check(!ret && await_u64(n, n->tbuf, operand), "write_only: a plain atomic -> %d", ret);
}
