/*
 * btl-ofi discovery: which libfabric provider to use, and on what terms.
 *
 * Builds the fi_getinfo hints (RDM, RMA + atomics + RMA read, the MR mode
 * bits the MCA parameter allows, the completion semantics), applies the
 * include/exclude lists and records (btl_ofi_report.h) why nothing qualified.
 * A provider without atomics or RMA read is taken, after every provider that
 * has both, where it grants FI_MSG: what it lacks then travels as messages
 * (btl_ofi_am.c).
 */

#include "btl_ofi_discovery.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/util/argv.h"
#include "opal/util/proc.h"

#include "btl_ofi_params.h"
#include "btl_ofi_report.h"
#include "btl_ofi_topo.h"

/* Every MR mode bit libfabric 1.x defines: asked for only to explain refusals. */
#define MCA_BTL_OFI_MR_ALL                                                                         \
    (FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |                \
     FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT | FI_MR_HMEM)

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

/*
 * Providers known to break one-sided MPI, up to and including a provider
 * version (fabric_attr->prov_version). They are declined with the reason.
 */
static const struct {
    const char *prov_name;
    uint32_t last_bad_version;
    const char *reason;
} mca_btl_ofi_quirks[] = {
    {
        .prov_name = "udp;ofi_rxd",
        .last_bad_version = FI_VERSION(201, 0), /* checked on libfabric 1.17 and 2.1 */
        .reason = "its atomics crash inside libfabric (segmentation fault when an atomic is the "
                  "first operation to a peer or follows a multi-packet write; reproduced without "
                  "MPI by tools/rxd_atomic_repro.c)",
    },
};

static const char *mca_btl_ofi_quirk(const struct fi_info *info)
{
    for (size_t i = 0; i < sizeof(mca_btl_ofi_quirks) / sizeof(mca_btl_ofi_quirks[0]); ++i) {
        if (0 == strcmp(info->fabric_attr->prov_name, mca_btl_ofi_quirks[i].prov_name) &&
            info->fabric_attr->prov_version <= mca_btl_ofi_quirks[i].last_bad_version) {
            return mca_btl_ofi_quirks[i].reason;
        }
    }
    return NULL;
}

/* A provider name as fi_info prints it: letters, digits, '_', '-', ';'. */
static bool mca_btl_ofi_name_ok(const char *name)
{
    if ('\0' == *name) {
        return false;
    }
    for (const char *c = name; *c; ++c) {
        if (!isalnum((unsigned char)*c) && '_' != *c && '-' != *c && ';' != *c) {
            return false;
        }
    }
    return true;
}

/*
 * Split a comma-separated value into *out (NULL for an empty value). Returns
 * false, with *bad naming the offending item (caller frees), when an item is
 * empty or fails item_ok.
 */
static bool mca_btl_ofi_split(const char *value, bool (*item_ok)(const char *), char ***out,
                              char **bad)
{
    char **items = NULL;
    const char *start = value;

    *out = NULL;
    *bad = NULL;
    if (NULL == value || '\0' == *value) {
        return true;
    }
    for (;;) {
        const char *comma = strchr(start, ',');
        size_t len = comma ? (size_t)(comma - start) : strlen(start);
        char *item = strndup(start, len);

        if (NULL == item || !item_ok(item)) {
            *bad = item;
            opal_argv_free(items);
            return false;
        }
        opal_argv_append_nosize(&items, item);
        free(item);
        if (NULL == comma) {
            break;
        }
        start = comma + 1;
    }
    *out = items;
    return true;
}

/*
 * A provider list (parameter provider_<which>) from its skip'th character; a
 * malformed one declines and returns false.
 */
