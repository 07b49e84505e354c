/*
 * strictmr_caps_test's registration scenarios (caps_test.h): the cost each fi_mr_reg, regv and
 * regattr is charged (reg_cost) and the live registrations a domain may hold (reg_limit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps_test.h"

#define COST_PAGES 17

/* ---------------------------------------------------------------- registration */
static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

enum reg_call { REG, REGV, REGATTR };

static int reg_one(struct nic *n, enum reg_call how, void *buf, size_t len, struct fid_mr **mr)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct fi_mr_attr attr = {.mr_iov = &iov,
                              .iov_count = 1,
                              .access = FI_REMOTE_WRITE,
                              .requested_key = n->next_key++,
                              .iface = FI_HMEM_SYSTEM};

    switch (how) {
    case REGV:
        return fi_mr_regv(n->f.b.domain, &iov, 1, FI_REMOTE_WRITE, 0, attr.requested_key, 0, mr,
                          NULL);
    case REGATTR:
        return fi_mr_regattr(n->f.b.domain, &attr, 0, mr);
    default:
        return fi_mr_reg(n->f.b.domain, buf, len, FI_REMOTE_WRITE, 0, attr.requested_key, 0, mr,
                         NULL);
    }
}

void scenario_reg_cost(struct nic *n, unsigned us, unsigned page_ns)
{
    static const struct {
        const char *name;
        enum reg_call how;
        size_t offset, len;
    } regs[] = {
        {"fi_mr_reg, 1 page", REG, 0, PAGE},
        {"fi_mr_reg, 16 pages", REG, 0, 16 * PAGE},
        {"fi_mr_regv, 100 bytes over a page boundary", REGV, PAGE - 50, 100},
        {"fi_mr_regattr, 3 pages", REGATTR, PAGE, 3 * PAGE},
    };
    uint8_t *buf = aligned_alloc(PAGE, COST_PAGES * PAGE);

    if (!check(buf != NULL, "reg_cost: buffer"))
        return;
    memset(buf, 1, COST_PAGES * PAGE);
    for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
        uintptr_t start = (uintptr_t)buf + regs[i].offset;
        uint64_t pages = (start + regs[i].len - 1) / PAGE - start / PAGE + 1;
        long long charge = (long long)us * 1000 + (long long)pages * page_ns;
        uint64_t charged = event(n, STRICTMR_EV_REG_CHARGED);
        uint64_t charged_us = event(n, STRICTMR_EV_REG_CHARGED_US);
        uint64_t want_us = charge ? (uint64_t)(charge + 999) / 1000 : 0;
        struct fid_mr *mr = NULL;
        long long t0 = now_ns(), took;
        int ret = reg_one(n, regs[i].how, (void *)start, regs[i].len, &mr);

        took = now_ns() - t0;
        charged = event(n, STRICTMR_EV_REG_CHARGED) - charged;
        charged_us = event(n, STRICTMR_EV_REG_CHARGED_US) - charged_us;
        n->provoked[STRICTMR_EV_REG_CHARGED] += charge ? 1 : 0;
        n->provoked[STRICTMR_EV_REG_CHARGED_US] += want_us;
        /* the charge is a lower bound on the call's time, never an upper one */
        check(!ret && took >= charge && charged == (charge ? 1 : 0) && charged_us == want_us,
              "reg_cost: %s -> %d, took %lld ns >= %lld ns charged, reg_charged+%llu "
              "reg_charged_us+%llu (want %llu)",
              regs[i].name, ret, took, charge, (unsigned long long)charged,
              (unsigned long long)charged_us, (unsigned long long)want_us);
        if (mr)
            fi_close(&mr->fid);
    }
    free(buf);
}

void scenario_reg_limit(struct nic *n, size_t limit)
{
    struct fid_mr **mrs = calloc(limit + 1, sizeof(*mrs)), *extra = NULL, *on_a = NULL;
    uint8_t *buf = aligned_alloc(PAGE, PAGE);
    uint64_t refused_before;
    size_t ok = 0;
    int ret;

    if (!check(mrs && buf, "reg_limit: buffers"))
        goto out;
    memset(buf, 1, PAGE);
    for (size_t i = 0; i < limit; i++)
        ok += !reg_one(n, REG, buf, PAGE, &mrs[i]);
    check(ok == limit, "reg_limit: %zu of %zu registrations up to the limit", ok, limit);
    refused_before = event(n, STRICTMR_EV_REG_REFUSED);
    ret = reg_one(n, REG, buf, PAGE, &extra);
    n->provoked[STRICTMR_EV_REG_REFUSED]++;
    check(ret == -FI_ENOMEM && event(n, STRICTMR_EV_REG_REFUSED) - refused_before == 1,
          "reg_limit: registration %zu -> %d (want -FI_ENOMEM), reg_refused+%llu", limit + 1, ret,
          (unsigned long long)(event(n, STRICTMR_EV_REG_REFUSED) - refused_before));
    if (!ret)
        fi_close(&extra->fid);
    fi_close(&mrs[0]->fid);
    mrs[0] = NULL;
    ret = reg_one(n, REG, buf, PAGE, &mrs[0]);
    check(!ret, "reg_limit: after closing one, a registration -> %d", ret);
    ret = fi_mr_reg(n->f.a.domain, buf, PAGE, FI_REMOTE_WRITE, 0, n->next_key++, 0, &on_a, NULL);
    check(!ret, "reg_limit: the other domain has its own room -> %d", ret);
    if (on_a)
        fi_close(&on_a->fid);
    for (size_t i = 0; i < limit; i++) {
        if (mrs[i])
            fi_close(&mrs[i]->fid);
    }
out:
    free(mrs);
    free(buf);
}
