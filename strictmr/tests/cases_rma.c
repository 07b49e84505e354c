/*
 * strictmr test cases (cases_impl.h): RMA and atomics that must work, data verified.
 */
#include <string.h>

#include "cases_impl.h"

/* A transmit completion may come before the target applied the operation. */
static int await_equal(struct env *e, const volatile void *a, const void *b, size_t len)
{
    for (int i = 0; memcmp((const void *)a, b, len) && i < 1000000; i++)
        fixture_progress(e->f);
    return memcmp((const void *)a, b, len) ? -FI_EIO : 0;
}

/* ---------------------------------------------------------------- positive */
int case_write_ok(struct env *e, struct outcome *out)
{
    memset(e->lbuf, 0xab, LEN);
    int ret = write_plain(e, e->key, 0, out);

    return ret ? ret : await_equal(e, e->tbuf, e->lbuf, LEN);
}

int case_read_ok(struct env *e, struct outcome *out)
{
    memset(e->tbuf, 0xcd, LEN);
    int ret = waited(e,
                     POST_RETRY(e->f, fi_read(e->f->a.ep, e->lbuf, LEN, e->ldesc, e->f->a.peer,
                                              e->base, e->key, CTX)),
                     out);

    return ret ? ret : (memcmp(e->tbuf, e->lbuf, LEN) ? -FI_EIO : 0);
}

int case_writemsg_ok(struct env *e, struct outcome *out)
{
    struct iovec iov[2] = {{.iov_base = e->lbuf, .iov_len = 16},
                           {.iov_base = e->lbuf + 32, .iov_len = 16}};
    void *desc[2] = {e->ldesc, e->ldesc};
    struct fi_rma_iov rma = {.addr = e->base + 128, .len = 32, .key = e->key};
    struct fi_msg_rma msg = {.msg_iov = iov,
                             .desc = desc,
                             .iov_count = 2,
                             .addr = e->f->a.peer,
                             .rma_iov = &rma,
                             .rma_iov_count = 1,
                             .context = CTX};

    int ret;

    memset(e->lbuf, 0x5a, 48);
    ret = waited(e, POST_RETRY(e->f, fi_writemsg(e->f->a.ep, &msg, FI_COMPLETION)), out);
    return ret ? ret : await_equal(e, e->tbuf + 128, e->lbuf, 32);
}

int case_atomic_ok(struct env *e, struct outcome *out)
{
    uint64_t *target = (uint64_t *)e->tbuf;
    uint64_t *operand = (uint64_t *)e->lbuf;
    int ret;

    *operand = 5;
    *target = 0;
    ret = waited(e,
                 POST_RETRY(e->f, fi_atomic(e->f->a.ep, operand, 1, e->ldesc, e->f->a.peer, e->base,
                                            e->key, FI_UINT64, FI_SUM, CTX)),
                 out);
    return ret ? ret : await_equal(e, target, &(uint64_t){5}, sizeof(uint64_t));
}

int case_fetch_ok(struct env *e, struct outcome *out)
{
    uint64_t *operand = (uint64_t *)e->lbuf, *result = operand + 1;

    *operand = 1;
    *(uint64_t *)e->tbuf = 41;
    int ret = waited(
        e,
        POST_RETRY(e->f, fi_fetch_atomic(e->f->a.ep, operand, 1, e->ldesc, result, e->ldesc,
                                         e->f->a.peer, e->base, e->key, FI_UINT64, FI_SUM, CTX)),
        out);

    return ret ? ret : (*result == 41 && *(uint64_t *)e->tbuf == 42 ? 0 : -FI_EIO);
}

int case_cswap_ok(struct env *e, struct outcome *out)
{
    int ret = compare_swap(e, e->ldesc, out);

    return ret ? ret : (*(uint64_t *)e->tbuf == 7 ? 0 : -FI_EIO);
}
