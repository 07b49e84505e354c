/*
 * strictmr_caps_test's atomics scenarios (caps_test.h): what atomicvalid, fetch and compare
 * valid and fi_query_atomic answer under ATOMICS=all, nic and none, the atomics that work and
 * those refused.
 */
#include <stdio.h>

#include "caps_test.h"

/* ---------------------------------------------------------------- atomics */
void expect_valid(struct nic *n, const char *name, valid_fn fn, enum fi_datatype dt, enum fi_op op,
                  bool offered, size_t max_count)
{
    size_t count = 0;
    int ret = fn(n->f.a.ep, dt, op, &count);

    if (offered)
        check(!ret && count >= 1 && count <= max_count, "atomics: %s(dt %d, op %d) -> %d count %zu",
              name, dt, op, ret, count);
    else
        check(ret == -FI_EOPNOTSUPP, "atomics: %s(dt %d, op %d) -> %d, want -FI_EOPNOTSUPP", name,
              dt, op, ret);
}

static void expect_query(struct nic *n, enum fi_datatype dt, enum fi_op op, uint64_t flags,
                         bool offered, size_t max_count)
{
    struct fi_atomic_attr attr = {0};
    int ret = fi_query_atomic(n->f.a.domain, dt, op, &attr, flags);

    check(offered ? !ret && attr.count >= 1 && attr.count <= max_count : ret == -FI_EOPNOTSUPP,
          "atomics: fi_query_atomic(dt %d, op %d, flags 0x%llx) -> %d count %zu", dt, op,
          (unsigned long long)flags, ret, attr.count);
}

bool fetch_add_works(struct nic *n)
{
    uint64_t *operand = (uint64_t *)n->lbuf, *result = operand + 1;
    int ret;

    *(uint64_t *)n->tbuf = 40;
    *operand = 2;
    *result = 0;
    ret = completed(n, fetch_add(n, FI_UINT64, 1, operand, result));
    return !ret && *result == 40 && await_u64(n, n->tbuf, 42);
}

static bool cswap_works(struct nic *n)
{
    uint64_t *swap = (uint64_t *)n->lbuf, *compare = swap + 1, *result = swap + 2;
    int ret;

    *(uint64_t *)n->tbuf = 7;
    *swap = 9;
    *compare = 7;
    *result = 0;
    ret = completed(n, POST_RETRY(&n->f, fi_compare_atomic(n->f.a.ep, swap, 1, n->ldesc, compare,
                                                           n->ldesc, result, n->ldesc,
                                                           n->f.a.peer, n->base, n->key, FI_UINT64,
                                                           FI_CSWAP, n)));
    return !ret && *result == 7 && await_u64(n, n->tbuf, 9);
}

void atomics_nic(struct nic *n)
{
    uint64_t *buf = (uint64_t *)n->lbuf, before;

    expect_valid(n, "fi_atomicvalid", fi_atomicvalid, FI_UINT64, FI_SUM, false, 0);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_UINT64, FI_SUM, true, 1);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_INT64, FI_SUM, true, 1);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_UINT32, FI_SUM, false, 0);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_UINT64, FI_MIN, false, 0);
    expect_valid(n, "fi_compare_atomicvalid", fi_compare_atomicvalid, FI_UINT64, FI_CSWAP, true,
                 1);
    expect_valid(n, "fi_compare_atomicvalid", fi_compare_atomicvalid, FI_UINT64, FI_MSWAP, false,
                 0);
    expect_query(n, FI_UINT64, FI_SUM, FI_FETCH_ATOMIC, true, 1);
    expect_query(n, FI_UINT64, FI_CSWAP, FI_COMPARE_ATOMIC, true, 1);
    expect_query(n, FI_UINT64, FI_SUM, 0, false, 0);
    check(fetch_add_works(n), "atomics: a 64-bit fetch-add works");
    check(cswap_works(n), "atomics: a 64-bit compare-swap works");
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "atomics: a plain FI_SUM", before,
            fi_atomic(n->f.a.ep, buf, 1, n->ldesc, n->f.a.peer, n->base, n->key, FI_UINT64, FI_SUM,
                      n),
            -FI_EOPNOTSUPP);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "atomics: a 32-bit fetch-add", before, fetch_add(n, FI_UINT32, 1, buf, buf + 1),
            -FI_EOPNOTSUPP);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "atomics: a fetch-add of two words", before, fetch_add(n, FI_UINT64, 2, buf, buf + 2),
            -FI_EMSGSIZE);
}

void atomics_all(struct nic *n)
{
    uint64_t *buf = (uint64_t *)n->lbuf;
    int ret;

    check(n->f.info->caps & FI_ATOMIC, "atomics: info caps have FI_ATOMIC");
    expect_valid(n, "fi_atomicvalid", fi_atomicvalid, FI_UINT64, FI_SUM, true, ~(size_t)0);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_INT32, FI_MIN, true,
                 ~(size_t)0);
    expect_valid(n, "fi_compare_atomicvalid", fi_compare_atomicvalid, FI_UINT64, FI_CSWAP, true,
                 ~(size_t)0);
    expect_query(n, FI_UINT64, FI_SUM, 0, true, ~(size_t)0);
    *(uint64_t *)n->tbuf = 1;
    buf[0] = 2;
    ret = completed(n, POST_RETRY(&n->f, fi_atomic(n->f.a.ep, buf, 1, n->ldesc, n->f.a.peer,
                                                   n->base, n->key, FI_UINT64, FI_SUM, n)));
    check(!ret && await_u64(n, n->tbuf, 3), "atomics: a plain FI_SUM -> %d", ret);
    check(fetch_add_works(n), "atomics: a 64-bit fetch-add works");
}

void atomics_none(struct nic *n, const char *prov)
{
    uint64_t *buf = (uint64_t *)n->lbuf, before;
    int ret = getinfo_ret(prov, FI_RMA | FI_ATOMIC, ~0ULL, 0, NULL);

    check(!(n->f.info->caps & FI_ATOMIC), "atomics: info caps 0x%llx lack FI_ATOMIC",
          (unsigned long long)n->f.info->caps);
    check(ret == -FI_ENODATA, "atomics: hints with FI_ATOMIC -> %d", ret);
    expect_valid(n, "fi_atomicvalid", fi_atomicvalid, FI_UINT64, FI_SUM, false, 0);
    expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_UINT64, FI_SUM, false, 0);
    expect_valid(n, "fi_compare_atomicvalid", fi_compare_atomicvalid, FI_UINT64, FI_CSWAP, false,
                 0);
    before = event(n, STRICTMR_EV_OP_REFUSED);
    refused(n, "atomics: a fetch-add", before, fetch_add(n, FI_UINT64, 1, buf, buf + 1),
            -FI_EOPNOTSUPP);
    check(write_lands(n, 256, 0, 7), "atomics: RMA still works");
}
