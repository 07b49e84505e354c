/*
 * ofi_strictmr atomics: like RMA (strictmr_rma.c), with up to three local
 * buffers per call (operand, result, compare), each of which needs its desc
 * under FI_MR_LOCAL. FI_ATOMIC_READ ignores its operand buffer, so that one
 * is not checked.
 */
#include "strictmr.h"

#include <complex.h>

enum { DATA, RESULT, COMPARE };

static const size_t datatype_size[] = {
    [FI_INT8] = 1,
    [FI_UINT8] = 1,
    [FI_INT16] = 2,
    [FI_UINT16] = 2,
    [FI_INT32] = 4,
    [FI_UINT32] = 4,
    [FI_INT64] = 8,
    [FI_UINT64] = 8,
    [FI_FLOAT] = sizeof(float),
    [FI_DOUBLE] = sizeof(double),
    [FI_FLOAT_COMPLEX] = sizeof(float complex),
    [FI_DOUBLE_COMPLEX] = sizeof(double complex),
    [FI_LONG_DOUBLE] = sizeof(long double),
    [FI_LONG_DOUBLE_COMPLEX] = sizeof(long double complex),
};

static size_t size_of(enum fi_datatype datatype)
{
    return (size_t)datatype < sizeof(datatype_size) / sizeof(datatype_size[0])
               ? datatype_size[datatype]
               : 0;
}

struct atomic_call {
    enum strictmr_op op;
    enum fi_datatype datatype;
    enum fi_op atomic_op;
    const struct fi_ioc *ioc[3];
    void **desc[3];
    size_t count[3];
    fi_addr_t peer;
    const struct fi_rma_ioc *rma;
    size_t rma_count;
    void *context;
    uint64_t flags; /* FI_INJECT, completion levels: what the emulated NIC may refuse */
};

static void ioc_to_iov(const struct fi_ioc *ioc, size_t count, size_t size, struct iovec *iov)
{
    for (size_t i = 0; i < count; i++) {
        iov[i].iov_base = ioc[i].addr;
        iov[i].iov_len = ioc[i].count * size;
    }
}

static bool call_valid(const struct atomic_call *a, size_t size)
{
    bool valid = size && a->rma_count && a->rma_count <= STRICTMR_IOV_LIMIT;

    for (int s = DATA; s <= COMPARE; s++) {
        valid = valid && a->count[s] <= STRICTMR_IOV_LIMIT;
    }
    return valid;
}

/* ---------------------------------------------------------------- NIC atomics */
/*
 * FI_OFI_STRICTMR_ATOMICS=nic offers what verbs hardware executes
 * (ibv_post_send(3)): IBV_WR_ATOMIC_FETCH_AND_ADD and IBV_WR_ATOMIC_CMP_AND_SWP on
 * one 64-bit word, both returning the old value. There is no non-fetching
 * form, so fi_atomic itself offers nothing; FI_SUM is a fetching atomic and
 * FI_CSWAP a compare atomic. A write-only NIC offers no fetching atomic at all:
 * returning remote memory to the initiator is a read (fi_getinfo(3), FI_READ).
 */
static bool nic_word(enum fi_datatype datatype)
{
    return datatype == FI_INT64 || datatype == FI_UINT64;
}

int strictmr_atomic_offered(enum strictmr_op kind, enum fi_datatype datatype, enum fi_op op)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;
    bool offered;

    switch (nic->atomics) {
    case STRICTMR_ATOMICS_ALL:
        offered = true;
        break;
    case STRICTMR_ATOMICS_NIC:
        offered = nic_word(datatype) && ((kind == STRICTMR_OP_FETCH && op == FI_SUM) ||
                                         (kind == STRICTMR_OP_COMPARE && op == FI_CSWAP));
        break;
    default:
        offered = false;
        break;
    }
    if (nic->write_only && kind != STRICTMR_OP_ATOMIC) {
        offered = false;
    }
    return offered ? 0 : -FI_EOPNOTSUPP;
}

void strictmr_atomic_count_limit(size_t *count)
{
    if (strictmr_config.nic.atomics == STRICTMR_ATOMICS_NIC && *count > 1) {
        *count = 1; /* one word per work request */
    }
}

static size_t rma_count_total(const struct fi_rma_ioc *rma, size_t count)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += rma[i].count;
    }
    return total;
}

