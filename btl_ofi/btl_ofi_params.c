/*
 * btl-ofi MCA parameters: where their values live, their registration, and
 * the parsing of those Open MPI would read too leniently.
 */

#include "btl_ofi_params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"

#include "btl_ofi_report.h"

mca_btl_ofi_params_t mca_btl_ofi_params;

const mca_base_var_enum_value_t mca_btl_ofi_completion_values[] = {
    {MCA_BTL_OFI_COMPLETION_AUTO, "auto"},
    {MCA_BTL_OFI_COMPLETION_DELIVERY, "delivery"},
    {MCA_BTL_OFI_COMPLETION_READ_PROOF, "read_proof"},
    {MCA_BTL_OFI_COMPLETION_LOCAL, "local"},
    {0, NULL},
};

const mca_base_var_enum_value_t mca_btl_ofi_path_values[] = {
    {MCA_BTL_OFI_PATH_AUTO, "auto"},
    {MCA_BTL_OFI_PATH_NATIVE, "native"},
    {MCA_BTL_OFI_PATH_MESSAGES, "messages"},
    {0, NULL},
};

const mca_base_var_enum_value_t mca_btl_ofi_local_atomics_values[] = {
    {MCA_BTL_OFI_LOCAL_ATOMICS_AUTO, "auto"},
    {MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL, "local"},
    {MCA_BTL_OFI_LOCAL_ATOMICS_NETWORK, "network"},
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
        .value = &mca_btl_ofi_params.progress_batch,
    },
    {
        .name = "op_free_list_max",
        .help = "Most operation contexts kept at once (-1: unlimited); a full list makes posts "
                "return OPAL_ERR_OUT_OF_RESOURCE",
        .default_text = "-1",
        .min = -1,
        .max = 1 << 24,
        .value = &mca_btl_ofi_params.op_free_list_max,
    },
    {
        .name = "atomic_nofetch_as_fetch",
        .help = "Post non-fetching atomics as fetching ones into a scratch word: -1 where the "
                "provider needs it (shm with delivery-complete, whose non-fetching atomics "
                "release an inject buffer twice and so corrupt later operations), 0 never "
                "(debug), 1 always",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.nofetch_as_fetch,
    },
    {
        .name = "put_coalesce",
        .help = "Gather small puts to a peer that already has a put in flight into one "
                "message, which the peer's progress writes into the window after checking key "
                "and bounds, and acknowledges once for all of them: -1 where every put costs a "
                "message anyway (tcp, tcp;ofi_rxm), 0 never, 1 on any provider (a lone put "
                "is an fi_write unless the peer just had a burst)",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.put_coalesce,
    },
    {
        .name = "stripe_min",
        .help = "Puts and gets of at least this many bytes to a peer on another node are split "
                "over every NIC (domain) of the provider this process uses, each part on its "
                "own endpoint and registration, where the provider offers several; 0: never. "
                "The further NICs are the provider's other domains that btl_ofi_domain_include "
                "/ _exclude allow and that reach other hosts, at most 3",
        .default_text = "262144",
        .min = 0,
        .max = INT32_MAX,
        .value = &mca_btl_ofi_params.stripe_min,
    },
    {
        .name = "idle_poll_ratio",
        .help = "Where one process uses several domains (peers on this node over "
                "btl_ofi_local_provider, further NICs): a network completion queue with "
                "nothing of this process's own in flight is left unread for this many times "
                "what one read of it costs (tcp: a system call; a NIC: a memory read), so its "
                "reads take at most 1/(N+1) of a loop that waits for on-node operations. A "
                "peer on another node whose operations this process's progress applies (tcp, "
                "sockets) is served that much later at most, and at every pass while its "
                "operations keep coming. 0: read at every pass",
        .default_text = "8",
        .min = 0,
        .max = 1024,
        .value = &mca_btl_ofi_params.idle_poll_ratio,
    },
    {
        .name = "local_busy_poll_us",
        .help = "While the node-local domain is at work (operations of this process's own in "
                "flight on it, or a peer on this node served lately), the idle network "
                "completion queue beside it is read once every this many microseconds: a "
                "network read (tcp: a system call) in the wait of an on-node operation costs "
                "that operation more than the read's own time. A peer on another node whose "
                "operations this process's progress applies (tcp, sockets) waits that long at "
                "most for the first after a quiet spell, while this process is busy on its "
                "node. 0: no longer than btl_ofi_idle_poll_ratio's pause",
        .default_text = "20",
        .min = 0,
        .max = 1000000,
        .value = &mca_btl_ofi_params.local_busy_poll_us,
    },
    {
        .name = "wake",
        .help = "Where a network completion queue is read at the pace of "
                "btl_ofi_idle_poll_ratio and btl_ofi_local_busy_poll_us, and its provider "
                "applies peers' operations only in this process's calls (tcp, sockets): 1 "
                "opens it with a wait descriptor (FI_WAIT_FD), and once two reads in a row "
                "find nothing and the provider says nothing is left to do (fi_trywait), "
                "leaves it unread, the clock unread too, until a poll of that descriptor "
                "submitted to an io_uring of the module's own completes (a peer's request, a "
                "completion); then reads it at the next progress call; all the same once 64 "
                "calls and a millisecond have gone by. On-node operations then meet no "
                "network read. 0: the pace alone. -1 (auto): 1 with libfabric 2 and later, "
                "0 before (libfabric 1.17's tcp makes a completion queue with a wait "
                "descriptor cost operations to other nodes 10-15%; NOTES.txt 2c). Linux "
                "io_uring only (refused: the pace alone, said at verbose 10)",
        .default_text = "-1",
        .min = -1,
        .max = 1,
        .value = &mca_btl_ofi_params.wake,
    },
    {
        .name = "nic_timeout",
        .help = "Seconds a NIC may complete nothing while operations wait on it before btl-ofi "
                "takes it for failed: the operations on it fail (MPI returns an error) or, for "
                "parts of striped transfers, move to the first NIC. -1: 60 where the provider "
                "progresses data on its own (FI_PROGRESS_AUTO, real NICs), not counting waits "
                "for a peer's CPU (atomics or gets as messages, gathered puts), and never where "
                "the target's progress applies operations (tcp, sockets: a peer computing "
                "between MPI calls would look the same); 0: never. Independently, a NIC that is a "
                "network interface (tcp, sockets) is taken for failed when its link is down "
                "after a second without completions",
        .default_text = "-1",
        .min = -1,
        .max = 86400,
        .value = &mca_btl_ofi_params.nic_timeout,
    },
    {
        .name = "put_coalesce_max",
        .help = "The largest put, in bytes, that btl_ofi_put_coalesce gathers",
        .default_text = "512",
        .min = 1,
        .max = MCA_BTL_OFI_COALESCE_PUT_MAX,
        .value = &mca_btl_ofi_params.put_coalesce_max,
    },
    {
        .name = "rcache_size",
        .help = "Local registrations (buffers registered for one put or get, without remote "
                "access) kept after use while their memory stays mapped, so that a repeated "
                "operation pays no registration; 0 turns the cache off",
        .default_text = "64",
        .min = 0,
        .max = 1 << 20,
        .value = &mca_btl_ofi_params.rcache_size,
    },
    {
        .name = "inject_eagain",
        .help = "Debug fault injection: per 1000 puts, gets and atomics, how many are refused "
                "as if the provider returned -FI_EAGAIN",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? 1000 : 0, /* 0: built without the check */
        .value = &mca_btl_ofi_params.inject_eagain_permille,
    },
    {
        .name = "inject_cq_error",
        .help = "Debug fault injection (0: off): post every Nth put or get with a corrupted "
                "remote key. What follows is the provider's: sockets reports an error "
                "completion, tcp;ofi_rxm drops the connection to that peer, shm never completes "
                "the operation (see NOTES.txt)",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? INT32_MAX : 0,
        .value = &mca_btl_ofi_params.inject_cq_error_every,
    },
    {
        .name = "inject_stale_handle",
        .help = "Debug fault injection (0: off): every Nth put, get or atomic takes the "
                "registration handle it was given as one that does not cover it, so the "
                "peer is asked which registration does (as when osc/rdma rewrote the handle: "
                "NOTES.txt section 3c)",
        .default_text = "0",
        .min = 0,
        .max = MCA_BTL_OFI_INJECT_CHECK ? INT32_MAX : 0,
        .value = &mca_btl_ofi_params.inject_stale_every,
    },
};

