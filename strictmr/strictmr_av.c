/*
 * ofi_strictmr address vector: the core's, plus a cache from fi_addr to the
 * target's MR table (strictmr_registry.c), dropped when the address is removed.
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

#define PEER_MAX (1u << 20) /* fi_addr values we cache; larger ones are never resolved */
#define PEER_NAME_MAX 256

static struct fi_ops av_fid_ops;

struct strictmr_av *strictmr_av_of(struct fid *fid)
{
    return fid && fid->ops == &av_fid_ops ? strictmr_container(fid, struct strictmr_av, av.fid)
                                          : NULL;
}

static void peer_drop(struct strictmr_av *av, fi_addr_t addr)
{
    if (addr < av->peer_count && av->peers[addr]) {
        strictmr_peer_release(av->peers[addr]);
        free(av->peers[addr]);
        av->peers[addr] = NULL;
    }
}

static int peers_grow(struct strictmr_av *av, fi_addr_t addr)
{
    size_t count = av->peer_count ? av->peer_count : 64;
    struct strictmr_peer **grown;

    while (count <= addr) {
        count *= 2;
    }
    grown = realloc(av->peers, count * sizeof(*grown));
    if (!grown) {
        return -FI_ENOMEM;
    }
    memset(grown + av->peer_count, 0, (count - av->peer_count) * sizeof(*grown));
    av->peers = grown;
    av->peer_count = count;
    return 0;
}

static struct strictmr_peer *peer_resolve(struct strictmr_av *av, fi_addr_t addr)
{
    uint8_t name[PEER_NAME_MAX];
    size_t len = sizeof(name);
    struct strictmr_peer *peer;

    if (fi_av_lookup(av->core, addr, name, &len) || len > sizeof(name)) {
        return NULL;
    }
    peer = calloc(1, sizeof(*peer));
    if (peer && strictmr_peer_resolve(peer, name, len)) {
        free(peer);
        peer = NULL;
    }
    return peer;
}

struct strictmr_peer *strictmr_av_peer(struct strictmr_av *av, fi_addr_t addr)
{
    struct strictmr_peer *peer = NULL;

    if (!av || addr >= PEER_MAX) {
        return NULL;
    }
    pthread_mutex_lock(&av->lock);
    if (addr < av->peer_count || !peers_grow(av, addr)) {
        if (!av->peers[addr]) {
            av->peers[addr] = peer_resolve(av, addr);
        }
        peer = av->peers[addr];
    }
    pthread_mutex_unlock(&av->lock);
    return peer;
}

static int av_close(struct fid *fid)
{
    struct strictmr_av *av = strictmr_container(fid, struct strictmr_av, av.fid);
    int ret;

    if (atomic_load(&av->refs)) {
        return -FI_EBUSY;
    }
    ret = fi_close(&av->core->fid);
    if (ret) {
        return ret;
    }
    for (size_t i = 0; i < av->peer_count; i++) {
        peer_drop(av, i);
    }
    free(av->peers);
    pthread_mutex_destroy(&av->lock);
    atomic_fetch_sub(&av->domain->refs, 1);
    free(av);
    return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct strictmr_av *av = strictmr_container(fid, struct strictmr_av, av.fid);

    return av->core->fid.ops->bind(&av->core->fid, bfid, flags);
}

static int av_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_av *av = strictmr_container(fid, struct strictmr_av, av.fid);

    return fi_control(&av->core->fid, command, arg);
}

static int av_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    struct strictmr_av *av = strictmr_container(fid, struct strictmr_av, av.fid);

    return fi_open_ops(&av->core->fid, name, flags, ops, context);
}

static struct fi_ops av_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = av_bind,
    .control = av_control,
    .ops_open = av_ops_open,
};

#define AV_OF(av_fid) strictmr_container(av_fid, struct strictmr_av, av)
#define AV_CORE(av_fid) (AV_OF(av_fid)->core)

/*
 * Inserts and removals take the engine's lock (strictmr_engine_domain.c) when it runs: its
 * progress thread reads the core's CQs, and the core's AV is part of what they touch.
 */
static int av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr,
                     uint64_t flags, void *context)
{
    int ret;

    strictmr_engine_lock(AV_OF(av)->domain);
    ret = fi_av_insert(AV_CORE(av), addr, count, fi_addr, flags, context);
    strictmr_engine_unlock(AV_OF(av)->domain);
    return ret;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
                        fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    int ret;

    strictmr_engine_lock(AV_OF(av)->domain);
    ret = fi_av_insertsvc(AV_CORE(av), node, service, fi_addr, flags, context);
    strictmr_engine_unlock(AV_OF(av)->domain);
    return ret;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
                        size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    int ret;

    strictmr_engine_lock(AV_OF(av)->domain);
    ret = fi_av_insertsym(AV_CORE(av), node, nodecnt, service, svccnt, fi_addr, flags, context);
    strictmr_engine_unlock(AV_OF(av)->domain);
    return ret;
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
    struct strictmr_av *av = strictmr_container(av_fid, struct strictmr_av, av);
    int ret;

    pthread_mutex_lock(&av->lock);
    for (size_t i = 0; i < count; i++) {
        peer_drop(av, fi_addr[i]);
    }
    pthread_mutex_unlock(&av->lock);
    strictmr_engine_lock(av->domain);
    ret = fi_av_remove(av->core, fi_addr, count, flags);
    strictmr_engine_unlock(av->domain);
    return ret;
}

static int av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
    return fi_av_lookup(AV_CORE(av), fi_addr, addr, addrlen);
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
    return fi_av_straddr(AV_CORE(av), addr, buf, len);
}

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
};

int strictmr_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **out,
                     void *context)
{
    struct strictmr_domain *dom = strictmr_container(domain, struct strictmr_domain, domain);
    struct strictmr_av *av = calloc(1, sizeof(*av));
    int ret;

    if (attr->type == FI_AV_MAP) {
        FI_WARN(&strictmr_prov, FI_LOG_AV, "FI_AV_MAP is not served: use FI_AV_TABLE\n");
        free(av);
        return -FI_ENOSYS;
    }
    if (!av) {
        return -FI_ENOMEM;
    }
    ret = fi_av_open(dom->core, attr, &av->core, context);
    if (ret) {
        free(av);
        return ret;
    }
    pthread_mutex_init(&av->lock, NULL);
    av->domain = dom;
    av->av.fid.fclass = FI_CLASS_AV;
    av->av.fid.context = context;
    av->av.fid.ops = &av_fid_ops;
    av->av.ops = &av_ops;
    atomic_fetch_add(&dom->refs, 1);
    *out = &av->av;
    return 0;
}
