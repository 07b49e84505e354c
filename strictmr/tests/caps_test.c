/*
 * strictmr_caps_test PROVIDER SCENARIO [ARGS]: the NIC behaviours of ofi_strictmr
 * (FI_OFI_STRICTMR_DELIVERY_COMPLETE, _INJECT_SIZE, _ATOMICS, _MAX_RMA_SIZE,
 * _WRITE_ONLY, _REG_COST_*, _REG_LIMIT, _PROFILE), one scenario per run; the
 * caller (run_tests.py) sets the variables and names the same settings here.
 * Each check prints PASS or FAIL; every refusal the test provokes must move the
 * provider's counter by exactly one. The last line states what the run
 * provoked ("PROVOKED op_refused=N ...") for the caller to compare with the
 * report. Exit: 0 all passed, 1 a check failed, 2 usage.
 *
 * Scenarios:
 *   dc off|on                 completion levels (infos, hints, posts, FI_SETOPSFLAG)
 *   inject N                  inject size N
 *   max_rma N                 RMA size limit N
 *   write_only                writes without reads (atomics all)
 *   atomics all|nic|none      the atomics offered
 *   reg_cost US PAGE_NS       registration cost
 *   reg_limit L               live registrations per domain
 *   profile NAME MODE KEY DC INJECT ATOMICS
 *                             a profile's infos (MODE: "none" or a comma list; INJECT -1: core's)
 *   nothing                   an unreadable setting: getinfo offers nothing
 * This file holds the checks and main; a run's NIC is caps_nic.c's, the scenarios are in
 * caps_posts.c (dc, inject, max_rma, write_only), caps_atomics.c, caps_registration.c
 * (reg_cost, reg_limit) and caps_profile.c; caps_test.h is what they share.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps_test.h"

static int passed, failed;

bool check(bool ok, const char *fmt, ...)
{
    va_list ap;

    printf("%s ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    ok ? passed++ : failed++;
    return ok;
}

uint64_t event(struct nic *n, int ev)
{
    struct strictmr_stats s;

    n->f.stats->read(&s);
    return s.events[ev];
}

/* The call was refused with err and moved op_refused by exactly one. */
bool refused(struct nic *n, const char *what, uint64_t before, int ret, int err)
{
    uint64_t moved = event(n, STRICTMR_EV_OP_REFUSED) - before;

    n->provoked[STRICTMR_EV_OP_REFUSED]++;
    return check(ret == err && moved == 1, "%s refused: ret %d (want %d), op_refused+%llu", what,
                 ret, err, (unsigned long long)moved);
}

/* ---------------------------------------------------------------- main */
static int usage(const char *me)
{
    fprintf(stderr, "usage: %s PROVIDER SCENARIO [ARGS] (see the source's header)\n", me);
    return 2;
}

/* Runs the scenario argv names on n; false if the arguments name none. */
static bool run_scenario(struct nic *n, const char *prov, int argc, char **argv)
{
    const char *sc = argv[2];

    if (!strcmp(sc, "dc") && argc == 4)
        scenario_dc(n, prov, !strcmp(argv[3], "off"));
    else if (!strcmp(sc, "inject") && argc == 4)
        scenario_inject(n, strtoul(argv[3], NULL, 10));
    else if (!strcmp(sc, "max_rma") && argc == 4)
        scenario_max_rma(n, strtoul(argv[3], NULL, 10));
    else if (!strcmp(sc, "write_only"))
        scenario_write_only(n, prov);
    else if (!strcmp(sc, "atomics") && argc == 4 && !strcmp(argv[3], "nic"))
        atomics_nic(n);
    else if (!strcmp(sc, "atomics") && argc == 4 && !strcmp(argv[3], "all"))
        atomics_all(n);
    else if (!strcmp(sc, "atomics") && argc == 4 && !strcmp(argv[3], "none"))
        atomics_none(n, prov);
    else if (!strcmp(sc, "reg_cost") && argc == 5)
        scenario_reg_cost(n, atoi(argv[3]), atoi(argv[4]));
    else if (!strcmp(sc, "reg_limit") && argc == 4)
        scenario_reg_limit(n, strtoul(argv[3], NULL, 10));
    else if (!strcmp(sc, "profile") && argc == 9)
        scenario_profile(n, prov, argv + 3);
    else
        return false;
    return true;
}

/* The PROVOKED line: what the run provoked, for run_tests.py to find in the report. */
static void print_provoked(const struct nic *n, const char *sc)
{
    /* a profile's own registrations pay its cost: run_tests.py sees that move, unprovoked */
    printf("PROVOKED op_refused=%llu reg_refused=%llu",
           (unsigned long long)n->provoked[STRICTMR_EV_OP_REFUSED],
           (unsigned long long)n->provoked[STRICTMR_EV_REG_REFUSED]);
    if (strcmp(sc, "profile"))
        printf(" reg_charged=%llu reg_charged_us=%llu",
               (unsigned long long)n->provoked[STRICTMR_EV_REG_CHARGED],
               (unsigned long long)n->provoked[STRICTMR_EV_REG_CHARGED_US]);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *prov, *sc;
    struct nic n;
    uint64_t caps = FI_MSG | FI_RMA | FI_ATOMIC;
    bool buffers = true;
    int ret;

    if (argc < 3)
        return usage(argv[0]);
    prov = argv[1];
    sc = argv[2];
    if (!strcmp(sc, "nothing")) {
        ret = getinfo_ret(prov, FI_RMA, ~0ULL, 0, NULL);
        check(ret == -FI_ENODATA, "nothing: getinfo -> %d", ret);
        printf("SUMMARY %s %s: %d passed, %d failed\n", prov, sc, passed, failed);
        return failed ? 1 : 0;
    }
    if ((!strcmp(sc, "atomics") && argc > 3 && !strcmp(argv[3], "none")) ||
        !strcmp(sc, "write_only"))
        caps = FI_MSG | FI_RMA; /* hints requiring what is not offered get nothing */
    if (!strcmp(sc, "reg_limit") || !strcmp(sc, "reg_cost"))
        buffers = false; /* every registration is the scenario's own */
    ret = nic_open(&n, prov, caps, buffers);
    if (!check(!ret, "%s: open over %s -> %s", sc, prov, fi_strerror(-ret))) {
        nic_close(&n);
        return 1;
    }
    if (!run_scenario(&n, prov, argc, argv)) {
        nic_close(&n);
        return usage(argv[0]);
    }
    print_provoked(&n, sc);
    nic_close(&n);
    printf("SUMMARY %s %s: %d passed, %d failed\n", prov, sc, passed, failed);
    return failed ? 1 : 0;
}