static bool mca_btl_ofi_parse_list(const char *which, const char *value, size_t skip, char ***out)
{
    char param[64], *bad = NULL;

    if ((0 == skip || '\0' != value[skip]) &&
        mca_btl_ofi_split(value + skip, mca_btl_ofi_name_ok, out, &bad)) {
        return true;
    }
    mca_btl_ofi_decline("malformed-list", mca_btl_ofi_param_name(which, param, sizeof(param)),
                        value, bad ? bad : "", NULL);
    free(bad);
    return false;
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

static bool mca_btl_ofi_in_list(char **list, const char *name)
{
    for (int i = 0; list && list[i]; ++i) {
        if (0 == strcmp(list[i], name)) {
            return true;
        }
    }
    return false;
}

/*
 * Does a name the user gave stand for this fi_info provider name? As
 * FI_PROVIDER names providers (fabric(7), fi_fabric(3)), whatever the case:
 * a full fi_info name ("tcp;ofi_rxm") stands for that stack only; a single
 * name to include is a core provider and stands for every stack over it
 * ("tcp": "tcp;ofi_rxm"); a single name to exclude stands for every stack it
 * is part of ("ofi_rxm": "tcp;ofi_rxm" and "net;ofi_rxm").
 */
static bool mca_btl_ofi_names(const char *name, const char *prov_name, bool any_part)
{
    size_t len = strlen(name);

    if (NULL != strchr(name, ';')) {
        return 0 == strcasecmp(name, prov_name);
    }
    for (const char *part = prov_name;;) {
        const char *end = strchr(part, ';');
        size_t part_len = end ? (size_t)(end - part) : strlen(part);

        if (part_len == len && 0 == strncasecmp(part, name, len)) {
            return true;
        }
        if (!any_part || NULL == end) {
            return false;
        }
        part = end + 1;
    }
}

/* Does any name of list stand for prov_name (see mca_btl_ofi_names)? */
static bool mca_btl_ofi_list_names(char **list, const char *prov_name, bool any_part)
{
    for (int i = 0; list && list[i]; ++i) {
        if (mca_btl_ofi_names(list[i], prov_name, any_part)) {
            return true;
        }
    }
    return false;
}

typedef struct mca_btl_ofi_filter_t {
    char **include;
    char **exclude;
    char **domain_include; /**< domain or fabric names and patterns (btl_ofi_domain_include) */
    char **domain_exclude;
    /** providers already opened and found without a 64-bit compare-and-swap (exact names) */
    char **passed_over;
    /** domains already in use (exact names): further NICs (mca_btl_ofi_discover_nics) */
    char **skip_domains;
    bool no_loopback; /**< never a loopback-only domain */
} mca_btl_ofi_filter_t;

/*
 * The include or exclude list. As in FI_PROVIDER, an include list that begins
 * with '^' names the providers to leave out instead ("^udp,net").
 */
/* A domain or fabric name as fi_info prints it, or a shell pattern of one ("cxi*",
 * "10.0.0.0/24", "fe80::/64", "rdmap16s27-rdm"). */
static bool mca_btl_ofi_domain_item_ok(const char *item)
{
    if ('\0' == *item) {
        return false;
    }
    for (const char *c = item; *c; ++c) {
        if (!isalnum((unsigned char)*c) && NULL == strchr("_-.:/*?[]", *c)) {
            return false;
        }
    }
    return true;
}

static bool mca_btl_ofi_parse_domains(const char *which, const char *value, char ***out)
{
    char param[64], *bad = NULL;

    if (mca_btl_ofi_split(value, mca_btl_ofi_domain_item_ok, out, &bad)) {
        return true;
    }
    mca_btl_ofi_decline("malformed-domain-list", mca_btl_ofi_param_name(which, param, sizeof(param)),
                        value, bad ? bad : "", NULL);
    free(bad);
    return false;
}

static bool mca_btl_ofi_parse_filter(mca_btl_ofi_filter_t *filter)
{
    const char *include = mca_btl_ofi_params.provider_include;
    const char *dom_in = mca_btl_ofi_params.domain_include;
    const char *dom_ex = mca_btl_ofi_params.domain_exclude;

    if (dom_in && *dom_in && dom_ex && *dom_ex) {
        char param[2][64];
        mca_btl_ofi_decline("domain-include-exclude",
                            mca_btl_ofi_param_name("domain_include", param[0], sizeof(param[0])),
                            dom_in,
                            mca_btl_ofi_param_name("domain_exclude", param[1], sizeof(param[1])),
                            dom_ex, NULL);
        return false;
    }
    if (!mca_btl_ofi_parse_domains("domain_include", dom_in, &filter->domain_include) ||
        !mca_btl_ofi_parse_domains("domain_exclude", dom_ex, &filter->domain_exclude)) {
        return false;
    }
    if (NULL != include && '^' == include[0]) {
        return mca_btl_ofi_parse_list("provider_include", include, 1, &filter->exclude);
    }
    return mca_btl_ofi_parse_list("provider_include", include, 0, &filter->include) &&
           mca_btl_ofi_parse_list("provider_exclude", mca_btl_ofi_params.provider_exclude, 0,
                                  &filter->exclude);
}

/* Does an item of list name this entry's domain or its fabric (fnmatch patterns)? */
static bool mca_btl_ofi_domain_listed(char **list, const struct fi_info *info)
{
    const char *domain = info->domain_attr->name ? info->domain_attr->name : "";
    const char *fabric = info->fabric_attr->name ? info->fabric_attr->name : "";

    for (int i = 0; list && list[i]; ++i) {
        if (0 == fnmatch(list[i], domain, 0) || 0 == fnmatch(list[i], fabric, 0)) {
            return true;
        }
    }
    return false;
}

/* The provider lists alone (names, quirks, providers passed over). */
static bool mca_btl_ofi_provider_wanted(const mca_btl_ofi_filter_t *filter,
                                        const struct fi_info *info)
{
    const char *name = info->fabric_attr->prov_name;

    if (NULL != mca_btl_ofi_quirk(info) || mca_btl_ofi_in_list(filter->passed_over, name)) {
        return false;
    }
    if (filter->include) {
        return mca_btl_ofi_list_names(filter->include, name, false);
    }
    return !mca_btl_ofi_list_names(filter->exclude, name, true);
}

static bool mca_btl_ofi_loopback_only(const struct fi_info *info);

static bool mca_btl_ofi_wanted(const mca_btl_ofi_filter_t *filter, const struct fi_info *info)
{
    if (!mca_btl_ofi_provider_wanted(filter, info) ||
        (NULL != filter->skip_domains && NULL != info->domain_attr->name &&
         mca_btl_ofi_in_list(filter->skip_domains, info->domain_attr->name)) ||
        (filter->no_loopback && mca_btl_ofi_loopback_only(info))) {
        return false;
    }
    if (filter->domain_include) {
        return mca_btl_ofi_domain_listed(filter->domain_include, info);
    }
    return !mca_btl_ofi_domain_listed(filter->domain_exclude, info);
}

/* How this process's domain was chosen among several (for the "selected provider" line). */
static char mca_btl_ofi_domain_choice[400];

static bool mca_btl_ofi_same_str(const char *a, const char *b)
{
    return 0 == strcmp(a ? a : "", b ? b : "");
}

/* A domain that reaches only this host's loopback (tcp and udp on lo): never the one taken
 * while the same provider offers another, since peers on other hosts cannot reach it. */
static bool mca_btl_ofi_loopback_only(const struct fi_info *info)
{
    const char *fabric = info->fabric_attr->name ? info->fabric_attr->name : "";
    const char *domain = info->domain_attr->name ? info->domain_attr->name : "";

    return 0 == strncmp(fabric, "127.", 4) || 0 == strcmp(fabric, "::1/128") ||
           0 == strcmp(domain, "lo");
}

/* What btl-ofi always needs, what it takes when granted, and what carries the rest. */
#define MCA_BTL_OFI_CAPS_RMA (FI_RMA | FI_WRITE | FI_REMOTE_WRITE)
#define MCA_BTL_OFI_CAPS_READ (FI_READ | FI_REMOTE_READ)
#define MCA_BTL_OFI_CAPS_MSG (FI_MSG | FI_SEND | FI_RECV)
#define MCA_BTL_OFI_CAPS_ALL (MCA_BTL_OFI_CAPS_RMA | MCA_BTL_OFI_CAPS_READ | FI_ATOMIC)

/* What one fi_getinfo call asks of the providers. */
typedef struct mca_btl_ofi_ask_t {
    uint64_t caps; /**< 0: MCA_BTL_OFI_CAPS_ALL */
    uint64_t mr_mode;
    uint64_t op_flags;
    uint64_t msg_order;
    /** FI_HMEM at API 1.18: some providers (shm) pick other protocols for such endpoints */
    bool hmem;
} mca_btl_ofi_ask_t;

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

/* Ask for list's one name only (NULL, or a list of another length: every provider). A
 * leading '^' (leave out) never gets here: it parses into the exclude list. */
static void mca_btl_ofi_hint_set(char *const *list)
{
    free(mca_btl_ofi_hint);
    mca_btl_ofi_hint = NULL;
    if (NULL != list && NULL != list[0] && NULL == list[1] &&
        NULL != (mca_btl_ofi_hint = strdup(list[0]))) {
        for (char *c = mca_btl_ofi_hint; *c; ++c) {
            *c = (char)tolower((unsigned char)*c); /* libfabric's names are lower case */
        }
    }
}

static struct fi_info *mca_btl_ofi_getinfo(const mca_btl_ofi_ask_t *ask, bool enable_mpi_threads)
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

/* Names of the RDM RMA+atomic providers present, e.g. "shm, sockets" (caller frees). */
static char *mca_btl_ofi_provider_names(const struct fi_info *all)
{
    char **names = NULL, *joined;

    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        if (!mca_btl_ofi_in_list(names, cur->fabric_attr->prov_name)) {
            opal_argv_append_nosize(&names, cur->fabric_attr->prov_name);
        }
    }
    joined = names ? opal_argv_join(names, ',') : strdup("(none)");
    opal_argv_free(names);
    return joined;
}

