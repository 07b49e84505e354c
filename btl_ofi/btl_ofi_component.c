/*
 * btl-ofi component: MCA parameters, open/close, init and progress.
 * Orchestration only; the work lives in the other files.
 */

#include "btl_ofi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

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

const mca_base_var_enum_value_t mca_btl_ofi_completion_values[] = {
    {MCA_BTL_OFI_COMPLETION_AUTO, "auto"},
    {MCA_BTL_OFI_COMPLETION_DELIVERY, "delivery"},
    {MCA_BTL_OFI_COMPLETION_READ_PROOF, "read_proof"},
    {MCA_BTL_OFI_COMPLETION_LOCAL, "local"},
    {0, NULL},
};

/*
 * Integer parameters. They are registered as strings and parsed here, because
 * Open MPI reads a non-numeric value of an int variable as the number its
 * leading digits make ("lots" -> 0) without a word. A value that is not an
 * integer in [min, max] disables the component with a message.
 */
typedef struct mca_btl_ofi_int_param_t {
    const char *name;
    const char *help;
    const char *default_text;
    int min, max;
    int *value; /**< parsed at init */
    char *text; /**< MCA storage */
} mca_btl_ofi_int_param_t;

static mca_btl_ofi_int_param_t mca_btl_ofi_int_params[] = {
    {
        .name = "progress_batch",
        .help = "Completion-queue entries read per progress call",
        .default_text = "32",
        .min = 1,
        .max = MCA_BTL_OFI_MAX_CQ_BATCH,
        .value = &mca_btl_ofi_component.progress_batch,
    },
    {
        .name = "op_free_list_max",
        .help = "Most operation contexts kept at once (-1: unlimited); a full list makes posts "
                "return OPAL_ERR_OUT_OF_RESOURCE",
        .default_text = "-1",
        .min = -1,
        .max = 1 << 24,
        .value = &mca_btl_ofi_component.op_free_list_max,
    },
    {
        .name = "inject_eagain",
        .help = "Debug fault injection: per 1000 puts, gets and atomics, how many are refused "
                "as if the provider returned -FI_EAGAIN",
        .default_text = "0",
        .min = 0,
        .max = 1000,
        .value = &mca_btl_ofi_component.inject_eagain_permille,
    },
    {
        .name = "inject_cq_error",
        .help = "Debug fault injection (0: off): post every Nth put or get with a corrupted "
                "remote key. What follows is the provider's: sockets reports an error "
                "completion, tcp;ofi_rxm drops the connection to that peer, shm never completes "
                "the operation (see NOTES.txt)",
        .default_text = "0",
        .min = 0,
        .max = INT32_MAX,
        .value = &mca_btl_ofi_component.inject_cq_error_every,
    },
};

#define MCA_BTL_OFI_NUM_INT_PARAMS                                                                 \
    (sizeof(mca_btl_ofi_int_params) / sizeof(mca_btl_ofi_int_params[0]))

static void mca_btl_ofi_register_int_params(void)
{
    for (size_t i = 0; i < MCA_BTL_OFI_NUM_INT_PARAMS; ++i) {
        mca_btl_ofi_int_param_t *param = &mca_btl_ofi_int_params[i];
        char *help = NULL;

        param->text = (char *)param->default_text;
        if (asprintf(&help, "%s (an integer from %d to %d)", param->help, param->min, param->max) <
            0) {
            help = NULL;
        }
        (void)mca_base_component_var_register(&mca_btl_ofi_component.super.btl_version, param->name,
                                              help ? help : param->help, MCA_BASE_VAR_TYPE_STRING,
                                              NULL, 0, 0, OPAL_INFO_LVL_4,
                                              MCA_BASE_VAR_SCOPE_READONLY, &param->text);
        free(help);
    }
}

/* The whole text must be one integer in range. */
static bool mca_btl_ofi_parse_int(const mca_btl_ofi_int_param_t *param, int *out)
{
    const char *text = param->text ? param->text : "";
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 10);
    if (end == text || '\0' != *end || 0 != errno || value < param->min || value > param->max) {
        return false;
    }
    *out = (int)value;
    return true;
}

