/*
 * btl-ofi fi_getinfo hints: RDM, RMA + atomics + RMA read (or the capability
 * sets without them that messages complete), the MR mode bits the MCA
 * parameter allows, the completion semantics and ordering, and the MR mode
 * bits by name.
 */

#include "btl_ofi_hints.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/argv.h"

#include "btl_ofi_filter.h"
#include "btl_ofi_params.h"

static const struct {
    uint64_t bit;
    const char *name;
} mca_btl_ofi_mr_bit_names[] = {
    {FI_MR_LOCAL, "local"},         {FI_MR_RAW, "raw"},           {FI_MR_VIRT_ADDR, "virt_addr"},
    {FI_MR_ALLOCATED, "allocated"}, {FI_MR_PROV_KEY, "prov_key"}, {FI_MR_MMU_NOTIFY, "mmu_notify"},
    {FI_MR_RMA_EVENT, "rma_event"}, {FI_MR_ENDPOINT, "endpoint"}, {FI_MR_HMEM, "hmem"},
};

const char *mca_btl_ofi_mr_mode_str(uint64_t mr_mode, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(mca_btl_ofi_mr_bit_names) / sizeof(mca_btl_ofi_mr_bit_names[0]);
         ++i) {
        if (mr_mode & mca_btl_ofi_mr_bit_names[i].bit && used < len) {
            used += snprintf(buf + used, len - used, "%s%s", used ? "|" : "",
                             mca_btl_ofi_mr_bit_names[i].name);
        }
    }
    if (0 == used) {
        snprintf(buf, len, "none");
    }
    return buf;
}

/* The MR bits one btl_ofi_mr_mode item stands for, or UINT64_MAX if it is not one. */
static uint64_t mca_btl_ofi_mr_item_bits(const char *item)
{
    char *end;
    unsigned long long number = strtoull(item, &end, 0);

    if ('\0' == *end && end != item) {
        return (0 == (number & ~(unsigned long long)MCA_BTL_OFI_MR_SERVED)) ? number : UINT64_MAX;
    }
    for (size_t b = 0; b < sizeof(mca_btl_ofi_mr_bit_names) / sizeof(mca_btl_ofi_mr_bit_names[0]);
         ++b) {
        if (0 == strcmp(item, mca_btl_ofi_mr_bit_names[b].name)) {
            return (mca_btl_ofi_mr_bit_names[b].bit & MCA_BTL_OFI_MR_SERVED)
                       ? mca_btl_ofi_mr_bit_names[b].bit
                       : UINT64_MAX;
        }
    }
    return UINT64_MAX;
}

static bool mca_btl_ofi_mr_item_ok(const char *item)
{
    return UINT64_MAX != mca_btl_ofi_mr_item_bits(item);
}

int mca_btl_ofi_mr_mode_parse(const char *text, uint64_t *mask)
{
    uint64_t bits = 0;
    char **items, *bad;

    if (NULL == text) {
        return OPAL_ERR_BAD_PARAM; /* set to an empty string */
    }
    if (0 == strcmp(text, "none")) {
        *mask = 0;
        return OPAL_SUCCESS;
    }
    if (!mca_btl_ofi_split(text, mca_btl_ofi_mr_item_ok, &items, &bad) || NULL == items) {
        free(bad);
        return OPAL_ERR_BAD_PARAM;
    }
    for (int i = 0; items[i]; ++i) {
        bits |= mca_btl_ofi_mr_item_bits(items[i]);
    }
    opal_argv_free(items);
    *mask = bits;
    return OPAL_SUCCESS;
}

/*
 * The one provider name the discovery under way asks libfabric for (hints' prov_name),
 * or NULL for every provider; set by mca_btl_ofi_hint_set for one discovery. Where the
 * user names a single provider, fi_getinfo then asks that provider alone: what
 * `fi_info -p NAME` lists, which is what a name stands for (mca_btl_ofi_names), and no
 * other provider's fi_getinfo runs. That matters for what they cost: libfabric 2.x's
 * verbs provider scans /proc/kallsyms on its first fi_getinfo (about 85 ms of CPU a
 * process here, osc_harness/PERFORMANCE.md), whether or not verbs is wanted.
 */
static char *mca_btl_ofi_hint;

