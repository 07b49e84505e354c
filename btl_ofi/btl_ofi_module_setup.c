/*
 * btl-ofi module setup: the module template (capabilities and function table), the
 * rails it opens and how it hears from them (progress across rails, a failed
 * NIC), and finalize.
 */

#include "btl_ofi_module_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "btl_ofi_discovery.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_pace.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_rail_setup.h"
#include "btl_ofi_reg_pool.h"
#include "btl_ofi_report.h"
#include "btl_ofi_route.h"

/* The flags this BTL can honour; a btl_ofi_flags setting cannot add others. */
#define MCA_BTL_OFI_FLAGS_SERVED                                                                   \
    (MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS |                   \
     MCA_BTL_FLAGS_RDMA_FLUSH | MCA_BTL_OFI_FLAG_REMOTE_COMPLETION)

/* clang-format off */
mca_btl_ofi_module_t mca_btl_ofi_module_template = {
    .super = {
        .btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW,
        /* osc/rdma takes the qualifying BTL with the lowest latency (btl_ofi_compat.h) */
        .btl_latency = MCA_BTL_OFI_LATENCY,
        .btl_bandwidth = 10000,
        .btl_flags = MCA_BTL_OFI_FLAGS_SERVED,
        .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
        .btl_get_limit = SIZE_MAX,
        .btl_put_limit = SIZE_MAX,
        .btl_get_alignment = 0,
        .btl_put_alignment = 0,
        /* Local buffers need no registration; 0 under FI_MR_LOCAL (device.c). */
        .btl_get_local_registration_threshold = SIZE_MAX,
        .btl_put_local_registration_threshold = SIZE_MAX,

        .btl_add_procs = mca_btl_ofi_add_procs,
        .btl_del_procs = mca_btl_ofi_del_procs,
        .btl_finalize = mca_btl_ofi_finalize,
        .btl_put = mca_btl_ofi_put,
        .btl_get = mca_btl_ofi_get,
        .btl_atomic_op = mca_btl_ofi_aop,
        .btl_atomic_fop = mca_btl_ofi_afop,
        .btl_atomic_cswap = mca_btl_ofi_acswap,
        .btl_register_mem = mca_btl_ofi_register_mem,
        .btl_deregister_mem = mca_btl_ofi_deregister_mem,
        .btl_flush = mca_btl_ofi_flush,
        .btl_register_error = mca_btl_ofi_register_error,
    },
};
/* clang-format on */

/* The modex keys of the rails beside the network one (handle slots 1..). */
static const char *const mca_btl_ofi_rail_suffix[MCA_BTL_OFI_SLOTS] = {
    "", "-local", "-nic1", "-nic2", "-nic3",
};

mca_btl_ofi_module_t *mca_btl_ofi_module_new(mca_btl_base_component_t *component)
{
    mca_btl_ofi_module_t *module = malloc(sizeof(*module));

    if (NULL == module) {
        return NULL;
    }
    /* its flags and limits are the network rail's (mca_btl_ofi_take_caps) */
    memcpy(module, &mca_btl_ofi_module_template, sizeof(*module));
    module->super.btl_component = component;
    return module;
}

/* What every rail is asked for at most: the template's settings (btl_ofi_flags and the
 * limits a user may set). */
static mca_btl_ofi_rail_caps_t mca_btl_ofi_caps_asked(void)
{
    const mca_btl_base_module_t *asked = &mca_btl_ofi_module_template.super;

    return (mca_btl_ofi_rail_caps_t){
        .flags = asked->btl_flags & MCA_BTL_OFI_FLAGS_SERVED,
        .atomic_flags = asked->btl_atomic_flags,
        .put_limit = asked->btl_put_limit,
        .get_limit = asked->btl_get_limit,
        .put_alignment = asked->btl_put_alignment,
        .get_alignment = asked->btl_get_alignment,
        .local_reg_threshold = asked->btl_put_local_registration_threshold,
    };
}

/* The hooks every rail of module reports through; progress across rails is set once there
 * are several (mca_btl_ofi_module_add_rails). */
static void mca_btl_ofi_rail_failed(void *owner, mca_btl_ofi_rail_t *rail, const char *why,
                                    long waiting);