static int mca_btl_ofi_register_string(const char *name, const char *help, char **storage)
{
    *storage = NULL;
    return mca_base_component_var_register(&mca_btl_ofi_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* "auto, delivery, read_proof, local": the valid values of btl_ofi_completion (caller frees). */
static char *mca_btl_ofi_completion_names(void)
{
    size_t len = 1;
    char *names;

    for (int i = 0; NULL != mca_btl_ofi_completion_values[i].string; ++i) {
        len += strlen(mca_btl_ofi_completion_values[i].string) + 2;
    }
    names = calloc(1, len);
    for (int i = 0; NULL != names && NULL != mca_btl_ofi_completion_values[i].string; ++i) {
        strcat(strcat(names, i ? ", " : ""), mca_btl_ofi_completion_values[i].string);
    }
    return names;
}

/*
 * btl_ofi_completion is registered as a string and matched here, like the
 * integer parameters: for an unknown value Open MPI's enumerator prints its own
 * message from every rank (through the show_help path that mpirun 4.1 mishandles,
 * NOTES.txt section 11) and silently keeps the default.
 */
static bool mca_btl_ofi_parse_completion(const char *text, int *out)
{
    for (int i = 0; NULL != text && NULL != mca_btl_ofi_completion_values[i].string; ++i) {
        if (0 == strcmp(text, mca_btl_ofi_completion_values[i].string)) {
            *out = mca_btl_ofi_completion_values[i].value;
            return true;
        }
    }
    return false;
}

static void mca_btl_ofi_register_completion(void)
{
    char *names = mca_btl_ofi_completion_names(), *help = NULL;

    mca_btl_ofi_component.completion_text = "auto";
    if (0 > asprintf(&help,
                     "How remote completion is proven: delivery (FI_DELIVERY_COMPLETE on every "
                     "operation), read_proof (a read ordered after each put, and after atomics at "
                     "flush, relying on the provider's read-after-write ordering), auto (delivery "
                     "when the provider grants it, else read_proof). local is a debug setting "
                     "that breaks MPI semantics: flush then waits for local completions only "
                     "(one of: %s)",
                     names ? names : "?")) {
        help = NULL;
    }
    (void)mca_base_component_var_register(
        &mca_btl_ofi_component.super.btl_version, "completion",
        help ? help : "How remote completion is proven", MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
        OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_ofi_component.completion_text);
    free(help);
    free(names);
}

static int mca_btl_ofi_component_register(void)
{
    mca_btl_ofi_component.mr_mode_text = "virt_addr,prov_key,allocated,local,endpoint";

    mca_btl_ofi_register_string(
        "provider_include",
        "Comma-separated libfabric provider names to consider, as fi_info prints them "
        "(e.g. \"shm\" or \"tcp;ofi_rxm\"). Empty: every provider. Cannot be combined with "
        "btl_ofi_provider_exclude",
        &mca_btl_ofi_component.provider_include);
    mca_btl_ofi_register_string("provider_exclude",
                                "Comma-separated libfabric provider names never to use",
                                &mca_btl_ofi_component.provider_exclude);

    (void)mca_base_component_var_register(
        &mca_btl_ofi_component.super.btl_version, "mr_mode",
        "Memory-registration mode bits the BTL may accept from the provider: a comma-separated "
        "subset of virt_addr, prov_key, allocated, local, endpoint, or \"none\" (a number is "
        "accepted too). Without virt_addr, remote addresses travel as offsets from the "
        "registered base; without prov_key, the BTL chooses the keys; local and endpoint are "
        "taken only from a provider that demands them. raw is never served",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_component.mr_mode_text);

    mca_btl_ofi_register_completion();

    mca_btl_ofi_register_int_params();

    mca_btl_ofi_component.force_atomic_emulation = false;
    (void)mca_base_component_var_register(
        &mca_btl_ofi_component.super.btl_version, "force_atomic_emulation",
        "Debug: serve every atomic except compare-and-swap through a compare-and-swap loop, "
        "as for ops the provider lacks",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_component.force_atomic_emulation);

    (void)mca_btl_ofi_pvar_register();

    /* btl_ofi_latency, _bandwidth, _put_limit, ... from the module template. */
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

static bool mca_btl_ofi_params_valid(void)
{
    char name[64];

    if (OPAL_SUCCESS != mca_btl_ofi_mr_mode_parse(mca_btl_ofi_component.mr_mode_text,
                                                  &mca_btl_ofi_component.mr_mode_allowed)) {
        mca_btl_ofi_decline("bad-mr-mode", mca_btl_ofi_param_name("mr_mode", name, sizeof(name)),
                            mca_btl_ofi_component.mr_mode_text, NULL);
        return false;
    }
    if (!mca_btl_ofi_parse_completion(mca_btl_ofi_component.completion_text,
                                      &mca_btl_ofi_component.completion)) {
        char *names = mca_btl_ofi_completion_names();
        mca_btl_ofi_decline(
            "bad-choice", mca_btl_ofi_param_name("completion", name, sizeof(name)),
            mca_btl_ofi_component.completion_text ? mca_btl_ofi_component.completion_text : "",
            names ? names : "?", NULL);
        free(names);
        return false;
    }
    for (size_t i = 0; i < MCA_BTL_OFI_NUM_INT_PARAMS; ++i) {
        const mca_btl_ofi_int_param_t *param = &mca_btl_ofi_int_params[i];
        char min[16], max[16];

        if (!mca_btl_ofi_parse_int(param, param->value)) {
            snprintf(min, sizeof(min), "%d", param->min);
            snprintf(max, sizeof(max), "%d", param->max);
            mca_btl_ofi_decline("param-out-of-range",
                                mca_btl_ofi_param_name(param->name, name, sizeof(name)),
                                param->text ? param->text : "", min, max, NULL);
            return false;
        }
    }
    return true;
}

/*
 * A process that declines still returns a module: the reporter, which shows the
 * reason once per job after the modex (btl_ofi_report.h) and carries nothing.
 */
static mca_btl_base_module_t **
mca_btl_ofi_component_init(int *num_btls, bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_btl_ofi_module_t *module;
    mca_btl_base_module_t **modules;
    struct fi_info *info;

    (void)enable_progress_threads;
    *num_btls = 0;

    if (!mca_btl_ofi_params_valid()) {
        return mca_btl_ofi_reporter(num_btls);
    }

    info = mca_btl_ofi_discover(enable_mpi_threads);
    if (NULL == info) {
        return mca_btl_ofi_reporter(num_btls);
    }

    modules = malloc(sizeof(*modules));
    module = malloc(sizeof(*module));
    if (NULL == modules || NULL == module) {
        free(modules);
        free(module);
        fi_freeinfo(info);
        return NULL;
    }
    memcpy(module, &mca_btl_ofi_module_template, sizeof(*module));
    mca_btl_ofi_module_limit_flags(module);

    if (OPAL_SUCCESS != mca_btl_ofi_device_open(module, info) ||
        OPAL_SUCCESS != mca_btl_ofi_atomics_probe(module) ||
        OPAL_SUCCESS != mca_btl_ofi_modex_send(module)) {
        /* finalize undoes whatever part of the setup happened, and frees the module */
        mca_btl_ofi_finalize(&module->super);
        free(modules);
        return mca_btl_ofi_reporter(num_btls);
    }

    mca_btl_ofi_component.module = module;
    modules[0] = &module->super;
    *num_btls = 1;
    return modules;
}

static int mca_btl_ofi_component_progress(void)
{
    mca_btl_ofi_module_t *module = mca_btl_ofi_component.module;

    if (NULL == module || !module->initialized) {
        return 0;
    }
    return mca_btl_ofi_progress_module(module);
}
