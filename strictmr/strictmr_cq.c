/*
 * ofi_strictmr completion queue: the core's, plus a queue of the error
 * completions this provider raises for violations (strictmr_cq_error.c).
 * Operation contexts are the caller's own (the core gets them unchanged), so
 * entries need no translation. While our queue holds an error, reads return
 * -FI_EAVAIL and fi_cq_readerr returns ours before the core's.
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

static struct fi_ops cq_fid_ops;

struct strictmr_cq *strictmr_cq_of(struct fid *fid)
{
    return fid && fid->ops == &cq_fid_ops ? strictmr_container(fid, struct strictmr_cq, cq.fid)
                                          : NULL;
}

#define CQ_OF(cq_fid) strictmr_container(cq_fid, struct strictmr_cq, cq)

/* With the NIC data path on (cq->engine), entries come from its ring (strictmr_engine_cq.c). */
static ssize_t cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
    struct strictmr_cq *cq = CQ_OF(cq_fid);

    if (strictmr_cq_has_errors(cq)) {
        return -FI_EAVAIL;
    }
    return cq->engine ? strictmr_engine_cq_read(cq, buf, count, NULL, 0)
                      : fi_cq_read(cq->core, buf, count);
}

static ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count, fi_addr_t *src_addr)
{
    struct strictmr_cq *cq = CQ_OF(cq_fid);

    if (strictmr_cq_has_errors(cq)) {
        return -FI_EAVAIL;
    }
    return cq->engine ? strictmr_engine_cq_read(cq, buf, count, src_addr, 0)
                      : fi_cq_readfrom(cq->core, buf, count, src_addr);
}

static ssize_t cq_sread(struct fid_cq *cq_fid, void *buf, size_t count, const void *cond,
                        int timeout)
{
    struct strictmr_cq *cq = CQ_OF(cq_fid);

    if (strictmr_cq_has_errors(cq)) {
        return -FI_EAVAIL;
    }
    return cq->engine ? strictmr_engine_cq_read(cq, buf, count, NULL, timeout)
                      : fi_cq_sread(cq->core, buf, count, cond, timeout);
}

static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count, fi_addr_t *src_addr,
                            const void *cond, int timeout)
{
    struct strictmr_cq *cq = CQ_OF(cq_fid);

    if (strictmr_cq_has_errors(cq)) {
        return -FI_EAVAIL;
    }
    return cq->engine ? strictmr_engine_cq_read(cq, buf, count, src_addr, timeout)
                      : fi_cq_sreadfrom(cq->core, buf, count, src_addr, cond, timeout);
}

/* API >= 1.5 callers own err_data; ours carry none. */
static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
    struct strictmr_cq *cq = CQ_OF(cq_fid);
    struct strictmr_cq_error *e = strictmr_cq_pop_error(cq);
    void *err_data = buf->err_data;

    if (!e) {
        return cq->engine ? strictmr_engine_cq_readerr(cq, buf, flags)
                          : fi_cq_readerr(cq->core, buf, flags);
    }
    *buf = e->entry;
    buf->err_data = err_data;
    buf->err_data_size = 0;
    free(e);
    return 1;
}

static int cq_signal(struct fid_cq *cq_fid)
{
    return fi_cq_signal(CQ_OF(cq_fid)->core);
}

static const char *cq_strerror(struct fid_cq *cq_fid, int prov_errno, const void *err_data,
                               char *buf, size_t len)
{
    const char *text;

    if (err_data) {
        return fi_cq_strerror(CQ_OF(cq_fid)->core, prov_errno, err_data, buf, len);
    }
    text = fi_strerror(prov_errno);
    if (buf && len) {
        strncpy(buf, text, len - 1);
        buf[len - 1] = '\0';
    }
    return text;
}

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
    struct strictmr_cq *cq = strictmr_container(fid, struct strictmr_cq, cq.fid);
    struct strictmr_cq_error *e;
    int ret;

    if (atomic_load(&cq->refs)) {
        return -FI_EBUSY;
    }
    /* off the domain's list, and closed, while the progress thread cannot read it */
    strictmr_engine_lock(cq->domain);
    if (cq->engine) {
        strictmr_engine_cq_close(cq);
    }
    ret = fi_close(&cq->core->fid);
    strictmr_engine_unlock(cq->domain);
    if (ret) {
        return ret;
    }
    while ((e = strictmr_cq_pop_error(cq))) {
        free(e);
    }
    pthread_mutex_destroy(&cq->lock);
    atomic_fetch_sub(&cq->domain->refs, 1);
    free(cq);
    return 0;
}

static int cq_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct strictmr_cq *cq = strictmr_container(fid, struct strictmr_cq, cq.fid);

    return cq->core->fid.ops->bind(&cq->core->fid, bfid, flags);
}

static int cq_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_cq *cq = strictmr_container(fid, struct strictmr_cq, cq.fid);

    return fi_control(&cq->core->fid, command, arg);
}

static int cq_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    struct strictmr_cq *cq = strictmr_container(fid, struct strictmr_cq, cq.fid);

    return fi_open_ops(&cq->core->fid, name, flags, ops, context);
}

static struct fi_ops cq_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = cq_bind,
    .control = cq_control,
    .ops_open = cq_ops_open,
};

int strictmr_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out,
                     void *context)
{
    struct strictmr_domain *dom = strictmr_container(domain, struct strictmr_domain, domain);
    struct strictmr_cq *cq = calloc(1, sizeof(*cq));
    int ret;

    if (!cq) {
        return -FI_ENOMEM;
    }
    cq->domain = dom;
    ret = dom->engine ? strictmr_engine_cq_open(cq, attr, context)
                      : fi_cq_open(dom->core, attr, &cq->core, context);
    if (ret) {
        free(cq);
        return ret;
    }
    pthread_mutex_init(&cq->lock, NULL);
    cq->cq.fid.fclass = FI_CLASS_CQ;
    cq->cq.fid.context = context;
    cq->cq.fid.ops = &cq_fid_ops;
    cq->cq.ops = &cq_ops;
    atomic_fetch_add(&dom->refs, 1);
    *out = &cq->cq;
    return 0;
}