static mca_btl_ofi_rail_config_t mca_btl_ofi_rail_config(mca_btl_ofi_module_t *module, int slot)
{
    return (mca_btl_ofi_rail_config_t){
        .hooks = {.btl = &module->super, .failed = mca_btl_ofi_rail_failed, .owner = module},
        .index = slot,
        .modex_suffix = mca_btl_ofi_rail_suffix[slot],
        .publish_on_node = 1 == slot,
        .count_local = 1 == slot,
        .watch_failures = 1 != slot,
        .paced = 2 <= slot,
        .shares_local_handles = 1 == slot,
    };
}

/* A job with processes on other nodes than this one: the same answer in every process. */
static bool mca_btl_ofi_across_nodes(bool local_only)
{
    uint32_t job_size = mca_btl_ofi_compat_job_size();

    return !local_only && 0 != job_size &&
           job_size > (uint32_t)opal_process_info.num_local_peers + 1;
}

/* The node-local provider to open beside a network provider named prov_name, or NULL:
 * btl_ofi_local_provider names one, prov_name reaches other nodes and is not it, and the job
 * has peers both on this node and on others. */
static const char *mca_btl_ofi_local_wanted(const char *prov_name, bool local_only)
{
    const char *provider = mca_btl_ofi_params.local_provider;

    if (NULL == provider || '\0' == provider[0] || 0 == strcasecmp(provider, "none") ||
        0 == strcasecmp(provider, prov_name) || !mca_btl_ofi_across_nodes(local_only)) {
        return NULL;
    }
    return provider;
}

/* Whether puts and gets may be striped over several NICs in this job (the same answer in
 * every process). */
static bool mca_btl_ofi_stripes_wanted(bool local_only)
{
    return 0 < mca_btl_ofi_params.stripe_min && mca_btl_ofi_across_nodes(local_only);
}

/* The network rail takes what it reports as the module's own. */
static void mca_btl_ofi_take_caps(mca_btl_ofi_module_t *module, const mca_btl_ofi_rail_t *rail)
{
    mca_btl_base_module_t *super = &module->super;

    super->btl_flags = rail->caps.flags;
    super->btl_atomic_flags = rail->caps.atomic_flags;
    super->btl_put_limit = rail->caps.put_limit;
    super->btl_get_limit = rail->caps.get_limit;
    super->btl_put_alignment = rail->caps.put_alignment;
    super->btl_get_alignment = rail->caps.get_alignment;
    super->btl_put_local_registration_threshold = rail->caps.local_reg_threshold;
    super->btl_get_local_registration_threshold = rail->caps.local_reg_threshold;
}

/* What every rail in use takes. */
static void mca_btl_ofi_narrow_caps(mca_btl_ofi_module_t *module, const mca_btl_ofi_rail_t *rail)
{
    mca_btl_base_module_t *super = &module->super;

    if (rail->caps.put_limit < super->btl_put_limit) {
        super->btl_put_limit = rail->caps.put_limit;
    }
    if (rail->caps.get_limit < super->btl_get_limit) {
        super->btl_get_limit = rail->caps.get_limit;
    }
    if (rail->caps.put_alignment > super->btl_put_alignment) {
        super->btl_put_alignment = rail->caps.put_alignment;
    }
    if (rail->caps.get_alignment > super->btl_get_alignment) {
        super->btl_get_alignment = rail->caps.get_alignment;
    }
}

int mca_btl_ofi_module_open_network(mca_btl_ofi_module_t *module, struct fi_info *info,
                                    bool casless_as_messages, bool *no_cswap)
{
    mca_btl_ofi_rail_config_t config = mca_btl_ofi_rail_config(module, 0);
    const mca_btl_ofi_rail_caps_t asked = mca_btl_ofi_caps_asked();
    const struct fi_domain_attr *domain;

    /* read at a pace (and so opened for a wake-up) where rails will be beside it; whether
     * the provider reaches only this node is not known before it is opened */
    config.paced = NULL != mca_btl_ofi_local_wanted(info->fabric_attr->prov_name, false) ||
                   mca_btl_ofi_stripes_wanted(false);
    config.casless_as_messages = casless_as_messages;
    module->network = mca_btl_ofi_rail_open(info, &config, &asked, no_cswap);
    if (NULL == module->network) {
        return OPAL_ERROR;
    }
    mca_btl_ofi_take_caps(module, module->network);
    domain = module->network->info->domain_attr;
    mca_btl_ofi_counter_set(MCA_BTL_OFI_CNT_MR_MODE, (uint64_t)domain->mr_mode);
    mca_btl_ofi_counter_set(MCA_BTL_OFI_CNT_KEY_SIZE, domain->mr_key_size);
    mca_btl_ofi_counter_set(MCA_BTL_OFI_CNT_NICS, 1);
    return OPAL_SUCCESS;
}

