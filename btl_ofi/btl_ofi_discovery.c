/*
 * btl-ofi discovery: which libfabric provider to use, and on what terms.
 *
 * Asks fi_getinfo (btl_ofi_hints.h) for each capability set in turn, best
 * first, and takes the first entry the provider and domain lists let through
 * (btl_ofi_filter.h), spread over the domains of its fabric; then, for that
 * provider and domain, the MR mode and FI_HMEM terms that cost least. When
 * nothing qualifies, btl_ofi_explain.h records why. A provider without atomics
 * or RMA read is taken, after every provider that has both, where it grants
 * FI_MSG: what it lacks then travels as messages (btl_ofi_am.c).
 */

#include "btl_ofi_discovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/argv.h"
#include "opal/util/proc.h"

#include "btl_ofi_explain.h"
#include "btl_ofi_filter.h"
#include "btl_ofi_hints.h"
#include "btl_ofi_params.h"
#include "btl_ofi_topo.h"

/* How this process's domain was chosen among several (for the "selected provider" line). */
static char mca_btl_ofi_domain_choice[400];

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
    if (!mca_btl_ofi_filter_wanted(filter, cur) || !mca_btl_ofi_alike(cur, first, false) ||
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
            if (!mca_btl_ofi_filter_wanted(filter, cur)) {
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
        mca_btl_ofi_explain_unprovable(unprovable);
        *declined = true;
    }
    free(unprovable);
    return chosen;
}

/*
 * Every RDM provider with RMA and atomics (*all), and with RMA and FI_MSG to carry what it
 * lacks (*msgs), whatever its MR needs: for messages. Only the one provider the user names,
 * where that is one; where libfabric has nothing that name stands for, every provider again,
 * so that the message names what there is.
 */
static void mca_btl_ofi_getinfo_all(const mca_btl_ofi_filter_t *filter, bool enable_mpi_threads,
                                    struct fi_info **all, struct fi_info **msgs)
{
    const mca_btl_ofi_ask_t all_modes = {.mr_mode = MCA_BTL_OFI_MR_ALL};
    const mca_btl_ofi_ask_t msg_modes = {
        .caps = MCA_BTL_OFI_CAPS_RMA | MCA_BTL_OFI_CAPS_MSG,
        .mr_mode = MCA_BTL_OFI_MR_ALL,
    };
    bool one = mca_btl_ofi_hint_set(filter->include);

    *all = mca_btl_ofi_getinfo(&all_modes, enable_mpi_threads);
    *msgs = mca_btl_ofi_getinfo(&msg_modes, enable_mpi_threads);
    if (one && !mca_btl_ofi_lists_name(filter->include[0], *all, *msgs)) {
        fi_freeinfo(*all);
        fi_freeinfo(*msgs);
        mca_btl_ofi_hint_set(NULL);
        *all = mca_btl_ofi_getinfo(&all_modes, enable_mpi_threads);
        *msgs = mca_btl_ofi_getinfo(&msg_modes, enable_mpi_threads);
    }
}

struct fi_info *mca_btl_ofi_discover(bool enable_mpi_threads, char **passed_over)
{
    mca_btl_ofi_filter_t filter = {.passed_over = passed_over};
    struct fi_info *all = NULL, *msgs = NULL, *chosen = NULL;
    bool declined = false;

    if (!mca_btl_ofi_filter_parse(&filter)) {
        goto out;
    }
    mca_btl_ofi_getinfo_all(&filter, enable_mpi_threads, &all, &msgs);
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
