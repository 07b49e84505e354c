/*
 * btl-ofi MCA parameters: their storage, registration and checking
 * (btl_ofi_params.c). Every file that reads a parameter includes this one;
 * the component itself is not needed for that.
 */

#ifndef MCA_BTL_OFI_PARAMS_H
#define MCA_BTL_OFI_PARAMS_H

#include "btl_ofi.h"

#include "opal/mca/base/mca_base_var_enum.h"

BEGIN_C_DECLS

/* Upper bound of btl_ofi_put_coalesce_max: half of a gathered message's records. */
#define MCA_BTL_OFI_COALESCE_PUT_MAX 4096

/* Upper bound of CQ entries read by one progress call. */
#define MCA_BTL_OFI_MAX_CQ_BATCH 256

/* MR mode bits the component knows how to serve (FI_MR_RAW is not among them). */
#define MCA_BTL_OFI_MR_SERVED                                                                      \
    (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_LOCAL | FI_MR_ENDPOINT)
/* Served bits that cost something: taken only from a provider that cannot do without them. */
#define MCA_BTL_OFI_MR_ON_DEMAND (FI_MR_LOCAL | FI_MR_ENDPOINT)

/** How flush proves that operations completed at the target. */
enum mca_btl_ofi_completion_t {
    /** delivery-complete if the provider grants it, otherwise read-after-write proof */
    MCA_BTL_OFI_COMPLETION_AUTO = 0,
    /** every completion is a delivery completion (FI_DELIVERY_COMPLETE) */
    MCA_BTL_OFI_COMPLETION_DELIVERY = 1,
    /** flush issues a read ordered after the writes and waits for it */
    MCA_BTL_OFI_COMPLETION_READ_PROOF = 2,
    /** debug, unsafe: flush waits for local completions only (the negative control of
     *  the visibility tests) */
    MCA_BTL_OFI_COMPLETION_LOCAL = 3,
};

/**
 * How atomics (btl_ofi_atomics) or gets (btl_ofi_gets) reach the target: by the
 * provider's own operations, or as messages that the target's progress applies
 * (btl_ofi_am.c).
 */
enum mca_btl_ofi_path_t {
    /** native when the provider grants it (atomics: FI_ATOMIC with a 64-bit compare-and-swap;
     *  gets: FI_READ), else messages */
    MCA_BTL_OFI_PATH_AUTO = 0,
    /** only the provider's own operations: a provider without them is not used */
    MCA_BTL_OFI_PATH_NATIVE = 1,
    /** always messages, as if the provider lacked the operations (btl-ofi then asks for none) */
    MCA_BTL_OFI_PATH_MESSAGES = 2,
};

/** Which domain carries the atomics to a peer on this node when a node-local one is in use. */
enum mca_btl_ofi_local_atomics_t {
    /** the node-local one where the network provider's atomics are applied by the target's
     *  CPU (software providers, btl-ofi's messages), so both kinds stay atomic with each
     *  other; else the network one */
    MCA_BTL_OFI_LOCAL_ATOMICS_AUTO = 0,
    MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL = 1,   /**< always the node-local domain */
    MCA_BTL_OFI_LOCAL_ATOMICS_NETWORK = 2, /**< always the network domain */
};

/** The MCA parameters, as registered and as parsed at init. */
/*
 * How each put, get and atomic asks whether a fault is injected, a build-time
 * choice kept so that its cost can be measured (osc_harness/PERFORMANCE.md):
 *   MCA_BTL_OFI_INJECT_CHECK 1 (default) inline: a load and a predicted-not-taken branch
 *   MCA_BTL_OFI_INJECT_CHECK 2 an out-of-line call per operation (the code before the
 *                            checks were inlined), for the before/after comparison
 *   MCA_BTL_OFI_INJECT_CHECK 0 no check: the inject_* parameters are refused
 */
#ifndef MCA_BTL_OFI_INJECT_CHECK
#define MCA_BTL_OFI_INJECT_CHECK 1
#endif