/* Whether the network rail's atomics are applied by the target's CPU with atomic
 * instructions (libfabric's util atomics under ofi_rxm, tcp and shm, or btl-ofi's messages):
 * every part of the provider's name is such a provider. Then atomics from this node and from
 * other nodes on one word stay atomic with each other when those to peers on this node take
 * the node-local rail (NOTES.txt section 2c); a NIC's own atomics are not atomic with the
 * CPU's. */
static bool mca_btl_ofi_cpu_atomics(const mca_btl_ofi_rail_t *network)
{
    static const char *const software[] = {"tcp", "sockets", "udp",     "net",
                                           "shm", "ofi_rxm", "ofi_rxd", NULL};
    const char *part = network->info->fabric_attr->prov_name;

    if (network->atomics_as_messages) {
        return true;
    }
    while (NULL != part && '\0' != *part) {
        const char *end = strchr(part, ';');
        size_t len = end ? (size_t)(end - part) : strlen(part);
        bool known = false;

        for (int i = 0; NULL != software[i] && !known; ++i) {
            known = strlen(software[i]) == len && 0 == strncasecmp(part, software[i], len);
        }
        if (!known) {
            return false;
        }
        part = end ? end + 1 : NULL;
    }
    return true;
}

/* The node-local rail in use: the MPI_T control variable and the verbose line. */
static void mca_btl_ofi_record_local(const mca_btl_ofi_module_t *module)
{
    const struct fi_info *info = module->local->info;
    const char *network = module->network->info->fabric_attr->prov_name;
    char selected[512], *copy;

    /* read through MPI_T (btl_ofi_local_selected): the variable system frees it */
    snprintf(selected, sizeof(selected), "%s fabric %s domain %s", info->fabric_attr->prov_name,
             info->fabric_attr->name, info->domain_attr->name);
    if (NULL != (copy = strdup(selected))) {
        mca_btl_ofi_params.local_selected = copy;
    }
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "peers on this node over %s (fabric %s, domain %s), "
                                        "atomics to them over %s; other peers over %s",
                        info->fabric_attr->prov_name, info->fabric_attr->name,
                        info->domain_attr->name,
                        module->local_atomics ? info->fabric_attr->prov_name : network, network);
}

/* The node-local rail, where this process has peers on its node that are wanted there. */
static void mca_btl_ofi_open_local(mca_btl_ofi_module_t *module, const char *provider,
                                   bool enable_mpi_threads)
{
    const mca_btl_ofi_rail_caps_t asked = mca_btl_ofi_caps_asked();
    const mca_btl_ofi_rail_config_t config = mca_btl_ofi_rail_config(module, 1);
    const uint32_t atomic_flags = module->super.btl_atomic_flags;
    const int choice = mca_btl_ofi_params.local_atomics;
    struct fi_info *info;
    bool no_cswap;

    info = mca_btl_ofi_discover_local(enable_mpi_threads, provider);
    if (NULL == info) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "node-local provider %s not found: peers on "
                                            "this node use %s",
                            provider, module->network->info->fabric_attr->prov_name);
        return;
    }
    module->local = mca_btl_ofi_rail_open(info, &config, &asked, &no_cswap);
    if (NULL == module->local) {
        return;
    }
    module->local_atomics =
        MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL == choice ||
        (MCA_BTL_OFI_LOCAL_ATOMICS_AUTO == choice && mca_btl_ofi_cpu_atomics(module->network));
    if (module->local_atomics &&
        (module->local->caps.atomic_flags & atomic_flags) != atomic_flags) {
        /* it lacks an atomic Open MPI will send: all of them take the network */
        module->local_atomics = false;
    }
    if (module->local_atomics && !(module->local->caps.flags & MCA_BTL_FLAGS_ATOMIC_OPS)) {
        /* its non-fetching atomics would not prove themselves: none advertised */
        module->super.btl_flags &= ~MCA_BTL_FLAGS_ATOMIC_OPS;
    }
    mca_btl_ofi_narrow_caps(module, module->local);
    mca_btl_ofi_record_local(module);
}