/*
 * What the RDM providers this name stands for lack of FI_RMA and FI_ATOMIC,
 * e.g. "FI_RMA and FI_ATOMIC" for libfabric 2.x's sm2; NULL when it stands for
 * no RDM provider libfabric has.
 */
static const char *mca_btl_ofi_missing_caps(const char *name)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL;
    uint64_t caps = 0;
    bool found = false;

    if (NULL == hints || NULL == (hints->fabric_attr->prov_name = strdup(name))) {
        fi_freeinfo(hints);
        return NULL;
    }
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = (int)MCA_BTL_OFI_MR_ALL;
    if (0 == fi_getinfo(MCA_BTL_OFI_FI_VERSION, NULL, NULL, 0, hints, &list)) {
        for (const struct fi_info *cur = list; cur; cur = cur->next) {
            if (mca_btl_ofi_names(name, cur->fabric_attr->prov_name, false)) {
                found = true;
                caps |= cur->caps;
            }
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(hints);
    if (!found) {
        return NULL;
    }
    if (!(caps & FI_RMA)) {
        return (caps & FI_ATOMIC) ? "FI_RMA" : "FI_RMA and FI_ATOMIC";
    }
    if (!(caps & FI_MSG)) {
        /* what it lacks cannot travel as messages either */
        if (!(caps & FI_ATOMIC)) {
            return (caps & FI_READ) ? "FI_ATOMIC, and FI_MSG to carry atomics as messages"
                                    : "FI_ATOMIC and FI_READ, and FI_MSG to carry them as "
                                      "messages";
        }
        if (!(caps & FI_READ)) {
            return "FI_READ, and FI_MSG to carry gets as messages";
        }
    }
    return "the combination btl-ofi asks for";
}

/* Does name (to include) stand for a provider of all, or of msgs (one without atomics or
 * RMA read serves through messages)? */
static bool mca_btl_ofi_lists_name(const char *name, const struct fi_info *all,
                                   const struct fi_info *msgs)
{
    const struct fi_info *lists[] = {all, msgs};

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); ++i) {
        for (const struct fi_info *cur = lists[i]; cur; cur = cur->next) {
            if (mca_btl_ofi_names(name, cur->fabric_attr->prov_name, false)) {
                return true;
            }
        }
    }
    return false;
}

