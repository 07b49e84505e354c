/*
 * ofi_strictmr fabric and domain: each wraps the core's object of the same
 * kind. The domain owns the MR table that peers read (strictmr_registry.c).
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

static atomic_uint domain_ids;

/* ---------------------------------------------------------------- fabric */
static int fabric_close(struct fid *fid)
{
    struct strictmr_fabric *fab = strictmr_container(fid, struct strictmr_fabric, fabric.fid);
    int ret = fi_close(&fab->core->fid);

    if (ret) {
        return ret;
    }
    strictmr_report_write();
    free(fab);
    return 0;
}

static int fabric_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
                           void *context)
{
    struct strictmr_fabric *fab = strictmr_container(fid, struct strictmr_fabric, fabric.fid);

    if (!strcmp(name, STRICTMR_STATS_OPS_NAME)) {
        *ops = &strictmr_stats_ops;
        return 0;
    }
    return fi_open_ops(&fab->core->fid, name, flags, ops, context);
}

static int no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int no_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

static struct fi_ops fabric_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = fabric_ops_open,
};

static int no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
                         void *context)
{
    return -FI_ENOSYS;
}

/* Event queues carry no MR traffic: the caller gets the core's. */
static int fabric_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
                          void *context)
{
    struct strictmr_fabric *fab = strictmr_container(fabric, struct strictmr_fabric, fabric);

    return fi_eq_open(fab->core, attr, eq, context);
}

/*
 * Wait sets are refused: libfabric 2.x deprecates fi_wait_open (forwarding it
 * warns at build time), and the errors our CQs raise could not signal one.
 * fi_cq_sread and fi_trywait still reach the core.
 */
static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
                        struct fid_wait **waitset)
{
    return -FI_ENOSYS;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
    struct strictmr_fabric *fab = strictmr_container(fabric, struct strictmr_fabric, fabric);
    struct fid *core[count > 0 ? count : 1];

    for (int i = 0; i < count; i++) {
        struct strictmr_cq *cq = strictmr_cq_of(fids[i]);

        if (cq && cq->head) {
            return -FI_EAGAIN;
        }
        core[i] = cq ? &cq->core->fid : fids[i];
    }
    return fi_trywait(fab->core, core, count);
}

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = strictmr_domain_open,
    .passive_ep = no_passive_ep,
    .eq_open = fabric_eq_open,
    .wait_open = no_wait_open,
    .trywait = fabric_trywait,
};

int strictmr_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    struct fi_fabric_attr core_attr = *attr;
    struct strictmr_fabric *fab = calloc(1, sizeof(*fab));
    int ret = -FI_ENOMEM;

    if (!fab) {
        return ret;
    }
    core_attr.prov_name = strictmr_core_prov_name(attr->prov_name);
    if (!core_attr.prov_name) {
        ret = -FI_ENODATA;
        goto free_fab;
    }
    core_attr.prov_version = 0;
    ret = fi_fabric(&core_attr, &fab->core, context);
    if (ret) {
        goto free_name;
    }
    free(core_attr.prov_name);
    fab->fabric.fid.fclass = FI_CLASS_FABRIC;
    fab->fabric.fid.context = context;
    fab->fabric.fid.ops = &fabric_fid_ops;
    fab->fabric.ops = &fabric_ops;
    *fabric = &fab->fabric;
    return 0;

free_name:
    free(core_attr.prov_name);
free_fab:
    free(fab);
    return ret;
}

/* ---------------------------------------------------------------- domain */
static int domain_close(struct fid *fid)
{
    struct strictmr_domain *dom = strictmr_container(fid, struct strictmr_domain, domain.fid);
    int ret;

    if (atomic_load(&dom->refs)) {
        return -FI_EBUSY;
    }
    /* the progress thread stops before the core objects it used go */
    strictmr_engine_domain_close(dom);
    ret = fi_close(&dom->core->fid);
    if (ret) {
        return ret;
    }
    strictmr_table_destroy(&dom->table_seg);
    fi_freeinfo(dom->core_info);
    pthread_mutex_destroy(&dom->lock);
    free(dom->raw_maps);
    free(dom->local);
    free(dom);
    return 0;
}

static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct strictmr_domain *dom = strictmr_container(fid, struct strictmr_domain, domain.fid);

    return dom->core->fid.ops->bind(&dom->core->fid, bfid, flags);
}