/* What the emulated NIC refuses of an atomic call, before any rule is checked. */
static int nic_atomic_check(const struct atomic_call *a, size_t size)
{
    size_t elements = rma_count_total(a->rma, a->rma_count), limit = elements;

    if (strictmr_atomic_offered(a->op, a->datatype, a->atomic_op)) {
        return strictmr_nic_refuse(-FI_EOPNOTSUPP,
                                   "atomic op %d on datatype %d (kind %d) is not offered "
                                   "(FI_OFI_STRICTMR_ATOMICS / _WRITE_ONLY)",
                                   (int)a->atomic_op, (int)a->datatype, (int)a->op);
    }
    strictmr_atomic_count_limit(&limit);
    if (limit < elements) {
        return strictmr_nic_refuse(-FI_EMSGSIZE, "%zu atomic elements in one call, %zu offered",
                                   elements, limit);
    }
    return strictmr_nic_post(a->op, elements * size, a->flags);
}

/* Checks a call; on success core holds the core's segments. */
static int atomic_check(struct strictmr_ep *ep, const struct atomic_call *a,
                        struct fi_rma_ioc *core)
{
    size_t size = size_of(a->datatype);
    struct iovec iov[3][STRICTMR_IOV_LIMIT];
    struct fi_rma_iov rma[STRICTMR_IOV_LIMIT], core_rma[STRICTMR_IOV_LIMIT];
    struct strictmr_xfer x = {
        .op = a->op, .peer = a->peer, .rma = rma, .rma_count = a->rma_count, .context = a->context};
    int ret;

    if (!call_valid(a, size)) {
        return -FI_EINVAL;
    }
    ret = nic_atomic_check(a, size);
    if (ret) {
        return ret;
    }
    for (int s = DATA; s <= COMPARE; s++) {
        ioc_to_iov(a->ioc[s], a->count[s], size, iov[s]);
        x.local[s] =
            (struct strictmr_local_set){.iov = iov[s], .desc = a->desc[s], .count = a->count[s]};
    }
    if (a->atomic_op == FI_ATOMIC_READ) {
        x.local[DATA].count = 0;
    }
    for (size_t i = 0; i < a->rma_count; i++) {
        rma[i] = (struct fi_rma_iov){
            .addr = a->rma[i].addr, .len = a->rma[i].count * size, .key = a->rma[i].key};
    }
    ret = strictmr_xfer_check(ep, &x, core_rma);
    for (size_t i = 0; !ret && i < a->rma_count; i++) {
        core[i] = (struct fi_rma_ioc){
            .addr = core_rma[i].addr, .count = a->rma[i].count, .key = core_rma[i].key};
    }
    return ret;
}

/* ---------------------------------------------------------------- write */
static ssize_t atomic_write(struct fid_ep *ep_fid, const void *buf, size_t count, void *desc,
                            fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                            enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_ioc data = {.addr = (void *)buf, .count = count};
    struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_ATOMIC,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {&data},
                            .desc = {&desc},
                            .count = {1},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_ATOMIC, &(struct fi_msg_atomic){.msg_iov = &data, .iov_count = 1, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, NULL, 0, NULL, 0, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_atomic(ep->core, buf, count, NULL, dest, core.addr, core.key, datatype, op,
                           context);
}

static size_t ioc_total(const struct fi_ioc *ioc, size_t count)
{
    size_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += ioc[i].count;
    }
    return total;
}

static ssize_t atomic_writev(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
                             size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
                             enum fi_datatype datatype, enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc rma = {.addr = addr, .count = ioc_total(iov, count), .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_ATOMIC,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {iov},
                            .desc = {desc},
                            .count = {count},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_ATOMIC, &(struct fi_msg_atomic){.msg_iov = iov, .iov_count = count, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, NULL, 0, NULL, 0, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_atomicv(ep->core, iov, nodesc, count, dest, core.addr, core.key, datatype, op,
                            context);
}

/* A result or compare list of a *msg call. */
struct extra_set {
    const struct fi_ioc *ioc;
    void **desc;
    size_t count;
};

/* Checks a *msg call; on success copy is the call for the core. */
static int msg_check(struct strictmr_ep *ep, enum strictmr_op op, const struct fi_msg_atomic *msg,
                     uint64_t flags, struct extra_set result, struct extra_set compare,
                     struct fi_rma_ioc *core, void **nodesc, struct fi_msg_atomic *copy)
{
    struct atomic_call a = {
        .op = op,
        .datatype = msg->datatype,
        .atomic_op = msg->op,
        .ioc = {msg->msg_iov, result.ioc, compare.ioc},
        .desc = {msg->desc, result.desc, compare.desc},
        .count = {flags & FI_INJECT ? 0 : msg->iov_count, result.count, compare.count},
        .peer = msg->addr,
        .rma = msg->rma_iov,
        .rma_count = msg->rma_iov_count,
        .context = msg->context,
        .flags = flags};
    /* an inject skips the desc checks, not the limit: the core gets our desc array */
    int ret = msg->iov_count > STRICTMR_IOV_LIMIT ? -FI_EINVAL : atomic_check(ep, &a, core);

    *copy = *msg;
    copy->desc = nodesc;
    copy->rma_iov = core;
    return ret;
}

static ssize_t atomic_writemsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
                               uint64_t flags)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc core[STRICTMR_IOV_LIMIT];
    struct fi_msg_atomic copy;
    int ret = msg_check(ep, STRICTMR_OP_ATOMIC, msg, flags, (struct extra_set){0},
                        (struct extra_set){0}, core, nodesc, &copy);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_ATOMIC, &copy, NULL, 0, NULL, 0, flags, STRICTMR_CALL_MSG);
    }
    return ret ? strictmr_verdict(ret) : fi_atomicmsg(ep->core, &copy, flags);
}