static bool mca_btl_ofi_check_include(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
                                      const struct fi_info *msgs)
{
    for (int i = 0; filter->include && filter->include[i]; ++i) {
        const char *name = filter->include[i], *lacks;
        char *names, param[64];

        if (mca_btl_ofi_lists_name(name, all, msgs)) {
            continue;
        }
        names = mca_btl_ofi_provider_names(all);
        lacks = mca_btl_ofi_missing_caps(name);
        if (NULL != lacks) {
            mca_btl_ofi_decline("provider-lacks-caps", name, lacks, names, NULL);
        } else {
            const char *fi_provider = getenv("FI_PROVIDER");
            mca_btl_ofi_decline("provider-not-found",
                                mca_btl_ofi_param_name("provider_include", param, sizeof(param)),
                                name, names, fi_provider ? fi_provider : "(not set)", NULL);
        }
        free(names);
        return false;
    }
    return true;
}

/* Is an entry before cur in all, let through by the provider lists, of cur's domain (and,
 * with fabric, of its fabric)? */
static bool mca_btl_ofi_domain_before(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
                                      const struct fi_info *cur, bool fabric)
{
    for (const struct fi_info *prev = all; prev != cur; prev = prev->next) {
        if (mca_btl_ofi_provider_wanted(filter, prev) &&
            mca_btl_ofi_same_str(prev->domain_attr->name, cur->domain_attr->name) &&
            (!fabric || mca_btl_ofi_same_str(prev->fabric_attr->name, cur->fabric_attr->name))) {
            return true;
        }
    }
    return false;
}

/* "eth0 (192.0.2.0/24, fe80::/64), lo (127.0.0.1/32)": the domains, with their fabrics, of
 * the entries the provider lists let through (caller frees). */
static char *mca_btl_ofi_domain_names(const mca_btl_ofi_filter_t *filter, const struct fi_info *all)
{
    size_t len = 16, used = 0;
    char *text;

    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        len += strlen(cur->domain_attr->name) + strlen(cur->fabric_attr->name) + 8;
    }
    text = calloc(1, len);
    if (NULL == text) {
        return NULL;
    }
    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        const char *sep = " (";

        if (!mca_btl_ofi_provider_wanted(filter, cur) ||
            mca_btl_ofi_domain_before(filter, all, cur, false)) {
            continue;
        }
        used += snprintf(text + used, len - used, "%s%s", used ? ", " : "", cur->domain_attr->name);
        for (const struct fi_info *f = cur; f; f = f->next) {
            if (mca_btl_ofi_provider_wanted(filter, f) &&
                mca_btl_ofi_same_str(f->domain_attr->name, cur->domain_attr->name) &&
                !mca_btl_ofi_domain_before(filter, all, f, true)) {
                used += snprintf(text + used, len - used, "%s%s", sep, f->fabric_attr->name);
                sep = ", ";
            }
        }
        used += snprintf(text + used, len - used, ")");
    }
    if (0 == used) {
        snprintf(text, len, "(none)");
    }
    return text;
}

/* Does one entry of list, let through by the provider lists, have a domain or fabric that
 * item names? */
static bool mca_btl_ofi_domain_in(const mca_btl_ofi_filter_t *filter, const struct fi_info *list,
                                  char *item)
{
    char *one[2] = {item, NULL};

    for (const struct fi_info *cur = list; cur; cur = cur->next) {
        if (mca_btl_ofi_provider_wanted(filter, cur) && mca_btl_ofi_domain_listed(one, cur)) {
            return true;
        }
    }
    return false;
}

/* Every domain_include item must name a domain or fabric of a provider left by the provider
 * lists (among those with what btl-ofi needs, all and msgs); else decline, listing them. */
static bool mca_btl_ofi_check_domains(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
                                      const struct fi_info *msgs)
{
    for (int i = 0; filter->domain_include && filter->domain_include[i]; ++i) {
        char *names, param[64];

        if (mca_btl_ofi_domain_in(filter, all, filter->domain_include[i]) ||
            mca_btl_ofi_domain_in(filter, msgs, filter->domain_include[i])) {
            continue;
        }
        names = mca_btl_ofi_domain_names(filter, all);
        mca_btl_ofi_decline("domain-not-found",
                            mca_btl_ofi_param_name("domain_include", param, sizeof(param)),
                            filter->domain_include[i], names ? names : "?", NULL);
        free(names);
        return false;
    }
    return true;
}

static const char *mca_btl_ofi_completion_setting(void)
{
    for (int i = 0; NULL != mca_btl_ofi_completion_values[i].string; ++i) {
        if (mca_btl_ofi_completion_values[i].value == mca_btl_ofi_params.completion) {
            return mca_btl_ofi_completion_values[i].string;
        }
    }
    return "?";
}