/* Further NICs of the network provider, in the order found (the same on every node of a
 * uniform cluster): parts of large puts and gets to peers on other nodes. */
static void mca_btl_ofi_open_nics(mca_btl_ofi_module_t *module, bool enable_mpi_threads)
{
    const mca_btl_ofi_rail_caps_t asked = mca_btl_ofi_caps_asked();
    struct fi_info *infos[MCA_BTL_OFI_STRIPES_MAX - 1];
    int found;
    bool no_cswap;

    found = mca_btl_ofi_discover_nics(enable_mpi_threads, module->network->info, infos,
                                      MCA_BTL_OFI_STRIPES_MAX - 1);
    for (int i = 0; i < found; ++i) {
        const mca_btl_ofi_rail_config_t config =
            mca_btl_ofi_rail_config(module, 2 + module->nic_count);
        mca_btl_ofi_rail_t *nic = mca_btl_ofi_rail_open(infos[i], &config, &asked, &no_cswap);

        if (NULL == nic) {
            continue;
        }
        module->nics[module->nic_count++] = nic;
        mca_btl_ofi_narrow_caps(module, nic);
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "striping puts and gets of %d bytes or more to peers "
                                            "on other nodes over %s (fabric %s) too",
                            mca_btl_ofi_params.stripe_min, nic->info->domain_attr->name,
                            nic->info->fabric_attr->name);
    }
    module->stripe_min = 0 != module->nic_count ? (size_t)mca_btl_ofi_params.stripe_min : 0;
}

static int mca_btl_ofi_progress_others(void *owner, const mca_btl_ofi_rail_t *except);

void mca_btl_ofi_module_add_rails(mca_btl_ofi_module_t *module, bool enable_mpi_threads)
{
    mca_btl_ofi_rail_t *network = module->network;
    const char *provider =
        mca_btl_ofi_local_wanted(network->info->fabric_attr->prov_name, network->local_only);
    const bool stripes = mca_btl_ofi_stripes_wanted(network->local_only);

    if (NULL == provider && !stripes) {
        return;
    }
    /* Handles of every slot the job may use, in every process of the job (the conditions
     * above are the same everywhere), also where this one has fewer rails (those slots stay
     * empty). */
    module->super.btl_registration_handle_size =
        (stripes ? MCA_BTL_OFI_SLOTS : 2) * sizeof(mca_btl_base_registration_handle_t);
    mca_btl_ofi_decline_hold(true);
    if (NULL != provider && opal_process_info.num_local_peers > 0) {
        mca_btl_ofi_open_local(module, provider, enable_mpi_threads);
    }
    if (stripes) {
        mca_btl_ofi_open_nics(module, enable_mpi_threads);
    }
    mca_btl_ofi_decline_hold(false);
    mca_btl_ofi_counter_set(MCA_BTL_OFI_CNT_NICS, 1 + (uint64_t)module->nic_count);
    if (NULL != module->local || 0 != module->nic_count) {
        /* a rail that waits serves the others too (mca_btl_ofi_progress_wait) */
        network->config.hooks.progress_others = mca_btl_ofi_progress_others;
        if (NULL != module->local) {
            module->local->config.hooks.progress_others = mca_btl_ofi_progress_others;
        }
        for (int i = 0; i < module->nic_count; ++i) {
            module->nics[i]->config.hooks.progress_others = mca_btl_ofi_progress_others;
        }
    }
}

/* Nothing of this rail's in flight and no memory a peer may reach (no window): nothing can
 * complete, and no peer can need this process's progress (NOTES.txt 4). Open MPI calls the
 * component's progress on every pass of every program, one-sided or not. */
static bool mca_btl_ofi_rail_idle(mca_btl_ofi_rail_t *rail)
{
    return !mca_btl_ofi_rail_busy(rail) &&
           0 == atomic_load_explicit(&rail->remote_regs, memory_order_relaxed);
}

