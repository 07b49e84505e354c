/*
 * ofi_strictmr endpoint: the core's, bound to the core halves of our AV and
 * CQs. Enabling it publishes its core address in the host registry so that
 * initiators can find its domain's MR table.
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

#define EP_NAME_MAX 256

static struct fi_ops ep_fid_ops;

struct strictmr_ep *strictmr_ep_of(struct fid *fid)
{
    return fid && fid->ops == &ep_fid_ops ? strictmr_container(fid, struct strictmr_ep, ep.fid)
                                          : NULL;
}

static int ep_close(struct fid *fid)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);
    int ret;

    /* off the domain's list, and closed, while the progress thread cannot use it */
    strictmr_engine_lock(ep->domain);
    if (ep->engine) {
        strictmr_engine_ep_close(ep);
    }
    ret = fi_close(&ep->core->fid);
    strictmr_engine_unlock(ep->domain);
    if (ret) {
        return ret;
    }
    strictmr_segment_unlink(&ep->published);
    if (ep->av) {
        atomic_fetch_sub(&ep->av->refs, 1);
    }
    if (ep->tx_cq) {
        atomic_fetch_sub(&ep->tx_cq->refs, 1);
    }
    if (ep->rx_cq) {
        atomic_fetch_sub(&ep->rx_cq->refs, 1);
    }
    atomic_fetch_sub(&ep->domain->refs, 1);
    free(ep);
    return 0;
}

static int bind_av(struct strictmr_ep *ep, struct strictmr_av *av, uint64_t flags)
{
    int ret;

    if (ep->av) {
        return -FI_EINVAL;
    }
    strictmr_engine_lock(ep->domain);
    ret = fi_ep_bind(ep->core, &av->core->fid, flags);
    strictmr_engine_unlock(ep->domain);
    if (!ret) {
        ep->av = av;
        atomic_fetch_add(&av->refs, 1);
    }
    return ret;
}

/* The direction's slot is empty: bind_cq refused a second CQ before the core was asked. */
static void cq_take(struct strictmr_cq **slot, struct strictmr_cq *cq)
{
    *slot = cq;
    atomic_fetch_add(&cq->refs, 1);
}

/* One CQ per direction (fi_endpoint(3)). A second for a direction that has one is refused
 * before the core is asked, as libfabric's own providers refuse it (-FI_EINVAL): a core that
 * took it (sockets does) would disagree with the endpoint on its CQs, and closing the first
 * would then get -FI_EBUSY. */
static int bind_cq(struct strictmr_ep *ep, struct strictmr_cq *cq, uint64_t flags)
{
    uint64_t core_flags = ep->engine ? flags & ~FI_SELECTIVE_COMPLETION : flags;
    bool tx_bound = (flags & FI_TRANSMIT) && ep->tx_cq, rx_bound = (flags & FI_RECV) && ep->rx_cq;
    int ret;

    if (tx_bound || rx_bound) {
        FI_WARN(&strictmr_prov, FI_LOG_EP_CTRL,
                "endpoint %u: a CQ is bound for %s already: a second refused, nothing changed\n",
                ep->id,
                tx_bound && rx_bound ? "FI_TRANSMIT and FI_RECV"
                : tx_bound           ? "FI_TRANSMIT"
                                     : "FI_RECV");
        return -FI_EINVAL;
    }
    strictmr_engine_lock(ep->domain);
    ret = fi_ep_bind(ep->core, &cq->core->fid, core_flags);
    if (!ret && ep->engine) {
        strictmr_engine_ep_bind_cq(ep, flags); /* a refused bind changes nothing */
    }
    strictmr_engine_unlock(ep->domain);
    if (ret) {
        return ret;
    }
    if (flags & FI_TRANSMIT) {
        cq_take(&ep->tx_cq, cq);
    }
    if (flags & FI_RECV) {
        cq_take(&ep->rx_cq, cq);
    }
    return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);
    struct strictmr_av *av = strictmr_av_of(bfid);
    struct strictmr_cq *cq = strictmr_cq_of(bfid);

    if (av) {
        return bind_av(ep, av, flags);
    }
    if (cq) {
        return bind_cq(ep, cq, flags);
    }
    if (bfid->fclass == FI_CLASS_CNTR || bfid->fclass == FI_CLASS_MR) {
        return -FI_ENOSYS;
    }
    return fi_ep_bind(ep->core, bfid, flags);
}