/* Nothing qualified: record why, naming the provider and what it asked for. */
static void mca_btl_ofi_explain(const mca_btl_ofi_filter_t *filter, const struct fi_info *all)
{
    char asked[128], allowed[128], served[128], param[3][64];
    const char *fi_provider = getenv("FI_PROVIDER");

    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        const char *quirk = mca_btl_ofi_quirk(cur);
        if (NULL != quirk &&
            mca_btl_ofi_list_names(filter->include, cur->fabric_attr->prov_name, false)) {
            char version[32];
            snprintf(version, sizeof(version), "%u.%u", FI_MAJOR(cur->fabric_attr->prov_version),
                     FI_MINOR(cur->fabric_attr->prov_version));
            mca_btl_ofi_decline("provider-broken", cur->fabric_attr->prov_name, version, quirk,
                                NULL);
            return;
        }
    }
    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        uint64_t mode = (uint64_t)cur->domain_attr->mr_mode;
        if (!mca_btl_ofi_wanted(filter, cur)) {
            continue;
        }
        if (mode & ~mca_btl_ofi_params.mr_mode_allowed) {
            mca_btl_ofi_decline(
                "mr-mode-declined", cur->fabric_attr->prov_name,
                mca_btl_ofi_mr_mode_str(mode, asked, sizeof(asked)),
                mca_btl_ofi_param_name("mr_mode", param[0], sizeof(param[0])),
                mca_btl_ofi_mr_mode_str(mca_btl_ofi_params.mr_mode_allowed, allowed,
                                        sizeof(allowed)),
                mca_btl_ofi_mr_mode_str(MCA_BTL_OFI_MR_SERVED, served, sizeof(served)), NULL);
            return;
        }
    }
    if (filter->domain_include || filter->domain_exclude) {
        /* the provider lists left something, the domain lists nothing */
        char *names = mca_btl_ofi_domain_names(filter, all);
        const bool in = NULL != filter->domain_include;

        mca_btl_ofi_decline("domain-none-left",
                            mca_btl_ofi_param_name(in ? "domain_include" : "domain_exclude",
                                                   param[0], sizeof(param[0])),
                            in ? mca_btl_ofi_params.domain_include
                               : mca_btl_ofi_params.domain_exclude,
                            names ? names : "?", NULL);
        free(names);
        return;
    }
    mca_btl_ofi_decline(
        "no-provider", mca_btl_ofi_param_name("provider_include", param[0], sizeof(param[0])),
        mca_btl_ofi_params.provider_include ? mca_btl_ofi_params.provider_include : "(all)",
        mca_btl_ofi_param_name("provider_exclude", param[1], sizeof(param[1])),
        mca_btl_ofi_params.provider_exclude ? mca_btl_ofi_params.provider_exclude : "(none)",
        mca_btl_ofi_param_name("completion", param[2], sizeof(param[2])),
        mca_btl_ofi_completion_setting(), fi_provider ? fi_provider : "(not set)", NULL);
}

void mca_btl_ofi_discover_log(const struct fi_info *info, bool atomics_as_messages,
                              bool gets_as_messages)
{
    char mode[128], selected[512], *copy;

    /* the MPI_T-readable record of the choice (btl_ofi_domain_selected): the variable system
     * owns the string (it frees it when the variable goes), so it gets a heap copy */
    snprintf(selected, sizeof(selected), "%s fabric %s domain %s", info->fabric_attr->prov_name,
             info->fabric_attr->name, info->domain_attr->name);
    if (NULL != (copy = strdup(selected))) {
        free(mca_btl_ofi_params.domain_selected);
        mca_btl_ofi_params.domain_selected = copy;
    }
    /* the choice recorded by mca_btl_ofi_spread begins "<domain>, domain i of n" */
    if (0 == strncmp(mca_btl_ofi_domain_choice, info->domain_attr->name,
                     strlen(info->domain_attr->name)) &&
        ',' == mca_btl_ofi_domain_choice[strlen(info->domain_attr->name)]) {
        opal_output_verbose(10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "took %s",
                            mca_btl_ofi_domain_choice);
    }

    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "selected provider %s (fabric %s, domain %s), mr_mode %s, "
                                        "key size %zu, completion %s, atomics %s, gets %s%s",
                        info->fabric_attr->prov_name, info->fabric_attr->name,
                        info->domain_attr->name,
                        mca_btl_ofi_mr_mode_str(info->domain_attr->mr_mode, mode, sizeof(mode)),
                        info->domain_attr->mr_key_size, mca_btl_ofi_completion_name(info),
                        atomics_as_messages ? "messages" : "native",
                        gets_as_messages ? "messages" : "native",
                        (info->caps & FI_HMEM) ? ", FI_HMEM (system memory only)" : "");
}

const char *mca_btl_ofi_completion_name(const struct fi_info *info)
{
    if (info->tx_attr->op_flags & FI_DELIVERY_COMPLETE) {
        return "delivery";
    }
    return (MCA_BTL_OFI_COMPLETION_LOCAL == mca_btl_ofi_params.completion)
               ? "local (unsafe debug setting)"
               : "read_proof";
}

/* Same provider and fabric; with domain, the same domain too. */
static bool mca_btl_ofi_alike(const struct fi_info *a, const struct fi_info *b, bool domain)
{
    return mca_btl_ofi_same_str(a->fabric_attr->prov_name, b->fabric_attr->prov_name) &&
           mca_btl_ofi_same_str(a->fabric_attr->name, b->fabric_attr->name) &&
           (!domain || mca_btl_ofi_same_str(a->domain_attr->name, b->domain_attr->name));
}

/* A wanted entry of first's provider and fabric (and loopback kind), the first of its
 * domain in list: one of the domains mca_btl_ofi_spread shares out. */