/* A leading '^' (leave out) never gets here: it parses into the exclude list. */
bool mca_btl_ofi_hint_set(char *const *list)
{
    free(mca_btl_ofi_hint);
    mca_btl_ofi_hint = NULL;
    if (NULL != list && NULL != list[0] && NULL == list[1] &&
        NULL != (mca_btl_ofi_hint = strdup(list[0]))) {
        for (char *c = mca_btl_ofi_hint; *c; ++c) {
            *c = (char)tolower((unsigned char)*c); /* libfabric's names are lower case */
        }
    }
    return NULL != mca_btl_ofi_hint;
}

struct fi_info *mca_btl_ofi_getinfo(const mca_btl_ofi_ask_t *ask, bool enable_mpi_threads)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL;
    uint32_t version = ask->hmem ? MCA_BTL_OFI_FI_VERSION_HMEM : MCA_BTL_OFI_FI_VERSION;

    if (NULL == hints) {
        return NULL;
    }
    if (NULL != mca_btl_ofi_hint && NULL == (hints->fabric_attr->prov_name =
                                                 strdup(mca_btl_ofi_hint))) {
        fi_freeinfo(hints);
        return NULL;
    }
    hints->caps = ask->caps ? ask->caps : MCA_BTL_OFI_CAPS_ALL;
    hints->domain_attr->mr_mode = (int)ask->mr_mode;
    if (ask->hmem) {
        /* System memory only: FI_MR_HMEM asks nothing of it (fi_mr(3)). */
        hints->caps |= FI_HMEM;
        hints->domain_attr->mr_mode |= FI_MR_HMEM;
    }
    /* Our operation contexts begin with room for the provider (fi_context2). */
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->threading = enable_mpi_threads ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
    /* The BTL polls its own CQ from opal_progress: no provider thread needed. */
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
    hints->tx_attr->op_flags = ask->op_flags;
    hints->tx_attr->msg_order = ask->msg_order;

    if (0 != fi_getinfo(version, NULL, NULL, 0, hints, &list)) {
        list = NULL;
    }
    fi_freeinfo(hints);
    return list;
}

bool mca_btl_ofi_gets_by_messages(const struct fi_info *info)
{
    switch (mca_btl_ofi_params.gets_path) {
    case MCA_BTL_OFI_PATH_MESSAGES:
        return true;
    case MCA_BTL_OFI_PATH_NATIVE:
        return false;
    default:
        return MCA_BTL_OFI_CAPS_READ != (info->caps & MCA_BTL_OFI_CAPS_READ);
    }
}

int mca_btl_ofi_cap_sets(uint64_t sets[4])
{
    static const uint64_t extras[] = {FI_ATOMIC | MCA_BTL_OFI_CAPS_READ, MCA_BTL_OFI_CAPS_READ,
                                      FI_ATOMIC, 0};
    int count = 0;

    for (size_t i = 0; i < sizeof(extras) / sizeof(extras[0]); ++i) {
        uint64_t caps = MCA_BTL_OFI_CAPS_RMA | extras[i];
        bool seen = false;

        if ((MCA_BTL_OFI_PATH_NATIVE == mca_btl_ofi_params.atomics_path && !(caps & FI_ATOMIC)) ||
            (MCA_BTL_OFI_PATH_NATIVE == mca_btl_ofi_params.gets_path && !(caps & FI_READ))) {
            continue;
        }
        if (MCA_BTL_OFI_PATH_MESSAGES == mca_btl_ofi_params.atomics_path) {
            caps &= ~(uint64_t)FI_ATOMIC;
        }
        if (MCA_BTL_OFI_PATH_MESSAGES == mca_btl_ofi_params.gets_path) {
            caps &= ~(uint64_t)MCA_BTL_OFI_CAPS_READ;
        }
        if (MCA_BTL_OFI_CAPS_ALL != caps) {
            caps |= MCA_BTL_OFI_CAPS_MSG;
        }
        for (int j = 0; j < count; ++j) {
            seen = seen || sets[j] == caps;
        }
        if (!seen) {
            sets[count++] = caps;
        }
    }
    return count;
}

/* Ordering that makes a read a proof that earlier writes and atomics landed (none asked
 * with the debug btl_ofi_debug_proof_trusts_order, the negative control of NOTES.txt 5). */
#define MCA_BTL_OFI_PROOF_ORDER                                                                    \
    (mca_btl_ofi_params.debug_proof_trusts_order ? 0 : (FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW))

uint64_t mca_btl_ofi_proof_order(uint64_t caps)
{
    uint64_t order = MCA_BTL_OFI_PROOF_ORDER;

    return (caps & FI_ATOMIC) ? order : order & ~(uint64_t)FI_ORDER_ATOMIC_RAW;
}
