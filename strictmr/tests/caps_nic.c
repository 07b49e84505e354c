/*
 * strictmr_caps_test's NIC of a run (caps_test.h): fi_getinfo on the provider and on its core,
 * the fixture with its target and local regions opened and closed, and the operations the
 * scenarios post and wait for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps_test.h"

/* ---------------------------------------------------------------- getinfo */
/* What fi_getinfo answers for hints on our provider; op_flags go to tx_attr. */
int getinfo_ret(const char *prov, uint64_t caps, uint64_t mr_mode, uint64_t op_flags,
                struct fi_info **out)
{
    struct fi_info *hints = fixture_hints(prov, caps, mr_mode), *info = NULL;
    int ret;

    if (!hints)
        return -FI_ENOMEM;
    hints->tx_attr->op_flags = op_flags;
    ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (out && !ret)
        *out = info;
    else
        fi_freeinfo(info);
    return ret;
}

/* "shm;ofi_strictmr" -> "shm" */
char *core_name(const char *prov)
{
    char *name = strdup(prov), *semi = strrchr(name, ';');

    if (semi)
        *semi = '\0';
    return name;
}

static int core_info(struct nic *n, const char *prov, uint64_t caps)
{
    char *name = core_name(prov);
    int ret = getinfo_ret(name, caps, CORE_MR_MODES, 0, &n->core);

    free(name);
    return ret;
}

/* ---------------------------------------------------------------- set-up */
int nic_open(struct nic *n, const char *prov, uint64_t caps, bool buffers)
{
    int ret;

    memset(n, 0, sizeof(*n));
    n->next_key = 1;
    ret = fixture_open_caps(&n->f, prov, caps);
    if (ret)
        return ret;
    ret = core_info(n, prov, caps | FI_RMA);
    if (ret || !buffers)
        return ret;
    n->tbuf = aligned_alloc(PAGE, REGION);
    n->lbuf = aligned_alloc(PAGE, REGION);
    if (!n->tbuf || !n->lbuf)
        return -FI_ENOMEM;
    memset(n->tbuf, 0, REGION);
    memset(n->lbuf, 0, REGION);
    ret = mr_open(&n->f, &n->f.b, n->tbuf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE,
                  n->next_key++, &n->tmr);
    if (!ret)
        ret = mr_open(&n->f, &n->f.a, n->lbuf, REGION, FI_READ | FI_WRITE, n->next_key++,
                      &n->lmr);
    if (!ret)
        ret = remote_of(&n->f, n->tmr, n->tbuf, &n->key, &n->base);
    if (!ret)
        n->ldesc = fi_mr_desc(n->lmr);
    return ret;
}

void nic_close(struct nic *n)
{
    if (n->lmr)
        fi_close(&n->lmr->fid);
    if (n->tmr)
        fi_close(&n->tmr->fid);
    fixture_close(&n->f);
    fi_freeinfo(n->core);
    free(n->tbuf);
    free(n->lbuf);
}

/* ---------------------------------------------------------------- operations */
/* A posted operation's completion: 0 fine, else the error completion's or the wait's error. */
int completed(struct nic *n, int ret)
{
    struct outcome out = {0};

    if (ret)
        return ret;
    ret = fixture_wait(&n->f, &out);
    return ret ? ret : out.cq_err;
}

void fill(uint8_t *buf, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7);
}

int write_msg(struct nic *n, size_t len, uint64_t flags)
{
    struct iovec iov = {.iov_base = n->lbuf, .iov_len = len};
    struct fi_rma_iov rma = {.addr = n->base, .len = len, .key = n->key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &n->ldesc,
                             .iov_count = 1,
                             .addr = n->f.a.peer,
                             .rma_iov = &rma,
                             .rma_iov_count = 1,
                             .context = n};

    return POST_RETRY(&n->f, fi_writemsg(n->f.a.ep, &msg, flags | FI_COMPLETION));
}

int rma_write(struct nic *n, size_t len)
{
    return POST_RETRY(&n->f, fi_write(n->f.a.ep, n->lbuf, len, n->ldesc, n->f.a.peer, n->base,
                                      n->key, n));
}

int rma_read(struct nic *n, size_t len)
{
    return POST_RETRY(&n->f, fi_read(n->f.a.ep, n->lbuf, len, n->ldesc, n->f.a.peer, n->base,
                                     n->key, n));
}

/* Target memory equals want, driving both sides: a transmit completion (shm, tcp;ofi_rxm)
 * does not mean the target has applied the data yet. */
bool await_equal(struct nic *n, const volatile void *at, const void *want, size_t len)
{
    struct timespec start, now;

    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        if (!memcmp((const void *)at, want, len))
            return true;
        fixture_progress(&n->f);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 5);
    return false;
}

bool await_u64(struct nic *n, const volatile void *at, uint64_t want)
{
    return await_equal(n, at, &want, sizeof(want));
}

/* The write of len bytes reached the target intact. */
bool write_lands(struct nic *n, size_t len, uint64_t flags, uint8_t seed)
{
    int ret;

    fill(n->lbuf, len, seed);
    memset(n->tbuf, 0, REGION);
    ret = completed(n, flags ? write_msg(n, len, flags) : rma_write(n, len));
    return !ret && await_equal(n, n->tbuf, n->lbuf, len);
}

int fetch_add(struct nic *n, enum fi_datatype dt, size_t count, uint64_t *operand,
              uint64_t *result)
{
    return POST_RETRY(&n->f, fi_fetch_atomic(n->f.a.ep, operand, count, n->ldesc, result,
                                             n->ldesc, n->f.a.peer, n->base, n->key, dt, FI_SUM,
                                             n));
}
