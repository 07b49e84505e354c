/*
 * The strictmr test fixture (fixture.h).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fixture.h"

#define ALL_MR_MODES                                                                               \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_RAW)
#define WAIT_MS 5000
#define NAME_MAX_LEN 256

static int fail(const char *call, int ret)
{
    fprintf(stderr, "%s: %s\n", call, fi_strerror(-ret));
    return ret;
}

int side_endpoint(struct fixture *f, struct side *s)
{
    int ret;

    if ((ret = fi_endpoint(s->domain, f->info, &s->ep, NULL)))
        return fail("fi_endpoint", ret);
    if ((ret = fi_ep_bind(s->ep, &s->av->fid, 0)))
        return fail("fi_ep_bind(av)", ret);
    if ((ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | (s->rx_cq ? 0 : FI_RECV))))
        return fail("fi_ep_bind(cq)", ret);
    if (s->rx_cq && (ret = fi_ep_bind(s->ep, &s->rx_cq->fid, FI_RECV)))
        return fail("fi_ep_bind(rx_cq)", ret);
    if ((ret = fi_enable(s->ep)))
        return fail("fi_enable", ret);
    return 0;
}

static int side_open(struct fixture *f, struct side *s)
{
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    int ret;

    if ((ret = fi_domain(f->fabric, f->info, &s->domain, NULL)))
        return fail("fi_domain", ret);
    if ((ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)))
        return fail("fi_cq_open", ret);
    if ((ret = fi_av_open(s->domain, &av_attr, &s->av, NULL)))
        return fail("fi_av_open", ret);
    return side_endpoint(f, s);
}

int side_insert(struct side *to, struct side *from, fi_addr_t *addr)
{
    char name[NAME_MAX_LEN];
    size_t len = sizeof(name);
    int ret = fi_getname(&from->ep->fid, name, &len);

    if (ret)
        return fail("fi_getname", ret);
    ret = fi_av_insert(to->av, name, 1, addr, 0, NULL);
    return ret == 1 ? 0 : fail("fi_av_insert", ret < 0 ? ret : -FI_EOTHER);
}

struct fi_info *fixture_hints(const char *prov_name, uint64_t caps, uint64_t mr_mode)
{
    struct fi_info *hints = fi_allocinfo();

    if (!hints)
        return NULL;
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = mr_mode;
    hints->domain_attr->av_type = FI_AV_TABLE;
    hints->fabric_attr->prov_name = strdup(prov_name);
    return hints;
}

int fixture_open(struct fixture *f, const char *prov_name)
{
    return fixture_open_caps(f, prov_name, FI_MSG | FI_RMA | FI_ATOMIC);
}

int fixture_open_caps(struct fixture *f, const char *prov_name, uint64_t caps)
{
    struct fi_info *hints = fixture_hints(prov_name, caps, ALL_MR_MODES);
    int ret;

    memset(f, 0, sizeof(*f));
    if (!hints)
        return -FI_ENOMEM;
    ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info);
    fi_freeinfo(hints);
    if (ret)
        return ret;
    f->mode = f->info->domain_attr->mr_mode;
    f->key_size = f->info->domain_attr->mr_key_size;
    if ((ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)))
        return fail("fi_fabric", ret);
    ret = fi_open_ops(&f->fabric->fid, STRICTMR_STATS_OPS_NAME, 0, (void **)&f->stats, NULL);
    if (ret)
        return fail("fi_open_ops(stats)", ret);
    if ((ret = side_open(f, &f->a)) || (ret = side_open(f, &f->b)))
        return ret;
    if ((ret = side_insert(&f->a, &f->b, &f->a.peer)) ||
        (ret = side_insert(&f->b, &f->a, &f->b.peer)))
        return ret;
    return 0;
}

static void close_fid(struct fid *fid)
{
    int ret;

    if (fid && (ret = fi_close(fid)))
        fprintf(stderr, "fi_close(class %zu): %s\n", fid->fclass, fi_strerror(-ret));
}

static void side_close(struct side *s)
{
    close_fid(s->ep ? &s->ep->fid : NULL);
    close_fid(s->av ? &s->av->fid : NULL);
    close_fid(s->cq ? &s->cq->fid : NULL);
    close_fid(s->domain ? &s->domain->fid : NULL);
}

void fixture_close(struct fixture *f)
{
    side_close(&f->a);
    side_close(&f->b);
    close_fid(f->fabric ? &f->fabric->fid : NULL);
    fi_freeinfo(f->info);
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fixture_progress(struct fixture *f)
{
    struct fi_cq_data_entry discard;

    (void)fi_cq_read(f->b.cq, &discard, 1);
    (void)fi_cq_read(f->a.cq, &discard, 0);
}

/* One completion of s's, if there is one: 1 taken, 0 none yet, < 0 the CQ failed. */
static int take_completion(struct side *s, struct outcome *out)
{
    struct fi_cq_data_entry entry;
    struct fi_cq_err_entry err = {0};
    ssize_t ret = fi_cq_read(s->cq, &entry, 1);

    if (ret == 1) {
        out->context = entry.op_context;
        out->flags = entry.flags;
        out->len = entry.len;
    } else if (ret == -FI_EAVAIL) {
        ret = fi_cq_readerr(s->cq, &err, 0);
        out->cq_err = ret == 1 ? err.err : -FI_EOTHER;
        out->context = err.op_context;
        out->flags = err.flags;
        out->len = err.len;
    } else {
        return ret == -FI_EAGAIN ? 0 : fail("fi_cq_read", (int)ret);
    }
    out->waited = true;
    return 1;
}

/* Waits on s, reading up to other_take completions of the other side's per round to drive it. */
static int wait_side(struct fixture *f, struct side *s, size_t other_take, struct outcome *out)
{
    struct side *other = s == &f->a ? &f->b : &f->a;
    struct fi_cq_data_entry discard;
    long deadline = now_ms() + WAIT_MS;
    int ret;

    while (now_ms() < deadline) {
        ret = take_completion(s, out);
        if (ret)
            return ret < 0 ? ret : 0;
        (void)fi_cq_read(other->cq, &discard, other_take);
    }
    return -FI_ETIMEDOUT;
}

int fixture_wait(struct fixture *f, struct outcome *out)
{
    return wait_side(f, &f->a, 1, out);
}

int fixture_wait_on(struct fixture *f, struct side *s, struct outcome *out)
{
    return wait_side(f, s, 0, out);
}

int mr_open(struct fixture *f, struct side *s, void *buf, size_t len, uint64_t access,
            uint64_t requested_key, struct fid_mr **mr)
{
    int ret = fi_mr_reg(s->domain, buf, len, access, 0, requested_key, 0, mr, NULL);

    if (ret || !(f->mode & FI_MR_ENDPOINT))
        return ret;
    if ((ret = fi_mr_bind(*mr, &s->ep->fid, 0)) || (ret = fi_mr_enable(*mr)))
        fi_close(&(*mr)->fid);
    return ret;
}

int remote_of(struct fixture *f, struct fid_mr *mr, void *buf, uint64_t *key, uint64_t *base)
{
    uint8_t raw[64];
    size_t size = sizeof(raw);
    uint64_t raw_base;
    int ret;

    *base = f->mode & FI_MR_VIRT_ADDR ? (uintptr_t)buf : 0;
    if (!(f->mode & FI_MR_RAW)) {
        *key = fi_mr_key(mr);
        return 0;
    }
    ret = fi_mr_raw_attr(mr, &raw_base, raw, &size, 0);
    if (!ret)
        ret = fi_mr_map_raw(f->a.domain, raw_base, raw, size, key, 0);
    return ret;
}