int mca_btl_ofi_module_progress(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_rail_t *network = module->network;
    int events = 0;

    if (NULL != module->local) {
        events = mca_btl_ofi_rail_progress_pair(module->local, network,
                                                !mca_btl_ofi_rail_idle(module->local),
                                                !mca_btl_ofi_rail_idle(network));
    } else if (!mca_btl_ofi_rail_idle(network)) {
        events = mca_btl_ofi_rail_progress(network);
    }
    for (int i = 0; i < module->nic_count; ++i) {
        if (!mca_btl_ofi_rail_idle(module->nics[i])) {
            events += mca_btl_ofi_rail_progress_paced(module->nics[i], NULL, 0);
        }
    }
    return events;
}

/* One pass over every rail of module but except (the one that waits). */
static int mca_btl_ofi_progress_others(void *owner, const mca_btl_ofi_rail_t *except)
{
    mca_btl_ofi_module_t *module = owner;
    mca_btl_ofi_rail_t *network = module->network, *local = module->local;
    int events = 0;

    if (network != except && network->initialized) {
        events += NULL != local ? mca_btl_ofi_rail_progress_paced(network, local, 0)
                                : mca_btl_ofi_rail_progress(network);
    }
    if (NULL != local && local != except && local->initialized) {
        events += mca_btl_ofi_rail_progress(local);
    }
    for (int i = 0; i < module->nic_count; ++i) {
        /* (finalize closes them one by one: a closed one is NULL) */
        if (NULL != module->nics[i] && module->nics[i] != except && module->nics[i]->initialized) {
            events += mca_btl_ofi_rail_progress_paced(module->nics[i], NULL, 0);
        }
    }
    return events;
}

/* A rail's NIC failed (btl_ofi_fault.c): a further NIC's parts of striped transfers move to
 * the first NIC (btl_ofi_stripe.c); the first NIC's failure ends one-sided communication,
 * through Open MPI's error callback where the PML gave one. */
static void mca_btl_ofi_rail_failed(void *owner, mca_btl_ofi_rail_t *rail, const char *why,
                                    long waiting)
{
    mca_btl_ofi_module_t *module = owner;
    const struct fi_info *info = rail->info;
    const bool further = rail != module->network;
    char count[32], param[64], text[320];

    snprintf(count, sizeof(count), "%ld", waiting);
    if (further) {
        mca_btl_ofi_report_now("nic-failed-moved", info->domain_attr->name,
                               info->fabric_attr->prov_name, info->fabric_attr->name, why, count,
                               NULL);
    } else {
        mca_btl_ofi_report_now(
            NULL != module->error_cb ? "nic-failed-fatal" : "nic-failed-stuck",
            info->domain_attr->name, info->fabric_attr->prov_name, info->fabric_attr->name, why,
            count, mca_btl_ofi_param_name("domain_exclude", param, sizeof(param)), NULL);
    }
    snprintf(text, sizeof(text),
             "btl-ofi: NIC %s (%s) failed: %s; one-sided communication through it cannot go on",
             info->domain_attr->name, info->fabric_attr->prov_name, why);
    mca_btl_ofi_rail_shut(rail);
    if (!further && NULL != module->error_cb) {
        module->error_cb(&module->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, text);
    }
}

int mca_btl_ofi_register_error(struct mca_btl_base_module_t *btl,
                               mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_ofi_module_t *)btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

int mca_btl_ofi_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;

    if (NULL != module->network) {
        mca_btl_ofi_rail_drain(module->network);
    }
    /* the rails beside the network one first: their registrations are named by the network
     * rail's, which are only closed after them */
    if (NULL != module->local) {
        mca_btl_ofi_rail_close(module->local);
        module->local = NULL;
    }
    for (int i = 0; i < module->nic_count; ++i) {
        mca_btl_ofi_rail_close(module->nics[i]);
        module->nics[i] = NULL;
    }
    module->nic_count = 0;
    if (NULL != module->network) {
        mca_btl_ofi_rail_close(module->network);
        module->network = NULL;
    }
    free(module);
    mca_btl_ofi_reg_pool_fini();
    return OPAL_SUCCESS;
}