static bool mca_btl_ofi_spread_candidate(const mca_btl_ofi_filter_t *filter,
                                         const struct fi_info *list, const struct fi_info *first,
                                         const struct fi_info *cur)
{
    if (!mca_btl_ofi_wanted(filter, cur) || !mca_btl_ofi_alike(cur, first, false) ||
        mca_btl_ofi_loopback_only(cur) != mca_btl_ofi_loopback_only(first)) {
        return false;
    }
    for (const struct fi_info *prev = list; prev != cur; prev = prev->next) {
        if (mca_btl_ofi_alike(prev, cur, true)) {
            return false;
        }
    }
    return true;
}

/* The most domains of one fabric that spread shares out. */
#define MCA_BTL_OFI_SPREAD_MAX 64

/*
 * Of the domains of first's provider and fabric (several NICs on one fabric reach the same
 * peers), one per process: of those nearest the process's cores by topology (the NIC's
 * PCI device in Open MPI's hwloc topology, btl_ofi_topo.c) when that tells them apart,
 * else of all, the local_rank'th modulo their number, so that a node's processes share
 * them out.
 */
static const struct fi_info *mca_btl_ofi_spread(const mca_btl_ofi_filter_t *filter,
                                                const struct fi_info *list,
                                                const struct fi_info *first)
{
    const struct fi_info *cand[MCA_BTL_OFI_SPREAD_MAX], *pool[MCA_BTL_OFI_SPREAD_MAX];
    bool near[MCA_BTL_OFI_SPREAD_MAX];
    const unsigned rank = (unsigned)opal_process_info.my_local_rank;
    char names[160] = "", topo[160];
    size_t used = 0;
    unsigned count = 0, pooled = 0, nearby;
    const struct fi_info *pick;

    for (const struct fi_info *cur = list;
         cur && mca_btl_ofi_params.domain_spread && count < MCA_BTL_OFI_SPREAD_MAX;
         cur = cur->next) {
        if (!mca_btl_ofi_spread_candidate(filter, list, first, cur)) {
            continue;
        }
        cand[count++] = cur;
        if (used < sizeof(names)) {
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                     used ? "," : "", cur->domain_attr->name);
        }
    }
    if (count < 2) {
        return first;
    }
    nearby = mca_btl_ofi_topo_near(cand, count, near, topo, sizeof(topo));
    for (unsigned i = 0; i < count; ++i) {
        if (0 == nearby || near[i]) {
            pool[pooled++] = cand[i];
        }
    }
    pick = pool[rank % pooled];
    snprintf(mca_btl_ofi_domain_choice, sizeof(mca_btl_ofi_domain_choice),
             "%s, domain %u of %u%s on its fabric (%s) by local rank %u; topology: %s",
             pick->domain_attr->name, rank % pooled + 1, pooled,
             nearby ? " near this process" : "", names, rank, topo);
    return pick;
}

/* The first wanted entry of list (a loopback-only domain only when nothing else is wanted),
 * spread over the domains of its fabric; with like set, the first of like's provider,
 * fabric and domain. */
static const struct fi_info *mca_btl_ofi_first_wanted(const mca_btl_ofi_filter_t *filter,
                                                      const struct fi_info *list,
                                                      const struct fi_info *like)
{
    for (int pass = 0; pass < 2; ++pass) {
        for (const struct fi_info *cur = list; cur; cur = cur->next) {
            if (!mca_btl_ofi_wanted(filter, cur)) {
                continue;
            }
            if (NULL != like) {
                if (mca_btl_ofi_alike(cur, like, true)) {
                    return cur;
                }
            } else if (1 == pass || !mca_btl_ofi_loopback_only(cur)) {
                return mca_btl_ofi_spread(filter, list, cur);
            }
        }
    }
    return NULL;
}

/* The first wanted entry fi_getinfo gives for ask (like: see above), duplicated; NULL if none. */
static struct fi_info *mca_btl_ofi_ask(const mca_btl_ofi_filter_t *filter,
                                       const mca_btl_ofi_ask_t *ask, const struct fi_info *like,
                                       bool enable_mpi_threads)
{
    struct fi_info *list = mca_btl_ofi_getinfo(ask, enable_mpi_threads);
    const struct fi_info *match = mca_btl_ofi_first_wanted(filter, list, like);
    struct fi_info *found = match ? fi_dupinfo(match) : NULL;

    fi_freeinfo(list);
    return found;
}

/* Replace *chosen by better, if there is one. */
static void mca_btl_ofi_prefer(struct fi_info **chosen, struct fi_info *better)
{
    if (NULL != better) {
        fi_freeinfo(*chosen);
        *chosen = better;
    }
}

/* Ordering that makes a read a proof that earlier writes and atomics landed (none asked
 * with the debug btl_ofi_proof_trusts_order, the negative control of NOTES.txt 5). */
#define MCA_BTL_OFI_PROOF_ORDER                                                                    \
    (mca_btl_ofi_params.debug_proof_trusts_order ? 0 : (FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW))

/*
 * The first wanted provider granting op_flags and msg_order, in libfabric's
 * order, duplicated; NULL if none. Then, for that same provider and domain:
 * without FI_MR_LOCAL / FI_MR_ENDPOINT if it can do without (they cost a
 * registered bounce or a bind per registration), and with FI_HMEM where
 * libfabric has API 1.18, which is how Open MPI's own btl/ofi asks and what
 * selects shm's faster protocols.
 */