/*
 * Our core address in the form fi_av_lookup gives it back, which is what an
 * initiator hashes to find our registry entry (strictmr_av.c). That need not be
 * what fi_getname returns: shm in libfabric 2.x names itself "fi_shm://pid:..."
 * but its AV reports "pid:..." (1.17 gave the same bytes both ways). So the
 * name makes a round trip through a private core AV, never the caller's, whose
 * fi_addr numbering must not change.
 */
static int ep_av_name(struct strictmr_ep *ep, uint8_t *name, size_t *len)
{
    struct fi_av_attr attr = {.type = FI_AV_TABLE, .count = 1};
    struct fid_av *av;
    fi_addr_t addr;
    size_t size = *len;
    int ret = fi_getname(&ep->core->fid, name, len);

    if (!ret) {
        ret = fi_av_open(ep->domain->core, &attr, &av, NULL);
    }
    if (ret) {
        return ret;
    }
    ret = fi_av_insert(av, name, 1, &addr, 0, NULL) == 1 ? 0 : -FI_EADDRNOTAVAIL;
    if (!ret) {
        *len = size;
        ret = fi_av_lookup(av, addr, name, len);
    }
    if (!ret && *len > size) {
        ret = -FI_ETOOSMALL;
    }
    fi_close(&av->fid);
    return ret;
}

static int ep_enable(struct strictmr_ep *ep)
{
    uint8_t name[EP_NAME_MAX];
    size_t len = sizeof(name);
    int ret;

    strictmr_engine_lock(ep->domain); /* the progress thread may be reading its CQs */
    ret = fi_enable(ep->core);
    if (!ret && ep->engine) {
        strictmr_engine_ep_enabled(ep);
    }
    strictmr_engine_unlock(ep->domain);

    if (!ret) {
        ret = ep_av_name(ep, name, &len);
    }
    if (!ret) {
        ret = strictmr_ep_publish(&ep->published, name, len, ep->domain->table_seg.name, ep->id);
    }
    if (ret) {
        FI_WARN(&strictmr_prov, FI_LOG_EP_CTRL, "enabling endpoint %u: %s\n", ep->id,
                fi_strerror(-ret));
    }
    return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);
    int ret;

    switch (command) {
    case FI_ENABLE:
        return ep_enable(ep);
    case FI_ALIAS:
        return -FI_ENOSYS;
    case FI_SETOPSFLAG:
        /* transmit defaults the NIC cannot honour are refused, as fi_endpoint refuses them */
        ret = strictmr_nic_set_op_flags(arg);
        if (ret) {
            return ret;
        }
        /* fall through */
    case FI_GETOPSFLAG:
        /* the NIC data path keeps the flags and serves both itself: it hands the core each
         * operation's flags (and shm answers -FI_ENOSYS); without it, the core keeps them */
        return ep->engine ? strictmr_engine_ep_op_flags(ep, command == FI_SETOPSFLAG, arg)
                          : fi_control(&ep->core->fid, command, arg);
    default:
        return fi_control(&ep->core->fid, command, arg);
    }
}

static int ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);

    return fi_open_ops(&ep->core->fid, name, flags, ops, context);
}

static struct fi_ops ep_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = ep_ops_open,
};

#define EP_CORE(ep_fid) (strictmr_container(ep_fid, struct strictmr_ep, ep)->core)

static ssize_t ep_cancel(fid_t fid, void *context)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);

    return ep->engine ? strictmr_engine_cancel(ep, context) : fi_cancel(&ep->core->fid, context);
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);
    int ret = strictmr_nic_getopt(ep, level, optname, optval, optlen);

    return ret != -FI_ENOPROTOOPT ? ret : fi_getopt(&ep->core->fid, level, optname, optval, optlen);
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);

    return fi_setopt(&ep->core->fid, level, optname, optval, optlen);
}

