/*
 * strictmr_caps_test's profile scenario (caps_test.h): a profile's MR mode, key size, completion
 * level, inject size and atomics read back through its infos, and a write and a read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps_test.h"

/* ---------------------------------------------------------------- profile */
static uint64_t parse_mode(const char *text)
{
    static const struct {
        const char *name;
        uint64_t bit;
    } names[] = {{"local", FI_MR_LOCAL},       {"virt_addr", FI_MR_VIRT_ADDR},
                 {"allocated", FI_MR_ALLOCATED}, {"prov_key", FI_MR_PROV_KEY},
                 {"endpoint", FI_MR_ENDPOINT}, {"raw", FI_MR_RAW}};
    char *copy = strdup(text), *save = NULL;
    uint64_t mode = 0;

    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            mode |= strcmp(w, names[i].name) ? 0 : names[i].bit;
    }
    free(copy);
    return mode;
}

void scenario_profile(struct nic *n, const char *prov, char **argv)
{
    uint64_t mode = strcmp(argv[1], "none") ? parse_mode(argv[1]) : 0;
    size_t key_size = strtoul(argv[2], NULL, 10), core_inject = n->core->tx_attr->inject_size;
    bool dc = atoi(argv[3]);
    long inject = atol(argv[4]);
    const struct fi_info *info = n->f.info;
    int ret;

    check((uint64_t)(unsigned)info->domain_attr->mr_mode == mode && info->domain_attr->mr_key_size == key_size,
          "profile %s: mr_mode 0x%llx key_size %zu (want 0x%llx, %zu)", argv[0],
          (unsigned long long)info->domain_attr->mr_mode, info->domain_attr->mr_key_size,
          (unsigned long long)mode, key_size);
    ret = getinfo_ret(prov, FI_RMA, ~0ULL, FI_DELIVERY_COMPLETE, NULL);
    if (!dc)
        check(ret == -FI_ENODATA, "profile %s: hints asking FI_DELIVERY_COMPLETE -> %d", argv[0],
              ret);
    else
        check(ret != -FI_ENODATA || !(n->core->tx_attr->op_flags & FI_DELIVERY_COMPLETE),
              "profile %s: FI_DELIVERY_COMPLETE left to the core -> %d", argv[0], ret);
    if (inject >= 0)
        check(info->tx_attr->inject_size ==
                  (core_inject < (size_t)inject ? core_inject : (size_t)inject),
              "profile %s: inject_size %zu (want min(%zu, %ld))", argv[0],
              info->tx_attr->inject_size, core_inject, inject);
    else
        check(info->tx_attr->inject_size == core_inject, "profile %s: inject_size %zu, the core's",
              argv[0], info->tx_attr->inject_size);
    if (!strcmp(argv[5], "nic")) {
        expect_valid(n, "fi_atomicvalid", fi_atomicvalid, FI_UINT64, FI_SUM, false, 0);
        expect_valid(n, "fi_fetch_atomicvalid", fi_fetch_atomicvalid, FI_UINT64, FI_SUM, true, 1);
        check(fetch_add_works(n), "profile %s: a fetch-add works", argv[0]);
    } else {
        expect_valid(n, "fi_atomicvalid", fi_atomicvalid, FI_UINT64, FI_SUM, true, ~(size_t)0);
    }
    check(write_lands(n, 2048, 0, 8), "profile %s: a write lands", argv[0]);
    memset(n->lbuf, 0, REGION);
    fill(n->tbuf, 2048, 9);
    ret = completed(n, rma_read(n, 2048));
    check(!ret && !memcmp(n->lbuf, n->tbuf, 2048), "profile %s: a read -> %d", argv[0], ret);
}