static int domain_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_domain *dom = strictmr_container(fid, struct strictmr_domain, domain.fid);

    if (command == FI_MAP_RAW_MR || command == FI_UNMAP_KEY) {
        return strictmr_domain_raw_control(dom, command, arg);
    }
    return fi_control(&dom->core->fid, command, arg);
}

static int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
                           void *context)
{
    struct strictmr_domain *dom = strictmr_container(fid, struct strictmr_domain, domain.fid);

    return fi_open_ops(&dom->core->fid, name, flags, ops, context);
}

static struct fi_ops domain_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = domain_bind,
    .control = domain_control,
    .ops_open = domain_ops_open,
};

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
                          void *context)
{
    return -FI_ENOSYS;
}

/* Counters are refused: an error this provider raises could not reach one. */
static int no_cntr(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
                   void *context)
{
    return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **poll)
{
    return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
                  void *context)
{
    return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                  void *context)
{
    return -FI_ENOSYS;
}

static int domain_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                               struct fi_atomic_attr *attr, uint64_t flags)
{
    struct strictmr_domain *dom = strictmr_container(domain, struct strictmr_domain, domain);
    enum strictmr_op kind = flags & FI_COMPARE_ATOMIC ? STRICTMR_OP_COMPARE
                            : flags & FI_FETCH_ATOMIC ? STRICTMR_OP_FETCH
                                                      : STRICTMR_OP_ATOMIC;
    int ret = strictmr_atomic_offered(kind, datatype, op);

    /* the core's answer, narrowed to what the emulated NIC offers (FI_OFI_STRICTMR_ATOMICS) */
    if (!ret) {
        ret = fi_query_atomic(dom->core, datatype, op, attr, flags);
    }
    if (!ret && attr) {
        strictmr_atomic_count_limit(&attr->count);
    }
    return ret;
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = strictmr_av_open,
    .cq_open = strictmr_cq_open,
    .endpoint = strictmr_ep_open,
    .scalable_ep = no_scalable_ep,
    .cntr_open = no_cntr,
    .poll_open = no_poll,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = domain_query_atomic,
};

static int domain_tables(struct strictmr_domain *dom)
{
    int ret;

    dom->local = calloc(STRICTMR_TABLE_SLOTS, sizeof(*dom->local));
    if (!dom->local) {
        return -FI_ENOMEM;
    }
    ret = strictmr_table_create(&dom->table_seg, dom->id);
    if (ret) {
        free(dom->local);
        return ret;
    }
    dom->table = dom->table_seg.addr;
    return 0;
}

int strictmr_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                         struct fid_domain **domain, void *context)
{
    struct strictmr_fabric *fab = strictmr_container(fabric, struct strictmr_fabric, fabric);
    struct strictmr_domain *dom = calloc(1, sizeof(*dom));
    int ret = -FI_ENOMEM;

    if (!dom) {
        return ret;
    }
    dom->id = atomic_fetch_add(&domain_ids, 1) % 0xffff + 1; /* 16 bits, never 0 */
    dom->next_raw_key = 1;
    dom->next_core_key = 1;
    dom->next_ep_id = 1;
    ret = strictmr_engine_core_info(info, &dom->core_info);
    if (ret) {
        goto free_dom;
    }
    dom->core_virt = (dom->core_info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    ret = fi_domain(fab->core, dom->core_info, &dom->core, context);
    if (ret) {
        goto free_info;
    }
    ret = domain_tables(dom);
    if (ret) {
        goto close_core;
    }
    pthread_mutex_init(&dom->lock, NULL);
    dom->fabric = fab;
    ret = strictmr_engine_domain_open(dom);
    if (ret) {
        pthread_mutex_destroy(&dom->lock);
        strictmr_table_destroy(&dom->table_seg);
        free(dom->local);
        goto close_core;
    }
    dom->domain.fid.fclass = FI_CLASS_DOMAIN;
    dom->domain.fid.context = context;
    dom->domain.fid.ops = &domain_fid_ops;
    dom->domain.ops = &domain_ops;
    dom->domain.mr = &strictmr_mr_ops;
    *domain = &dom->domain;
    return 0;

close_core:
    fi_close(&dom->core->fid);
free_info:
    fi_freeinfo(dom->core_info);
free_dom:
    free(dom);
    return ret;
}
