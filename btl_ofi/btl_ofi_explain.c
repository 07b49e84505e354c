/*
 * btl-ofi explanations: why discovery chose nothing. Each reason is recorded
 * once with mca_btl_ofi_decline (btl_ofi_report.h) under a tag of
 * help-mpi-btl-ofi.txt, naming what libfabric has and what the parameters
 * asked for.
 */

#include "btl_ofi_explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/argv.h"

#include "btl_ofi_hints.h"
#include "btl_ofi_params.h"
#include "btl_ofi_report.h"

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

bool mca_btl_ofi_check_include(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
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
        if (mca_btl_ofi_filter_provider_wanted(filter, prev) &&
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

        if (!mca_btl_ofi_filter_provider_wanted(filter, cur) ||
            mca_btl_ofi_domain_before(filter, all, cur, false)) {
            continue;
        }
        used += snprintf(text + used, len - used, "%s%s", used ? ", " : "", cur->domain_attr->name);
        for (const struct fi_info *f = cur; f; f = f->next) {
            if (mca_btl_ofi_filter_provider_wanted(filter, f) &&
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
        if (mca_btl_ofi_filter_provider_wanted(filter, cur) &&
            mca_btl_ofi_domain_listed(one, cur)) {
            return true;
        }
    }
    return false;
}

bool mca_btl_ofi_check_domains(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
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

/* A provider the include list names that is known broken: decline with the reason. */
static bool mca_btl_ofi_explain_broken(const mca_btl_ofi_filter_t *filter,
                                       const struct fi_info *all)
{
    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        const char *quirk = mca_btl_ofi_quirk(cur);
        if (NULL != quirk &&
            mca_btl_ofi_list_names(filter->include, cur->fabric_attr->prov_name, false)) {
            char version[32];
            snprintf(version, sizeof(version), "%u.%u", FI_MAJOR(cur->fabric_attr->prov_version),
                     FI_MINOR(cur->fabric_attr->prov_version));
            mca_btl_ofi_decline("provider-broken", cur->fabric_attr->prov_name, version, quirk,
                                NULL);
            return true;
        }
    }
    return false;
}

/* A wanted provider asking for MR mode bits btl_ofi_mr_mode refuses: decline, naming them. */
static bool mca_btl_ofi_explain_mr_mode(const mca_btl_ofi_filter_t *filter,
                                        const struct fi_info *all)
{
    char asked[128], allowed[128], served[128], param[64];

    for (const struct fi_info *cur = all; cur; cur = cur->next) {
        uint64_t mode = (uint64_t)cur->domain_attr->mr_mode;
        if (!mca_btl_ofi_filter_wanted(filter, cur)) {
            continue;
        }
        if (mode & ~mca_btl_ofi_params.mr_mode_allowed) {
            mca_btl_ofi_decline(
                "mr-mode-declined", cur->fabric_attr->prov_name,
                mca_btl_ofi_mr_mode_str(mode, asked, sizeof(asked)),
                mca_btl_ofi_param_name("mr_mode", param, sizeof(param)),
                mca_btl_ofi_mr_mode_str(mca_btl_ofi_params.mr_mode_allowed, allowed,
                                        sizeof(allowed)),
                mca_btl_ofi_mr_mode_str(MCA_BTL_OFI_MR_SERVED, served, sizeof(served)), NULL);
            return true;
        }
    }
    return false;
}

void mca_btl_ofi_explain(const mca_btl_ofi_filter_t *filter, const struct fi_info *all)
{
    char param[3][64];
    const char *fi_provider = getenv("FI_PROVIDER");

    if (mca_btl_ofi_explain_broken(filter, all) || mca_btl_ofi_explain_mr_mode(filter, all)) {
        return;
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

void mca_btl_ofi_explain_unprovable(const char *provider)
{
    char param[2][64];

    mca_btl_ofi_decline("no-completion-proof", provider,
                        mca_btl_ofi_param_name("completion", param[0], sizeof(param[0])),
                        mca_btl_ofi_completion_setting(),
                        mca_btl_ofi_param_name("gets", param[1], sizeof(param[1])),
                        mca_btl_ofi_params.gets_text ? mca_btl_ofi_params.gets_text : "auto",
                        NULL);
}
