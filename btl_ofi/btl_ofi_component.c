/*
 * btl-ofi component: registration, open/close, init and progress.
 * Orchestration only; the work lives in the other files (btl_ofi_params.c
 * holds the parameters, btl_ofi_pvar.c the counters).
 */

#include "btl_ofi_component.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/argv.h"

#include "btl_ofi_atomics.h"
#include "btl_ofi_discovery.h"
#include "btl_ofi_module_setup.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_report.h"

static int mca_btl_ofi_component_register(void);
static int mca_btl_ofi_component_open(void);
static int mca_btl_ofi_component_close(void);
static mca_btl_base_module_t **
mca_btl_ofi_component_init(int *num_btls, bool enable_progress_threads, bool enable_mpi_threads);
static int mca_btl_ofi_component_progress(void);

/* clang-format off */
mca_btl_ofi_component_t mca_btl_ofi_component = {
    .super = {
        .btl_version = {
            MCA_BTL_OFI_BASE_VERSION,
            .mca_component_name = MCA_BTL_OFI_COMPONENT_NAME,
            MCA_BASE_MAKE_VERSION(component, MCA_BTL_OFI_MAJOR_VERSION,
                                  MCA_BTL_OFI_MINOR_VERSION, MCA_BTL_OFI_RELEASE_VERSION),
            .mca_open_component = mca_btl_ofi_component_open,
            .mca_close_component = mca_btl_ofi_component_close,
            .mca_register_component_params = mca_btl_ofi_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = mca_btl_ofi_component_init,
        .btl_progress = mca_btl_ofi_component_progress,
    },
};
/* clang-format on */

#ifdef MCA_BTL_OFI_COMPONENT_SYMBOL
/* Open MPI finds a component in its DSO by the symbol mca_btl_<name>_component. */
extern mca_btl_ofi_component_t MCA_BTL_OFI_COMPONENT_SYMBOL
    __attribute__((alias("mca_btl_ofi_component"), visibility("default")));
#endif

static int mca_btl_ofi_component_register(void)
{
    const mca_base_component_t *component = &mca_btl_ofi_component.super.btl_version;

    mca_btl_ofi_params_register(component);
    (void)mca_btl_ofi_pvar_register(component);

    /* btl_ofi_latency, _bandwidth, _put_limit, ... from the module template. Registering
     * drops MCA_BTL_FLAGS_ATOMIC_OPS from a template without atomic flags
     * (mca_btl_base_param_verify): it names the most a rail serves, each rail's probe less. */
    mca_btl_ofi_module_template.super.btl_atomic_flags = mca_btl_ofi_atomics_most();
    return mca_btl_base_param_register(&mca_btl_ofi_component.super.btl_version,
                                       &mca_btl_ofi_module_template.super);
}

static int mca_btl_ofi_component_open(void)
{
    mca_btl_ofi_component.module = NULL;
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_component_close(void)
{
    return OPAL_SUCCESS;
}

/* btl_ofi_mr_mode is parsed by discovery, which applies it; the others by params. */
static bool mca_btl_ofi_params_ok(void)
{
    char name[64];

    if (OPAL_SUCCESS != mca_btl_ofi_mr_mode_parse(mca_btl_ofi_params.mr_mode_text,
                                                  &mca_btl_ofi_params.mr_mode_allowed)) {
        mca_btl_ofi_decline("bad-mr-mode", mca_btl_ofi_param_name("mr_mode", name, sizeof(name)),
                            mca_btl_ofi_params.mr_mode_text, NULL);
        return false;
    }
    return mca_btl_ofi_params_valid();
}

/* The component knows its live module (progress uses it): finalize forgets it first. */
static int mca_btl_ofi_component_finalize_module(struct mca_btl_base_module_t *btl)
{
    if ((mca_btl_ofi_module_t *)btl == mca_btl_ofi_component.module) {
        mca_btl_ofi_component.module = NULL;
    }
    return mca_btl_ofi_finalize(btl);
}

/*
 * A module on one provider's network rail. NULL, with everything undone, when that failed;
 * *no_cswap says whether it failed only because the endpoint can serve no atomics (no 64-bit
 * compare-and-swap, and no messages for them where casless_as_messages allows them; nothing
 * recorded then: another provider may serve).
 */
static mca_btl_ofi_module_t *mca_btl_ofi_module_setup(struct fi_info *info,
                                                      bool casless_as_messages, bool *no_cswap)
{
    mca_btl_ofi_module_t *module = mca_btl_ofi_module_new(&mca_btl_ofi_component.super);

    *no_cswap = false;
    if (NULL == module) {
        fi_freeinfo(info);
        return NULL;
    }
    module->super.btl_finalize = mca_btl_ofi_component_finalize_module;
    if (OPAL_SUCCESS !=
        mca_btl_ofi_module_open_network(module, info, casless_as_messages, no_cswap)) {
        mca_btl_ofi_finalize(&module->super);
        return NULL;
    }
    return module;
}

/*
 * A process that declines still returns a module: the reporter, which shows the
 * reason once per job after the modex (btl_ofi_report.h) and carries nothing.
 *
 * A provider whose endpoint turns out to have no 64-bit compare-and-swap,
 * though it named FI_ATOMIC, is passed over for the next one discovery offers
 * (libfabric 1.17 lists "net", which has no atomic at all, before net;ofi_rxm).
 * When every provider was passed over so, the first is taken again with its
 * atomics sent as messages (btl_ofi_am.c), unless btl_ofi_atomics=native.
 */
static mca_btl_base_module_t **
mca_btl_ofi_component_init(int *num_btls, bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_btl_ofi_module_t *module = NULL;
    mca_btl_base_module_t **modules;
    char **passed_over = NULL;
    struct fi_info *info;
    bool no_cswap = false;

    (void)enable_progress_threads;
    *num_btls = 0;

    if (!mca_btl_ofi_params_ok()) {
        return mca_btl_ofi_reporter(&mca_btl_ofi_component.super, num_btls);
    }

    while (NULL != (info = mca_btl_ofi_discover(enable_mpi_threads, passed_over))) {
        char *name = strdup(info->fabric_attr->prov_name);

        module = mca_btl_ofi_module_setup(info, false, &no_cswap);
        if (NULL != module || !no_cswap || NULL == name) {
            /* done, or declined with its reason recorded (or out of memory) */
            free(name);
            break;
        }
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "passing over %s: it grants FI_ATOMIC, but its "
                                            "endpoint has no 64-bit compare-and-swap",
                            name);
        opal_argv_append_nosize(&passed_over, name);
        free(name);
    }
    if (NULL == module && no_cswap && MCA_BTL_OFI_PATH_NATIVE != mca_btl_ofi_params.atomics_path &&
        NULL != (info = mca_btl_ofi_discover(enable_mpi_threads, NULL))) {
        /* no provider with a compare-and-swap: the best one, its atomics as messages */
        module = mca_btl_ofi_module_setup(info, true, &no_cswap);
    }
    if (NULL == module) {
        if (no_cswap) {
            /* the last provider tried, and every one before it, had no compare-and-swap */
            char *names = passed_over ? opal_argv_join(passed_over, ',') : NULL;
            mca_btl_ofi_decline("atomics-missing", names ? names : "(out of memory)", NULL);
            free(names);
        }
        opal_argv_free(passed_over);
        return mca_btl_ofi_reporter(&mca_btl_ofi_component.super, num_btls);
    }
    opal_argv_free(passed_over);
    mca_btl_ofi_discover_log(module->network->info, module->network->atomics_as_messages,
                             module->network->gets_as_messages);
    mca_btl_ofi_module_add_rails(module, enable_mpi_threads);

    modules = malloc(sizeof(*modules));
    if (NULL == modules) {
        mca_btl_ofi_finalize(&module->super);
        return NULL;
    }
    mca_btl_ofi_component.module = module;
    modules[0] = &module->super;
    *num_btls = 1;
    return modules;
}

static int mca_btl_ofi_component_progress(void)
{
    mca_btl_ofi_module_t *module = mca_btl_ofi_component.module;

    return NULL == module ? 0 : mca_btl_ofi_module_progress(module);
}
