/*
 * btl-ofi provider and domain filters: the include/exclude lists of providers
 * and domains, parsed (a malformed one declines, btl_ofi_report.h) and matched
 * against fi_info entries the way FI_PROVIDER names providers, and the
 * providers known to break one-sided MPI.
 */

#include "btl_ofi_filter.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/util/argv.h"

#include "btl_ofi_params.h"
#include "btl_ofi_report.h"

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

const char *mca_btl_ofi_quirk(const struct fi_info *info)
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

bool mca_btl_ofi_split(const char *value, bool (*item_ok)(const char *), char ***out, char **bad)
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

bool mca_btl_ofi_in_list(char **list, const char *name)
{
    for (int i = 0; list && list[i]; ++i) {
        if (0 == strcmp(list[i], name)) {
            return true;
        }
    }
    return false;
}

bool mca_btl_ofi_names(const char *name, const char *prov_name, bool any_part)
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

bool mca_btl_ofi_list_names(char **list, const char *prov_name, bool any_part)
{
    for (int i = 0; list && list[i]; ++i) {
        if (mca_btl_ofi_names(list[i], prov_name, any_part)) {
            return true;
        }
    }
    return false;
}

bool mca_btl_ofi_lists_name(const char *name, const struct fi_info *all,
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

bool mca_btl_ofi_parse_domains(const char *which, const char *value, char ***out)
{
    char param[64], *bad = NULL;

    if (mca_btl_ofi_split(value, mca_btl_ofi_domain_item_ok, out, &bad)) {
        return true;
    }
    mca_btl_ofi_decline("malformed-domain-list",
                        mca_btl_ofi_param_name(which, param, sizeof(param)), value, bad ? bad : "",
                        NULL);
    free(bad);
    return false;
}

/* Both lists of a kind set (btl_ofi_<kind>_include and _exclude): decline with topic. */
static bool mca_btl_ofi_both_set(const char *topic, const char *kind, const char *include,
                                 const char *exclude)
{
    char name[2][32], param[2][64];

    if (NULL == include || '\0' == *include || NULL == exclude || '\0' == *exclude) {
        return false;
    }
    snprintf(name[0], sizeof(name[0]), "%s_include", kind);
    snprintf(name[1], sizeof(name[1]), "%s_exclude", kind);
    mca_btl_ofi_decline(topic, mca_btl_ofi_param_name(name[0], param[0], sizeof(param[0])),
                        include, mca_btl_ofi_param_name(name[1], param[1], sizeof(param[1])),
                        exclude, NULL);
    return true;
}

bool mca_btl_ofi_filter_parse(mca_btl_ofi_filter_t *filter)
{
    const char *include = mca_btl_ofi_params.provider_include;
    const char *dom_in = mca_btl_ofi_params.domain_include;
    const char *dom_ex = mca_btl_ofi_params.domain_exclude;

    if (mca_btl_ofi_both_set("include-exclude", "provider", include,
                             mca_btl_ofi_params.provider_exclude) ||
        mca_btl_ofi_both_set("domain-include-exclude", "domain", dom_in, dom_ex)) {
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

bool mca_btl_ofi_domain_listed(char **list, const struct fi_info *info)
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

bool mca_btl_ofi_filter_provider_wanted(const mca_btl_ofi_filter_t *filter,
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

bool mca_btl_ofi_filter_wanted(const mca_btl_ofi_filter_t *filter, const struct fi_info *info)
{
    if (!mca_btl_ofi_filter_provider_wanted(filter, info) ||
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

bool mca_btl_ofi_same_str(const char *a, const char *b)
{
    return 0 == strcmp(a ? a : "", b ? b : "");
}

bool mca_btl_ofi_loopback_only(const struct fi_info *info)
{
    const char *fabric = info->fabric_attr->name ? info->fabric_attr->name : "";
    const char *domain = info->domain_attr->name ? info->domain_attr->name : "";

    return 0 == strncmp(fabric, "127.", 4) || 0 == strcmp(fabric, "::1/128") ||
           0 == strcmp(domain, "lo");
}