#define MCA_BTL_OFI_NUM_INT_PARAMS                                                                 \
    (sizeof(mca_btl_ofi_int_params) / sizeof(mca_btl_ofi_int_params[0]))

static void mca_btl_ofi_register_int_params(const mca_base_component_t *component)
{
    for (size_t i = 0; i < MCA_BTL_OFI_NUM_INT_PARAMS; ++i) {
        mca_btl_ofi_int_param_t *param = &mca_btl_ofi_int_params[i];
        char *help = NULL;

        param->text = (char *)param->default_text;
        if (asprintf(&help, "%s (an integer from %d to %d)", param->help, param->min, param->max) <
            0) {
            help = NULL;
        }
        (void)mca_base_component_var_register(component, param->name,
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

static int mca_btl_ofi_register_string(const mca_base_component_t *component, const char *name,
                                       const char *help, char **storage)
{
    *storage = NULL;
    return mca_base_component_var_register(component, name, help,
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* A boolean parameter with its default, at an ompi_info level. */
static void mca_btl_ofi_register_bool(const mca_base_component_t *component, const char *name,
                                      const char *help, int level, bool value, bool *storage)
{
    *storage = value;
    (void)mca_base_component_var_register(component, name, help, MCA_BASE_VAR_TYPE_BOOL, NULL, 0,
                                          0, level, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* "auto, delivery, read_proof, local": the valid values of a choice (caller frees). */
static char *mca_btl_ofi_choice_names(const mca_base_var_enum_value_t *values)
{
    size_t len = 1;
    char *names;

    for (int i = 0; NULL != values[i].string; ++i) {
        len += strlen(values[i].string) + 2;
    }
    names = calloc(1, len);
    for (int i = 0; NULL != names && NULL != values[i].string; ++i) {
        strcat(strcat(names, i ? ", " : ""), values[i].string);
    }
    return names;
}

static char *mca_btl_ofi_completion_names(void)
{
    return mca_btl_ofi_choice_names(mca_btl_ofi_completion_values);
}

/*
 * btl_ofi_completion is registered as a string and matched here, like the
 * integer parameters: for an unknown value Open MPI's enumerator prints its own
 * message from every rank (through the show_help path that mpirun 4.1 mishandles,
 * NOTES.txt section 11) and silently keeps the default.
 */
static bool mca_btl_ofi_parse_choice(const mca_base_var_enum_value_t *values, const char *text,
                                     int *out)
{
    for (int i = 0; NULL != text && NULL != values[i].string; ++i) {
        if (0 == strcmp(text, values[i].string)) {
            *out = values[i].value;
            return true;
        }
    }
    return false;
}

/* A choice the user set, matched; an unknown value declines with the valid ones. */
static bool mca_btl_ofi_choice_valid(const char *param, const mca_base_var_enum_value_t *values,
                                     const char *text, int *out)
{
    char name[64], *names;

    if (mca_btl_ofi_parse_choice(values, text, out)) {
        return true;
    }
    names = mca_btl_ofi_choice_names(values);
    mca_btl_ofi_decline("bad-choice", mca_btl_ofi_param_name(param, name, sizeof(name)),
                        text ? text : "", names ? names : "?", NULL);
    free(names);
    return false;
}

static void mca_btl_ofi_register_completion(const mca_base_component_t *component)
{
    char *names = mca_btl_ofi_completion_names(), *help = NULL;

    mca_btl_ofi_params.completion_text = "auto";
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
        component, "completion",
        help ? help : "How remote completion is proven", MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
        OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_ofi_params.completion_text);
    free(help);
    free(names);
}

void mca_btl_ofi_params_register(const mca_base_component_t *component)
{
    mca_btl_ofi_params.mr_mode_text = "virt_addr,prov_key,allocated,local,endpoint";

    mca_btl_ofi_register_string(
        component, "provider_include",
        "Comma-separated libfabric providers to consider, named as in FI_PROVIDER: a core "
        "provider stands for every stack over it (\"tcp\": tcp;ofi_rxm), a full name as "
        "fi_info prints it for that stack only (\"shm;ofi_strictmr\"); a leading ^ leaves the "
        "names out instead. Within what FI_PROVIDER lets libfabric offer. Empty: every "
        "provider. Cannot be combined with btl_ofi_provider_exclude",
        &mca_btl_ofi_params.provider_include);
    mca_btl_ofi_register_string(component, "provider_exclude",
                                "Comma-separated libfabric providers never to use; a name "
                                "leaves out every stack it is part of (\"ofi_rxm\": "
                                "tcp;ofi_rxm and net;ofi_rxm)",
                                &mca_btl_ofi_params.provider_exclude);
    mca_btl_ofi_register_string(
        component, "domain_include",
        "Comma-separated libfabric domains to consider, as fi_info prints them (\"domain:\" "
        "lines: a NIC such as mlx5_0, cxi1 or rdmap16s27-rdm, an interface such as eth1 for tcp) "
        "or their fabrics (\"fabric:\" lines, such as 10.0.0.0/24); shell patterns allowed "
        "(\"cxi*\"). Like btl_tcp_if_include. Variables of the provider (FI_TCP_IFACE, ...) "
        "still apply first. Empty: every domain. Cannot be combined with btl_ofi_domain_exclude",
        &mca_btl_ofi_params.domain_include);
    mca_btl_ofi_register_string(component, "domain_exclude",
                                "Comma-separated libfabric domains or fabrics never to use, as "
                                "for btl_ofi_domain_include (\"lo,eth0\")",
                                &mca_btl_ofi_params.domain_exclude);
    mca_btl_ofi_register_bool(
        component, "domain_spread",
        "When the chosen provider offers several domains on one fabric (several NICs), each "
        "process takes one of them by its local rank, so the processes of a node share them "
        "out; false: every process takes the first",
        OPAL_INFO_LVL_4, true, &mca_btl_ofi_params.domain_spread);
    mca_btl_ofi_params.domain_selected = "";
    (void)mca_base_component_var_register(
        component, "domain_selected",
        "Read-only: the provider, fabric and domain this process uses (\"tcp;ofi_rxm fabric "
        "192.0.2.0/24 domain eth0\"), set when btl-ofi starts; empty before, or when it "
        "declined. Readable through MPI_T as a control variable",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &mca_btl_ofi_params.domain_selected);

    mca_btl_ofi_params.local_provider = "shm";
    (void)mca_base_component_var_register(
        component, "local_provider",
        "In a job across several nodes, the libfabric provider that carries the peers on this "
        "node, beside the selected (network) provider that carries the others: one module, a "
        "domain of each, chosen per peer; registrations carry a key for each. \"none\" (or "
        "empty): every peer on the selected provider. Not used when the selected provider is "
        "itself node-local, or all peers share this node",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.local_provider);
    mca_btl_ofi_params.local_selected = "";
    (void)mca_base_component_var_register(
        component, "local_selected",
        "Read-only: the provider, fabric and domain that carry the peers on this node beside "
        "btl_ofi_domain_selected (btl_ofi_local_provider); empty when every peer uses that one",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &mca_btl_ofi_params.local_selected);
    mca_btl_ofi_params.local_atomics_text = "auto";
    (void)mca_base_component_var_register(
        component, "local_atomics",
        "With a node-local provider in use (btl_ofi_local_provider), which one carries the "
        "atomics to peers on this node: local, network, or auto (local where the network "
        "provider's atomics are applied by the target's CPU, as software providers and "
        "btl-ofi's messages do, so that atomics from this node and from other nodes on one "
        "word stay atomic with each other; network where a NIC applies them) (one of: auto, "
        "local, network)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.local_atomics_text);

    (void)mca_base_component_var_register(
        component, "mr_mode",
        "Memory-registration mode bits the BTL may accept from the provider: a comma-separated "
        "subset of virt_addr, prov_key, allocated, local, endpoint, or \"none\" (a number is "
        "accepted too). Without virt_addr, remote addresses travel as offsets from the "
        "registered base; without prov_key, the BTL chooses the keys; local and endpoint are "
        "taken only from a provider that demands them. raw is never served",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.mr_mode_text);

    mca_btl_ofi_register_completion(component);

    mca_btl_ofi_register_int_params(component);

    mca_btl_ofi_register_bool(
        component, "force_atomic_emulation",
        "Debug: serve every atomic except compare-and-swap through a compare-and-swap loop, "
        "as for ops the provider lacks",
        OPAL_INFO_LVL_9, false, &mca_btl_ofi_params.force_atomic_emulation);

    mca_btl_ofi_register_bool(
        component, "proof_trusts_order",
        "Debug, breaks MPI semantics: in read_proof completion, take a provider that does not "
        "grant read-after-write ordering, so a proof read may overtake the writes it should "
        "prove (the negative control of the reordering tests)",
        OPAL_INFO_LVL_9, false, &mca_btl_ofi_params.proof_trusts_order);

    mca_btl_ofi_params.atomics_text = "auto";
    (void)mca_base_component_var_register(
        component, "atomics",
        "How atomics reach the target: native (the provider's atomics; an op it lacks runs as a "
        "compare-and-swap loop; a provider without FI_ATOMIC or a 64-bit compare-and-swap is "
        "not used), messages (every atomic is a message that the target's progress applies "
        "with CPU atomics and answers; needs FI_MSG), auto (native when the provider can, else "
        "messages). messages on a provider with atomics is a debug setting (one of: auto, "
        "native, messages)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.atomics_text);

    mca_btl_ofi_params.gets_text = "auto";
    (void)mca_base_component_var_register(
        component, "gets",
        "How gets reach the target: native (fi_read; a provider without FI_READ is not used), "
        "messages (a request that the target's progress answers with the data, in pieces of "
        "the receive buffer's size; needs FI_MSG, and delivery-complete since no RMA read is "
        "then asked for to prove remote completion), auto (native when the provider grants "
        "FI_READ, else messages). messages on a provider with FI_READ is a debug setting (one "
        "of: auto, native, messages)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_btl_ofi_params.gets_text);
}

bool mca_btl_ofi_params_valid(void)
{
    char name[64];

    if (!mca_btl_ofi_choice_valid("completion", mca_btl_ofi_completion_values,
                                  mca_btl_ofi_params.completion_text,
                                  &mca_btl_ofi_params.completion) ||
        !mca_btl_ofi_choice_valid("atomics", mca_btl_ofi_path_values,
                                  mca_btl_ofi_params.atomics_text,
                                  &mca_btl_ofi_params.atomics_path) ||
        !mca_btl_ofi_choice_valid("gets", mca_btl_ofi_path_values, mca_btl_ofi_params.gets_text,
                                  &mca_btl_ofi_params.gets_path) ||
        !mca_btl_ofi_choice_valid("local_atomics", mca_btl_ofi_local_atomics_values,
                                  mca_btl_ofi_params.local_atomics_text,
                                  &mca_btl_ofi_params.local_atomics)) {
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