static struct fi_info *mca_btl_ofi_try(const mca_btl_ofi_filter_t *filter, bool enable_mpi_threads,
                                       uint64_t caps, uint64_t op_flags, uint64_t msg_order)
{
    mca_btl_ofi_ask_t ask = {
        .caps = caps,
        .mr_mode = mca_btl_ofi_params.mr_mode_allowed & MCA_BTL_OFI_MR_SERVED,
        .op_flags = op_flags,
        .msg_order = msg_order,
        .hmem = false,
    };
    struct fi_info *chosen = mca_btl_ofi_ask(filter, &ask, NULL, enable_mpi_threads);

    if (NULL == chosen) {
        return NULL;
    }
    if ((uint64_t)chosen->domain_attr->mr_mode & MCA_BTL_OFI_MR_ON_DEMAND) {
        mca_btl_ofi_ask_t cheaper = ask;
        cheaper.mr_mode &= ~(uint64_t)MCA_BTL_OFI_MR_ON_DEMAND;
        mca_btl_ofi_prefer(&chosen, mca_btl_ofi_ask(filter, &cheaper, chosen, enable_mpi_threads));
    }
    if (fi_version() >= MCA_BTL_OFI_FI_VERSION_HMEM) {
        ask.mr_mode = (uint64_t)chosen->domain_attr->mr_mode & MCA_BTL_OFI_MR_SERVED;
        ask.hmem = true;
        mca_btl_ofi_prefer(&chosen, mca_btl_ofi_ask(filter, &ask, chosen, enable_mpi_threads));
    }
    return chosen;
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

/*
 * The capability sets to ask for, best first: atomics and RMA read, then
 * without atomics, without read, without both. What a set leaves out travels
 * as messages, so such a set asks for FI_MSG as well. btl_ofi_atomics and
 * btl_ofi_gets set to native keep the cap in every set; set to messages they
 * leave it out of every set (as on a provider without it). Returns the count.
 */
static int mca_btl_ofi_cap_sets(uint64_t sets[4])
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

/* The ordering read proofs need: atomics only where the provider's own atomics are used. */
static uint64_t mca_btl_ofi_proof_order(uint64_t caps)
{
    uint64_t order = MCA_BTL_OFI_PROOF_ORDER;

    return (caps & FI_ATOMIC) ? order : order & ~(uint64_t)FI_ORDER_ATOMIC_RAW;
}

/*
 * One capability set, completion as btl_ofi_completion says. auto:
 * delivery-complete if granted, else read-after-write ordering for the proof
 * reads; delivery / read_proof: only that; local: neither (debug). Proof
 * reads need RMA read: without it read_proof is not tried, and *unprovable
 * gets the provider that would have served but for that (caller frees).
 */
static struct fi_info *mca_btl_ofi_select_caps(const mca_btl_ofi_filter_t *filter,
                                               bool enable_mpi_threads, uint64_t caps,
                                               char **unprovable)
{
    const bool reads = !!(caps & FI_READ);
    const int completion = mca_btl_ofi_params.completion;
    struct fi_info *chosen = NULL;

    if (MCA_BTL_OFI_COMPLETION_LOCAL == completion) {
        return mca_btl_ofi_try(filter, enable_mpi_threads, caps, 0, 0);
    }
    if (MCA_BTL_OFI_COMPLETION_READ_PROOF != completion) {
        chosen = mca_btl_ofi_try(filter, enable_mpi_threads, caps, FI_DELIVERY_COMPLETE, 0);
    }
    if (NULL != chosen || MCA_BTL_OFI_COMPLETION_DELIVERY == completion) {
        return chosen;
    }
    if (reads) {
        return mca_btl_ofi_try(filter, enable_mpi_threads, caps, 0, mca_btl_ofi_proof_order(caps));
    }
    if (NULL == *unprovable) {
        const mca_btl_ofi_ask_t ask = {
            .caps = caps,
            .mr_mode = mca_btl_ofi_params.mr_mode_allowed & MCA_BTL_OFI_MR_SERVED,
        };
        struct fi_info *found = mca_btl_ofi_ask(filter, &ask, NULL, enable_mpi_threads);

        if (NULL != found) {
            *unprovable = strdup(found->fabric_attr->prov_name);
            fi_freeinfo(found);
        }
    }
    return NULL;
}

/*
 * Every capability set in turn (mca_btl_ofi_cap_sets). When none serves and
 * a provider failed only for want of a completion proof, decline with that
 * reason and set *declined.
 */
static struct fi_info *mca_btl_ofi_select(const mca_btl_ofi_filter_t *filter,
                                          bool enable_mpi_threads, bool *declined)
{
    struct fi_info *chosen = NULL;
    char *unprovable = NULL;
    uint64_t sets[4];
    int count = mca_btl_ofi_cap_sets(sets);

    for (int i = 0; i < count && NULL == chosen; ++i) {
        chosen = mca_btl_ofi_select_caps(filter, enable_mpi_threads, sets[i], &unprovable);
    }
    if (NULL == chosen && NULL != unprovable) {
        char param[2][64];

        mca_btl_ofi_decline("no-completion-proof", unprovable,
                            mca_btl_ofi_param_name("completion", param[0], sizeof(param[0])),
                            mca_btl_ofi_completion_setting(),
                            mca_btl_ofi_param_name("gets", param[1], sizeof(param[1])),
                            mca_btl_ofi_params.gets_text ? mca_btl_ofi_params.gets_text : "auto",
                            NULL);
        *declined = true;
    }
    free(unprovable);
    return chosen;
}

struct fi_info *mca_btl_ofi_discover(bool enable_mpi_threads, char **passed_over)
{
    const mca_btl_ofi_ask_t all_modes = {.mr_mode = MCA_BTL_OFI_MR_ALL};
    const mca_btl_ofi_ask_t msg_modes = {
        .caps = MCA_BTL_OFI_CAPS_RMA | MCA_BTL_OFI_CAPS_MSG,
        .mr_mode = MCA_BTL_OFI_MR_ALL,
    };
    mca_btl_ofi_filter_t filter = {.passed_over = passed_over};
    struct fi_info *all = NULL, *msgs = NULL, *chosen = NULL;
    bool declined = false;

    if (mca_btl_ofi_params.provider_include && *mca_btl_ofi_params.provider_include &&
        mca_btl_ofi_params.provider_exclude && *mca_btl_ofi_params.provider_exclude) {
        char include[64], exclude[64];
        mca_btl_ofi_decline("include-exclude",
                            mca_btl_ofi_param_name("provider_include", include, sizeof(include)),
                            mca_btl_ofi_params.provider_include,
                            mca_btl_ofi_param_name("provider_exclude", exclude, sizeof(exclude)),
                            mca_btl_ofi_params.provider_exclude, NULL);
        return NULL;
    }
    if (!mca_btl_ofi_parse_filter(&filter)) {
        goto out;
    }

    /* Every RDM provider with RMA and atomics, or with RMA and FI_MSG to carry what it lacks,
     * whatever its MR needs: for messages. Only the one provider the user names, where that
     * is one; where libfabric has nothing that name stands for, every provider again, so
     * that the message below names what there is. */
    mca_btl_ofi_hint_set(filter.include);
    all = mca_btl_ofi_getinfo(&all_modes, enable_mpi_threads);
    msgs = mca_btl_ofi_getinfo(&msg_modes, enable_mpi_threads);
    if (NULL != mca_btl_ofi_hint && !mca_btl_ofi_lists_name(filter.include[0], all, msgs)) {
        fi_freeinfo(all);
        fi_freeinfo(msgs);
        mca_btl_ofi_hint_set(NULL);
        all = mca_btl_ofi_getinfo(&all_modes, enable_mpi_threads);
        msgs = mca_btl_ofi_getinfo(&msg_modes, enable_mpi_threads);
    }
    if (!mca_btl_ofi_check_include(&filter, all, msgs) ||
        !mca_btl_ofi_check_domains(&filter, all, msgs)) {
        goto out;
    }

    chosen = mca_btl_ofi_select(&filter, enable_mpi_threads, &declined);
    if (NULL == chosen) {
        if (NULL == passed_over && !declined) {
            mca_btl_ofi_explain(&filter, all);
        }
        goto out;
    }

    opal_output_verbose(20, mca_btl_ofi_output, MCA_BTL_OFI_LOG "trying provider %s",
                        chosen->fabric_attr->prov_name);
out:
    mca_btl_ofi_hint_set(NULL);
    fi_freeinfo(all);
    fi_freeinfo(msgs);
    opal_argv_free(filter.include);
    opal_argv_free(filter.exclude);
    opal_argv_free(filter.domain_include);
    opal_argv_free(filter.domain_exclude);
    return chosen;
}

struct fi_info *mca_btl_ofi_discover_local(bool enable_mpi_threads, const char *provider)
{
    char *names[2] = {(char *)provider, NULL};
    const mca_btl_ofi_filter_t filter = {.include = names};
    bool declined = false;
    struct fi_info *chosen;

    mca_btl_ofi_hint_set(names);
    chosen = mca_btl_ofi_select(&filter, enable_mpi_threads, &declined);
    mca_btl_ofi_hint_set(NULL);
    return chosen;
}

int mca_btl_ofi_discover_nics(bool enable_mpi_threads, const struct fi_info *front,
                              struct fi_info **out, int max)
{
    char *provider[2] = {front->fabric_attr->prov_name, NULL};
    mca_btl_ofi_filter_t filter = {.include = provider, .no_loopback = true};
    bool declined = false;
    int found = 0;

    if (!mca_btl_ofi_parse_domains("domain_include", mca_btl_ofi_params.domain_include,
                                   &filter.domain_include) ||
        !mca_btl_ofi_parse_domains("domain_exclude", mca_btl_ofi_params.domain_exclude,
                                   &filter.domain_exclude)) {
        goto out;
    }
    opal_argv_append_nosize(&filter.skip_domains, front->domain_attr->name);
    mca_btl_ofi_hint_set(provider);
    while (found < max) {
        struct fi_info *info = mca_btl_ofi_select(&filter, enable_mpi_threads, &declined);

        if (NULL == info) {
            break;
        }
        if (0 != strcmp(info->fabric_attr->prov_name, front->fabric_attr->prov_name)) {
            fi_freeinfo(info); /* another stack over the same core: not this provider */
            break;
        }
        opal_argv_append_nosize(&filter.skip_domains, info->domain_attr->name);
        out[found++] = info;
    }
out:
    mca_btl_ofi_hint_set(NULL);
    opal_argv_free(filter.domain_include);
    opal_argv_free(filter.domain_exclude);
    opal_argv_free(filter.skip_domains);
    return found;
}
