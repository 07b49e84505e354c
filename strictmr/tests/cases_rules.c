/*
 * strictmr test cases (cases_impl.h): one RMA or registration case per rule, remote (keys,
 * range, access, target), local (descs), at registration, and those of FI_MR_ENDPOINT and
 * FI_MR_RAW.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "cases_impl.h"

/* A second MR on the target's region, for cases that need one of their own. */
static int target_mr(struct env *e, uint64_t access, struct fid_mr **mr, uint64_t *key)
{
    uint64_t base;
    int ret = fi_mr_reg(e->f->b.domain, e->tbuf, REGION, access, 0, e->next_key++, 0, mr, NULL);

    return ret ? ret : remote_of(e->f, *mr, e->tbuf, key, &base);
}

/* ---------------------------------------------------------------- remote rules */
int case_key_unknown(struct env *e, struct outcome *out)
{
    uint8_t raw[16] = {0x42};
    uint64_t key = e->key + 1;

    if (e->f->mode & FI_MR_RAW) {
        int ret = fi_mr_map_raw(e->f->a.domain, e->base, raw, e->f->key_size, &key, 0);

        if (ret)
            return ret;
    }
    return write_plain(e, key, 0, out);
}

int case_key_closed(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_WRITE, &mr, &key);

    if (ret)
        return ret;
    fi_close(&mr->fid);
    return write_plain(e, key, 0, out);
}

int case_range(struct env *e, struct outcome *out)
{
    return write_plain(e, e->key, REGION - LEN / 2, out);
}

int case_remote_access(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_READ, &mr, &key);

    if (ret)
        return ret;
    if (e->f->mode & FI_MR_ENDPOINT) {
        fi_mr_bind(mr, &e->f->b.ep->fid, 0);
        fi_mr_enable(mr);
    }
    ret = write_plain(e, key, 0, out);
    fi_close(&mr->fid);
    return ret;
}

/* The address of an endpoint that existed on b and was closed again. */
int case_target_unknown(struct env *e, struct outcome *out)
{
    struct side gone = {.domain = e->f->b.domain, .cq = e->f->b.cq, .av = e->f->b.av};
    fi_addr_t addr;
    int ret = side_endpoint(e->f, &gone);

    if (!ret)
        ret = side_insert(&e->f->a, &gone, &addr);
    if (gone.ep)
        fi_close(&gone.ep->fid);
    return ret ? ret : write_to(e, e->lbuf, e->ldesc, addr, e->base, e->key, out);
}

/* ---------------------------------------------------------------- local rules */
int case_desc_missing(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf, NULL, e->f->a.peer, e->base, e->key, out);
}

int case_desc_invalid(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf, (void *)0x1234, e->f->a.peer, e->base, e->key, out);
}

int case_desc_range(struct env *e, struct outcome *out)
{
    return write_to(e, e->lbuf + REGION, e->ldesc, e->f->a.peer, e->base, e->key, out);
}

int case_fetch_result_desc(struct env *e, struct outcome *out)
{
    uint64_t *operand = (uint64_t *)e->lbuf;

    return waited(
        e,
        POST_RETRY(e->f, fi_fetch_atomic(e->f->a.ep, operand, 1, e->ldesc, operand + 1, NULL,
                                         e->f->a.peer, e->base, e->key, FI_UINT64, FI_SUM, CTX)),
        out);
}

int case_compare_desc(struct env *e, struct outcome *out)
{
    return compare_swap(e, NULL, out);
}

/* ---------------------------------------------------------------- registration rules */
int case_allocated(struct env *e, struct outcome *out)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *hole = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct fid_mr *mr = NULL;

    if (hole == MAP_FAILED)
        return -FI_ENOMEM;
    munmap(hole, 2 * page);
    out->ret = fi_mr_reg(e->f->a.domain, hole, 2 * page, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

int case_key_width(struct env *e, struct outcome *out)
{
    struct fid_mr *mr = NULL;
    uint64_t key;

    if (e->f->key_size >= 8)
        return 1; /* every 64-bit key fits */
    key = 1ULL << (8 * e->f->key_size);
    out->ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, key, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

int case_key_in_use(struct env *e, struct outcome *out)
{
    struct fid_mr *mr = NULL;

    out->ret = fi_mr_reg(e->f->b.domain, e->tbuf, LEN, FI_REMOTE_WRITE, 0, e->key, 0, &mr, NULL);
    if (!out->ret)
        fi_close(&mr->fid);
    return 0;
}

int case_prov_key_width(struct env *e, struct outcome *out)
{
    size_t bits = 8 * e->f->key_size;
    uint64_t top = e->key >> (bits - 8);

    return top && (bits == 64 || top < 256) ? 0 : -FI_EINVAL;
}

/* ---------------------------------------------------------------- FI_MR_ENDPOINT */
static int endpoint_case(struct env *e, bool bind, struct outcome *out)
{
    struct fid_mr *mr;
    uint64_t key;
    int ret = target_mr(e, FI_REMOTE_WRITE, &mr, &key);

    if (ret)
        return ret;
    if (bind)
        ret = fi_mr_bind(mr, &e->f->b.ep->fid, 0);
    if (!ret)
        ret = write_plain(e, key, 0, out);
    fi_close(&mr->fid);
    return ret;
}

int case_mr_unbound(struct env *e, struct outcome *out)
{
    return endpoint_case(e, false, out);
}

int case_mr_disabled(struct env *e, struct outcome *out)
{
    return endpoint_case(e, true, out);
}

int case_mr_bind_order(struct env *e, struct outcome *out)
{
    struct fid_mr *mr;
    int ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);

    if (ret)
        return ret;
    out->ret = fi_mr_enable(mr);
    fi_close(&mr->fid);
    return 0;
}

/* A local MR bound to a second endpoint of a's domain, used on a's first. */
int case_local_mr_unbound(struct env *e, struct outcome *out)
{
    struct side other = {.domain = e->f->a.domain, .cq = e->f->a.cq, .av = e->f->a.av};
    struct fid_mr *mr = NULL;
    int ret = side_endpoint(e->f, &other);

    if (!ret)
        ret = fi_mr_reg(e->f->a.domain, e->lbuf, LEN, FI_WRITE, 0, e->next_key++, 0, &mr, NULL);
    if (!ret)
        ret = fi_mr_bind(mr, &other.ep->fid, 0);
    if (!ret)
        ret = fi_mr_enable(mr);
    if (!ret)
        ret = write_to(e, e->lbuf, fi_mr_desc(mr), e->f->a.peer, e->base, e->key, out);
    if (mr)
        fi_close(&mr->fid);
    if (other.ep)
        fi_close(&other.ep->fid);
    return ret;
}

/* ---------------------------------------------------------------- FI_MR_RAW */
int case_raw_unmapped(struct env *e, struct outcome *out)
{
    return write_plain(e, 0xdead, 0, out);
}

int case_raw_attr_small(struct env *e, struct outcome *out)
{
    uint8_t raw[1];
    size_t size = sizeof(raw);
    uint64_t base;
    int ret = fi_mr_raw_attr(e->tmr, &base, raw, &size, 0);

    return ret == -FI_ETOOSMALL && size == e->f->key_size && fi_mr_key(e->tmr) == FI_KEY_NOTAVAIL
               ? 0
               : -FI_EINVAL;
}