static ssize_t atomic_inject(struct fid_ep *ep_fid, const void *buf, size_t count, fi_addr_t dest,
                             uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_ATOMIC,
                            .datatype = datatype,
                            .atomic_op = op,
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .flags = FI_INJECT};
    int ret = atomic_check(ep, &a, &core);

    struct fi_ioc data = {.addr = (void *)buf, .count = count};

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_ATOMIC, &(struct fi_msg_atomic){.msg_iov = &data, .iov_count = 1, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = NULL}, NULL, 0, NULL, 0, 0, STRICTMR_CALL_INJECT);
    }
    return ret ? strictmr_verdict(ret)
               : fi_inject_atomic(ep->core, buf, count, dest, core.addr, core.key, datatype, op);
}

/* ---------------------------------------------------------------- fetch */
static ssize_t atomic_fetch(struct fid_ep *ep_fid, const void *buf, size_t count, void *desc,
                            void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
                            uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_ioc data = {.addr = (void *)buf, .count = count};
    struct fi_ioc res = {.addr = result, .count = count};
    struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_FETCH,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {&data, &res},
                            .desc = {&desc, &result_desc},
                            .count = {1, 1},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_FETCH, &(struct fi_msg_atomic){.msg_iov = &data, .iov_count = 1, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, &res, 1, NULL, 0, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_fetch_atomic(ep->core, buf, count, NULL, result, NULL, dest, core.addr,
                                 core.key, datatype, op, context);
}

static ssize_t atomic_fetchv(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
                             size_t count, struct fi_ioc *resultv, void **result_desc,
                             size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                             enum fi_datatype datatype, enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc rma = {.addr = addr, .count = ioc_total(resultv, result_count), .key = key};
    struct fi_rma_ioc core;
    struct atomic_call a = {.op = STRICTMR_OP_FETCH,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {iov, resultv},
                            .desc = {desc, result_desc},
                            .count = {count, result_count},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_FETCH, &(struct fi_msg_atomic){.msg_iov = iov, .iov_count = count, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, resultv, result_count, NULL, 0, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_fetch_atomicv(ep->core, iov, nodesc, count, resultv, nodesc, result_count, dest,
                                  core.addr, core.key, datatype, op, context);
}

static ssize_t atomic_fetchmsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
                               struct fi_ioc *resultv, void **result_desc, size_t result_count,
                               uint64_t flags)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc core[STRICTMR_IOV_LIMIT];
    struct extra_set result = {.ioc = resultv, .desc = result_desc, .count = result_count};
    struct fi_msg_atomic copy;
    int ret = msg_check(ep, STRICTMR_OP_FETCH, msg, flags, result, (struct extra_set){0}, core,
                        nodesc, &copy);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_FETCH, &copy, resultv, result_count, NULL, 0, flags, STRICTMR_CALL_MSG);
    }
    return ret ? strictmr_verdict(ret)
               : fi_fetch_atomicmsg(ep->core, &copy, resultv, nodesc, result_count, flags);
}