typedef struct mca_btl_ofi_params_t {
    char *provider_include;
    char *provider_exclude;
    char *domain_include; /**< domains (or their fabrics) to consider: names or shell patterns */
    char *domain_exclude; /**< domains (or their fabrics) never to use */
    bool domain_spread;   /**< several domains of one fabric: one per process, by local rank */
    char *domain_selected; /**< read-only: "provider/fabric/domain" this process uses */
    /** node-local provider for the peers on this node in a job across nodes ("shm"); "none"
     *  or empty: every peer on the selected provider (btl_ofi_rails.c) */
    char *local_provider;
    char *local_selected;     /**< read-only: the node-local domain in use, or "" */
    char *local_atomics_text; /**< btl_ofi_local_atomics: auto, local or network */
    /** parsed from local_atomics_text (enum mca_btl_ofi_local_atomics_t) */
    int local_atomics;
    char *mr_mode_text;
    uint64_t mr_mode_allowed; /**< parsed from mr_mode_text at init */
    char *completion_text;
    int completion; /**< parsed from completion_text at init */
    int progress_batch;
    int op_free_list_max;
    bool debug_atomic_emulation;
    bool debug_proof_trusts_order; /**< debug: read_proof without read-after-write ordering */
    int nofetch_as_fetch; /**< non-fetching atomics as fetching: -1 auto (shm), 0 never, 1 always */
    int put_coalesce;     /**< small puts gathered into messages: -1 auto (tcp), 0 never, 1 always */
    int put_coalesce_max; /**< the largest put that is gathered, in bytes */
    int stripe_min;       /**< puts and gets this large are split over the NICs; 0: never */
    /** an idle network CQ beside other domains is left unread for this many times what a
     *  read of it costs (btl_ofi_ops.c); 0: read at every pass */
    int idle_poll_ratio;
    /** microseconds between reads of that CQ while the node-local domain is at work; 0: the
     *  idle_poll_ratio pace (btl_ofi_ops.c) */
    int local_busy_poll_us;
    /** 1: a network CQ read at a pace is left unread while idle until an io_uring poll
     *  of its descriptor completes (btl_ofi_wake.h), where the provider needs this
     *  process's progress; -1: so with libfabric 2 and later */
    int wake;
    /** seconds without a completion, operations waiting, that mean a failed NIC; -1: 60
     *  where the provider progresses data itself, else never; 0: never (btl_ofi_fault.c) */
    int nic_timeout;
    int rcache_size;      /**< local registrations cached; 0: no cache */
    int debug_inject_eagain_permille; /**< debug: posts refused as -FI_EAGAIN, per 1000 */
    int debug_inject_cq_error_every;  /**< debug: every Nth put/get uses a corrupted key */
    int inject_stale_every; /**< debug: every Nth remote access takes its handle as stale */
    char *atomics_text; /**< btl_ofi_atomics: auto, native or messages */
    int atomics_path;   /**< parsed from atomics_text at init (enum mca_btl_ofi_path_t) */
    char *gets_text;    /**< btl_ofi_gets: auto, native or messages */
    int gets_path;      /**< parsed from gets_text at init (enum mca_btl_ofi_path_t) */
} mca_btl_ofi_params_t;

extern mca_btl_ofi_params_t mca_btl_ofi_params;
/** Names of btl_ofi_completion values, terminated by {0, NULL}. */
extern const mca_base_var_enum_value_t mca_btl_ofi_completion_values[];
/** Names of btl_ofi_atomics / btl_ofi_gets values, terminated by {0, NULL}. */
extern const mca_base_var_enum_value_t mca_btl_ofi_path_values[];
/** Names of btl_ofi_local_atomics values, terminated by {0, NULL}. */
extern const mca_base_var_enum_value_t mca_btl_ofi_local_atomics_values[];

/**
 * Register the component's own parameters (not those of the module template).
 *
 * @param component (IN) the component they belong to
 */
void mca_btl_ofi_params_register(const mca_base_component_t *component);

/**
 * Parse btl_ofi_completion and the integer parameters (btl_ofi_mr_mode is
 * discovery's). A value out of range declines the component with a message.
 *
 * @retval true when every value is usable
 */
bool mca_btl_ofi_params_valid(void);

END_C_DECLS

#endif /* MCA_BTL_OFI_PARAMS_H */