static int no_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep,
                  void *context)
{
    return -FI_ENOSYS;
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep,
                     void *context)
{
    return -FI_ENOSYS;
}

static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
    struct strictmr_ep *sep = strictmr_container(ep, struct strictmr_ep, ep);

    return sep->engine ? strictmr_engine_size_left(sep, true)
                       : EP_CORE(ep)->ops->rx_size_left(EP_CORE(ep));
}

static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
    struct strictmr_ep *sep = strictmr_container(ep, struct strictmr_ep, ep);

    return sep->engine ? strictmr_engine_size_left(sep, false)
                       : EP_CORE(ep)->ops->tx_size_left(EP_CORE(ep));
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = no_ctx,
    .rx_ctx = no_rx_ctx,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

static int cm_setname(fid_t fid, void *addr, size_t addrlen)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);

    return fi_setname(&ep->core->fid, addr, addrlen);
}

static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
    struct strictmr_ep *ep = strictmr_container(fid, struct strictmr_ep, ep.fid);

    return fi_getname(&ep->core->fid, addr, addrlen);
}

static int cm_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
    return fi_getpeer(EP_CORE(ep), addr, addrlen);
}

static struct fi_ops_cm ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = cm_setname,
    .getname = cm_getname,
    .getpeer = cm_getpeer,
};

/* The core's info for our endpoint: the domain's, with the caller's operation flags and
 * the caller's source address where it gave one in the core's format (a name of its own
 * for a shm endpoint, as a layered provider passes it down). */
static struct fi_info *core_ep_info(const struct strictmr_domain *dom, const struct fi_info *info)
{
    struct fi_info *core = fi_dupinfo(dom->core_info);
    void *addr;

    if (core && info) {
        core->tx_attr->op_flags = info->tx_attr->op_flags;
        core->rx_attr->op_flags = info->rx_attr->op_flags;
        if (info->src_addr && info->src_addrlen && info->addr_format == core->addr_format &&
            (addr = malloc(info->src_addrlen))) {
            memcpy(addr, info->src_addr, info->src_addrlen);
            free(core->src_addr);
            core->src_addr = addr;
            core->src_addrlen = info->src_addrlen;
        }
    }
    return core;
}

static void ep_init_fid(struct strictmr_ep *ep, void *context)
{
    ep->ep.fid.fclass = FI_CLASS_EP;
    ep->ep.fid.context = context;
    ep->ep.fid.ops = &ep_fid_ops;
    ep->ep.ops = &ep_ops;
    ep->ep.cm = &ep_cm_ops;
    ep->ep.msg = &strictmr_msg_ops;
    ep->ep.rma = &strictmr_rma_ops;
    ep->ep.tagged = &strictmr_tagged_ops;
    ep->ep.atomic = &strictmr_atomic_ops;
}

int strictmr_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
                     void *context)
{
    struct strictmr_domain *dom = strictmr_container(domain, struct strictmr_domain, domain);
    struct strictmr_ep *ep = calloc(1, sizeof(*ep));
    struct fi_info *core_info = core_ep_info(dom, info);
    int ret = -FI_ENOMEM;

    if (!ep || !core_info) {
        goto out;
    }
    ret = strictmr_nic_ep_check(info);
    if (ret) {
        goto out;
    }
    strictmr_engine_lock(dom);
    ret = fi_endpoint(dom->core, core_info, &ep->core, context);
    strictmr_engine_unlock(dom);
    if (ret) {
        goto out;
    }
    ep->domain = dom;
    pthread_mutex_lock(&dom->lock);
    ep->id = dom->next_ep_id++;
    pthread_mutex_unlock(&dom->lock);
    if (dom->engine) {
        ret = strictmr_engine_ep_open(ep, info);
        if (ret) {
            fi_close(&ep->core->fid);
            goto out;
        }
    }
    ep_init_fid(ep, context);
    atomic_fetch_add(&dom->refs, 1);
    *out = &ep->ep;
    ep = NULL;
out:
    fi_freeinfo(core_info);
    free(ep);
    return ret;
}