/* ---------------------------------------------------------------- compare */
static ssize_t atomic_compare(struct fid_ep *ep_fid, const void *buf, size_t count, void *desc,
                              const void *compare, void *compare_desc, void *result,
                              void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                              enum fi_datatype datatype, enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    struct fi_ioc data = {.addr = (void *)buf, .count = count};
    struct fi_ioc res = {.addr = result, .count = count};
    struct fi_ioc cmp = {.addr = (void *)compare, .count = count};
    struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_COMPARE,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {&data, &res, &cmp},
                            .desc = {&desc, &result_desc, &compare_desc},
                            .count = {1, 1, 1},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_COMPARE, &(struct fi_msg_atomic){.msg_iov = &data, .iov_count = 1, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, &res, 1, &cmp, 1, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_compare_atomic(ep->core, buf, count, NULL, compare, NULL, result, NULL, dest,
                                   core.addr, core.key, datatype, op, context);
}

static ssize_t atomic_comparev(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
                               size_t count, const struct fi_ioc *comparev, void **compare_desc,
                               size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                               size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                               enum fi_datatype datatype, enum fi_op op, void *context)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc rma = {.addr = addr, .count = ioc_total(iov, count), .key = key}, core;
    struct atomic_call a = {.op = STRICTMR_OP_COMPARE,
                            .datatype = datatype,
                            .atomic_op = op,
                            .ioc = {iov, resultv, comparev},
                            .desc = {desc, result_desc, compare_desc},
                            .count = {count, result_count, compare_count},
                            .peer = dest,
                            .rma = &rma,
                            .rma_count = 1,
                            .context = context};
    int ret = atomic_check(ep, &a, &core);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_COMPARE, &(struct fi_msg_atomic){.msg_iov = iov, .iov_count = count, .addr = dest, .rma_iov = &core, .rma_iov_count = 1, .datatype = datatype, .op = op, .context = context}, resultv, result_count, comparev, compare_count, 0, STRICTMR_CALL_PLAIN);
    }
    return ret ? strictmr_verdict(ret)
               : fi_compare_atomicv(ep->core, iov, nodesc, count, comparev, nodesc, compare_count,
                                    resultv, nodesc, result_count, dest, core.addr, core.key,
                                    datatype, op, context);
}

static ssize_t atomic_comparemsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
                                 const struct fi_ioc *comparev, void **compare_desc,
                                 size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                                 size_t result_count, uint64_t flags)
{
    struct strictmr_ep *ep = STRICTMR_EP_OF(ep_fid);
    void *nodesc[STRICTMR_IOV_LIMIT] = {0};
    struct fi_rma_ioc core[STRICTMR_IOV_LIMIT];
    struct extra_set result = {.ioc = resultv, .desc = result_desc, .count = result_count};
    struct extra_set compare = {.ioc = comparev, .desc = compare_desc, .count = compare_count};
    struct fi_msg_atomic copy;
    int ret = msg_check(ep, STRICTMR_OP_COMPARE, msg, flags, result, compare, core, nodesc, &copy);

    if (!ret && ep->engine) {
        return strictmr_engine_atomic(ep, STRICTMR_POST_COMPARE, &copy, resultv, result_count, comparev, compare_count, flags, STRICTMR_CALL_MSG);
    }
    return ret ? strictmr_verdict(ret)
               : fi_compare_atomicmsg(ep->core, &copy, comparev, nodesc, compare_count, resultv,
                                      nodesc, result_count, flags);
}

/* ---------------------------------------------------------------- valid */
/* The core's answer, narrowed to what the emulated NIC offers. */
static int nic_valid(enum strictmr_op kind, enum fi_datatype datatype, enum fi_op op,
                     size_t *count, int core_ret)
{
    int ret = strictmr_atomic_offered(kind, datatype, op);

    if (ret) {
        return ret;
    }
    if (!core_ret && count) {
        strictmr_atomic_count_limit(count);
    }
    return core_ret;
}

static int atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                             size_t *count)
{
    return nic_valid(STRICTMR_OP_ATOMIC, datatype, op, count,
                     fi_atomicvalid(STRICTMR_EP_OF(ep)->core, datatype, op, count));
}

static int atomic_fetchvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                             size_t *count)
{
    return nic_valid(STRICTMR_OP_FETCH, datatype, op, count,
                     fi_fetch_atomicvalid(STRICTMR_EP_OF(ep)->core, datatype, op, count));
}

static int atomic_comparevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                               size_t *count)
{
    return nic_valid(STRICTMR_OP_COMPARE, datatype, op, count,
                     fi_compare_atomicvalid(STRICTMR_EP_OF(ep)->core, datatype, op, count));
}

struct fi_ops_atomic strictmr_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = atomic_write,
    .writev = atomic_writev,
    .writemsg = atomic_writemsg,
    .inject = atomic_inject,
    .readwrite = atomic_fetch,
    .readwritev = atomic_fetchv,
    .readwritemsg = atomic_fetchmsg,
    .compwrite = atomic_compare,
    .compwritev = atomic_comparev,
    .compwritemsg = atomic_comparemsg,
    .writevalid = atomic_writevalid,
    .readwritevalid = atomic_fetchvalid,
    .compwritevalid = atomic_comparevalid,
};
