/*
 * btl-ofi: a one-sided (RDMA + atomics) BTL for Open MPI over libfabric.
 *
 * Types shared by the component's files. One module, one libfabric endpoint,
 * one completion queue, one address vector.
 */

#ifndef MCA_BTL_OFI_H
#define MCA_BTL_OFI_H

#include "opal_config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"

#include "btl_ofi_compat.h"

BEGIN_C_DECLS

/* The project's own version: ompi_info shows it, so a user can tell this
 * component from the btl/ofi that Open MPI ships. */
#define MCA_BTL_OFI_MAJOR_VERSION 0
#define MCA_BTL_OFI_MINOR_VERSION 1
#define MCA_BTL_OFI_RELEASE_VERSION 0

/*
 * The component's name: "ofi" where it replaces Open MPI's own btl/ofi (an
 * in-tree build); the standalone build names it otherwise (configure.ac), so
 * that it loads beside a btl/ofi built into Open MPI. Its MCA parameters are
 * btl_<name>_*.
 */
#ifndef MCA_BTL_OFI_COMPONENT_NAME
#define MCA_BTL_OFI_COMPONENT_NAME "ofi"
#endif

/*
 * Visibility of mca_btl_ofi_component. In-tree it is the symbol Open MPI looks
 * up. Standalone, Open MPI looks up mca_btl_<name>_component (an alias, see
 * btl_ofi_component.c) and everything else stays inside the DSO: Open MPI 5
 * links its own btl/ofi into libopen-pal, whose exported mca_btl_ofi_* symbols
 * would otherwise be bound in place of ours (NOTES.txt section 12).
 */
#ifdef MCA_BTL_OFI_COMPONENT_SYMBOL
#define MCA_BTL_OFI_COMPONENT_DECLSPEC __opal_attribute_visibility__("hidden")
#else
#define MCA_BTL_OFI_COMPONENT_DECLSPEC OPAL_DECLSPEC
#endif

/* Prefix of the component's verbose output: "btl:<name>: ". */
#define MCA_BTL_OFI_LOG "btl:" MCA_BTL_OFI_COMPONENT_NAME ": "

/* Oldest libfabric API the component asks for. */
#define MCA_BTL_OFI_FI_VERSION FI_VERSION(1, 5)
/* The API at which it also asks for FI_HMEM (system memory only), where libfabric has it. */
#define MCA_BTL_OFI_FI_VERSION_HMEM FI_VERSION(1, 18)

/* Upper bound of CQ entries read by one progress call. */
#define MCA_BTL_OFI_MAX_CQ_BATCH 256

/* MR mode bits the component knows how to serve (FI_MR_RAW is not among them). */
#define MCA_BTL_OFI_MR_SERVED                                                                      \
    (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_LOCAL | FI_MR_ENDPOINT)
/* Served bits that cost something: taken only from a provider that cannot do without them. */
#define MCA_BTL_OFI_MR_ON_DEMAND (FI_MR_LOCAL | FI_MR_ENDPOINT)

#define mca_btl_ofi_output (opal_btl_base_framework.framework_output)

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

/** Counters exposed as MPI_T performance variables (see btl_ofi_pvar.c). */
enum mca_btl_ofi_counter_id_t {
    MCA_BTL_OFI_CNT_PUTS,
    MCA_BTL_OFI_CNT_GETS,
    MCA_BTL_OFI_CNT_PUT_BYTES,
    MCA_BTL_OFI_CNT_GET_BYTES,
    MCA_BTL_OFI_CNT_ATOMICS,
    MCA_BTL_OFI_CNT_ATOMICS_EMULATED,
    MCA_BTL_OFI_CNT_CQ_ENTRIES,
    MCA_BTL_OFI_CNT_CQ_ERRORS,
    MCA_BTL_OFI_CNT_FLUSHES,
    MCA_BTL_OFI_CNT_PROOF_READS,
    MCA_BTL_OFI_CNT_REGISTRATIONS,
    MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE,
    MCA_BTL_OFI_CNT_POST_EAGAIN,
    MCA_BTL_OFI_CNT_REFUSED,
    MCA_BTL_OFI_CNT_INJECTED,
    MCA_BTL_OFI_CNT_TRANSIENT_REGS,
    MCA_BTL_OFI_CNT_MR_MODE,  /**< the negotiated FI_MR_* bits (set once, at init) */
    MCA_BTL_OFI_CNT_KEY_SIZE, /**< the negotiated mr_key_size in bytes (set once, at init) */
    MCA_BTL_OFI_CNT_MAX,
};

/** Datatype index of an atomic: bit 0 = 32-bit, bit 1 = floating point. */
#define MCA_BTL_OFI_ATOMIC_DT_COUNT 4

/** What the provider does natively for one (op, datatype) pair. */
enum {
    MCA_BTL_OFI_NATIVE_OP = 0x1,  /**< fi_atomicvalid */
    MCA_BTL_OFI_NATIVE_FOP = 0x2, /**< fi_fetch_atomicvalid */
};

/** Atomic capabilities learned from fi_*atomicvalid at init. */
typedef struct mca_btl_ofi_atomic_caps_t {
    uint8_t native[MCA_BTL_ATOMIC_LAST][MCA_BTL_OFI_ATOMIC_DT_COUNT];
    bool cswap[MCA_BTL_OFI_ATOMIC_DT_COUNT];
} mca_btl_ofi_atomic_caps_t;

/**
 * Registration handle: the part of a registration that travels to peers.
 * Open MPI copies btl_registration_handle_size bytes of it.
 */
struct mca_btl_base_registration_handle_t {
    uint64_t key;  /**< remote key */
    uint64_t base; /**< registered base address (offsets are taken from it) */
    uint64_t len;  /**< registered length, to refuse out-of-range accesses */
};

/** Local registration: the public handle plus what only this process needs. */
typedef struct mca_btl_ofi_reg_t {
    opal_list_item_t super;
    struct fid_mr *mr; /**< NULL for an empty (zero-length) registration */
    void *desc;
    mca_btl_base_registration_handle_t handle;
} mca_btl_ofi_reg_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_reg_t);

/** One peer as seen by this BTL. Endpoints live until the module finalizes. */
struct mca_btl_base_endpoint_t {
    opal_object_t super;
    struct opal_proc_t *proc;
    fi_addr_t peer_addr;
    /** the peer's proof word, read by flush to prove remote completion */
    mca_btl_base_registration_handle_t proof_handle;
    /** non-fetching atomics issued since the last remote-completion proof */
    atomic_bool unproven;
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_base_endpoint_t);

/** Emulation state for an atomic the provider lacks (compare-and-swap loop). */
typedef struct mca_btl_ofi_emulation_t {
    mca_btl_base_atomic_op_t op;
    int dt;               /**< datatype index */
    bool fetching;        /**< the caller wants the old value */
    uint64_t operand;     /**< the caller's operand */
    uint64_t target_addr; /**< already translated remote address */
    uint64_t key;
} mca_btl_ofi_emulation_t;

typedef enum {
    MCA_BTL_OFI_OP_RMA,      /**< put or get */
    MCA_BTL_OFI_OP_ATOMIC,   /**< native atomic of any kind */
    MCA_BTL_OFI_OP_EMULATED, /**< one compare-and-swap step of an emulated atomic */
    MCA_BTL_OFI_OP_PROOF,    /**< internal read that proves remote completion (flush) */
    /** put whose callback waits until a read proves it landed (prove_remote) */
    MCA_BTL_OFI_OP_UNPROVEN_PUT,
    MCA_BTL_OFI_OP_PUT_PROOF, /**< the read that proves one put; parent is the put */
} mca_btl_ofi_op_kind_t;

/** The operand, compare and result words of one operation. */
typedef struct mca_btl_ofi_words_t {
    uint64_t operand;
    uint64_t compare;
    uint64_t fetched;
} mca_btl_ofi_words_t;

/** One outstanding libfabric operation. Its fi_context2 is the libfabric context. */
typedef struct mca_btl_ofi_op_t {
    opal_free_list_item_t super;
    struct fi_context2 fi_ctx;
    mca_btl_ofi_op_kind_t kind;
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
    /* Buffers the provider reads or writes until the operation completes; under
     * FI_MR_LOCAL they live in a registered slab (words_desc), else in inline_words. */
    mca_btl_ofi_words_t *words;
    void *words_desc;
    mca_btl_ofi_words_t inline_words;
    /** FI_MR_LOCAL and a caller without a local handle: registered for this op only */
    struct mca_btl_ofi_reg_t *transient;
    mca_btl_ofi_emulation_t emu;
    struct mca_btl_ofi_op_t *parent; /**< MCA_BTL_OFI_OP_PUT_PROOF: the put it proves */
    /** MCA_BTL_OFI_OP_UNPROVEN_PUT: completions still to come (its own and its proof's) */
    atomic_int pending;
    int status; /**< MCA_BTL_OFI_OP_UNPROVEN_PUT: first error of the two, else OPAL_SUCCESS */
} mca_btl_ofi_op_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_op_t);

/** The one module of this component. */
typedef struct mca_btl_ofi_module_t {
    mca_btl_base_module_t super;

    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;

    /* Negotiated behaviour. */
    bool virt_addr;         /**< FI_MR_VIRT_ADDR: remote addresses are virtual */
    bool prov_key;          /**< FI_MR_PROV_KEY: the provider picks keys */
    bool mr_local;          /**< FI_MR_LOCAL: every local buffer needs a descriptor */
    bool mr_endpoint;       /**< FI_MR_ENDPOINT: each MR is bound to the endpoint, enabled */
    bool local_only;        /**< the provider reaches only this node */
    bool delivery_complete; /**< completions imply remote visibility */
    bool prove_remote;      /**< flush must prove remote completion (not delivery_complete) */
    uint64_t key_mask;      /**< keys this BTL picks fit in mr_key_size bytes */
    atomic_uint_fast64_t next_key;

    /** operations posted and not yet completed */
    atomic_int_fast64_t outstanding;
    opal_free_list_t ops;

    /* Proof-of-remote-completion target: 8 bytes every peer may read. */
    uint64_t proof_word;
    mca_btl_ofi_reg_t *proof_reg;

    opal_mutex_t endpoint_lock;
    opal_hash_table_t endpoints; /**< process name -> endpoint */

    opal_mutex_t reg_lock;
    opal_list_t live_regs;
    /** FI_MR_LOCAL: registered slabs of operation words (mca_btl_ofi_words_slab_t) */
    opal_list_t word_slabs;

    /** emulation steps that could not be posted from inside progress */
    opal_mutex_t deferred_lock;
    opal_list_t deferred;

    mca_btl_ofi_atomic_caps_t atomics;
    bool initialized;
} mca_btl_ofi_module_t;

/** The component: MCA parameters and counters live here. */
typedef struct mca_btl_ofi_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* MCA parameters */
    char *provider_include;
    char *provider_exclude;
    char *mr_mode_text;
    uint64_t mr_mode_allowed; /**< parsed from mr_mode_text at init */
    char *completion_text;
    int completion; /**< parsed from completion_text at init */
    int progress_batch;
    int op_free_list_max;
    bool force_atomic_emulation;
    int inject_eagain_permille; /**< debug: posts refused as -FI_EAGAIN, per 1000 */
    int inject_cq_error_every;  /**< debug: every Nth put/get uses a corrupted key */
    atomic_uint_fast64_t inject_ticket;

    atomic_uint_fast64_t counters[MCA_BTL_OFI_CNT_MAX];

    mca_btl_ofi_module_t *module;
} mca_btl_ofi_component_t;

MCA_BTL_OFI_COMPONENT_DECLSPEC extern mca_btl_ofi_component_t mca_btl_ofi_component;
/** Names of btl_ofi_completion values, terminated by {0, NULL}. */
extern const mca_base_var_enum_value_t mca_btl_ofi_completion_values[];
extern mca_btl_ofi_module_t mca_btl_ofi_module_template;

/* ---- counters ---------------------------------------------------------- */

static inline void mca_btl_ofi_count(enum mca_btl_ofi_counter_id_t id, uint64_t n)
{
    atomic_fetch_add_explicit(&mca_btl_ofi_component.counters[id], n, memory_order_relaxed);
}

static inline void mca_btl_ofi_uncount(enum mca_btl_ofi_counter_id_t id, uint64_t n)
{
    atomic_fetch_sub_explicit(&mca_btl_ofi_component.counters[id], n, memory_order_relaxed);
}

/** Register the counters as MPI_T performance variables. */
int mca_btl_ofi_pvar_register(void);

/* ---- discovery (btl_ofi_discovery.c) ----------------------------------- */

/**
 * Choose a libfabric provider according to the MCA parameters.
 *
 * @param enable_mpi_threads (IN) whether MPI_THREAD_MULTIPLE was requested
 * @retval a duplicated fi_info the caller frees with fi_freeinfo, or NULL
 *         after recording why nothing qualifies (mca_btl_ofi_decline)
 */
struct fi_info *mca_btl_ofi_discover(bool enable_mpi_threads);

/**
 * Parse btl_ofi_mr_mode: "none", a comma list of virt_addr/prov_key/allocated,
 * or a number made of those bits.
 *
 * @retval OPAL_SUCCESS with *mask set, or OPAL_ERR_BAD_PARAM (mask untouched)
 */
int mca_btl_ofi_mr_mode_parse(const char *text, uint64_t *mask);

/** "delivery", "read_proof" or "local ...": how flush proves completion with this info. */
const char *mca_btl_ofi_completion_name(const struct fi_info *info);

/** Human-readable list of MR mode bits, e.g. "virt_addr|prov_key" (static buffer). */
const char *mca_btl_ofi_mr_mode_str(uint64_t mr_mode, char *buf, size_t len);

/* ---- device (btl_ofi_device.c) ----------------------------------------- */

/**
 * Open fabric, domain, address vector, completion queue and endpoint.
 *
 * @param module (IN/OUT) module whose fids are filled on success
 * @param info   (IN)     selected provider; ownership passes to the module
 * @retval OPAL_SUCCESS, or an OPAL error after mca_btl_ofi_decline
 */
int mca_btl_ofi_device_open(mca_btl_ofi_module_t *module, struct fi_info *info);

/** Close every fid in reverse order of opening. Safe on a partly opened module. */
void mca_btl_ofi_device_close(mca_btl_ofi_module_t *module);

/* ---- endpoints (btl_ofi_endpoint.c) ------------------------------------ */

/**
 * Publish this process's libfabric address, provider name and proof-word handle.
 *
 * @param module (IN) the opened module
 * @retval OPAL_SUCCESS, or an OPAL error after mca_btl_ofi_decline
 */
int mca_btl_ofi_modex_send(mca_btl_ofi_module_t *module);
/**
 * Create (or find) the endpoint of each process and mark the reachable ones.
 * A node-local provider reaches only processes on this node; a peer that
 * published another provider is unreachable.
 *
 * @param procs     (IN)  processes, possibly including this one
 * @param peers     (OUT) endpoint per process, NULL when unreachable
 * @param reachable (OUT) bit i set when procs[i] is reachable (may be NULL)
 * @retval OPAL_SUCCESS
 */
int mca_btl_ofi_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable);
int mca_btl_ofi_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers);
/** Release every endpoint (at finalize). */
void mca_btl_ofi_endpoints_release(mca_btl_ofi_module_t *module);

/* ---- memory registration (btl_ofi_mr.c) -------------------------------- */

/**
 * Register [base, base + size) for local and remote access.
 *
 * @param endpoint (IN) ignored: registrations serve every peer
 * @param flags    (IN) MCA_BTL_REG_FLAG_*; every access is granted
 * @retval the handle to share with peers, or NULL if the provider refused
 */
struct mca_btl_base_registration_handle_t *
mca_btl_ofi_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags);
/**
 * Deregister a handle returned by mca_btl_ofi_register_mem.
 *
 * @retval OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM for a NULL handle
 */
int mca_btl_ofi_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);
/** Register a region for internal use (not counted, not on the live list). */
mca_btl_ofi_reg_t *mca_btl_ofi_reg_create(mca_btl_ofi_module_t *module, void *base, size_t size);
/** Close a registration made by mca_btl_ofi_reg_create and free it. */
void mca_btl_ofi_reg_destroy(mca_btl_ofi_reg_t *reg);
/** Deregister whatever the upper layer left registered at finalize. */
void mca_btl_ofi_regs_release(mca_btl_ofi_module_t *module);

/** Slow path of mca_btl_ofi_op_desc: register op's buffer for this operation. */
bool mca_btl_ofi_op_transient_desc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                   void *address, size_t size, void **desc);

/**
 * The descriptor for an operation's local buffer [address, address + size):
 * the one of op->local_handle; without a handle NULL, or under FI_MR_LOCAL a
 * registration made for this operation (op->transient, closed when the
 * operation is released).
 *
 * @retval true with *desc set; false if registering failed, and then op has
 *         been released
 */
static inline bool mca_btl_ofi_op_desc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op,
                                       void *address, size_t size, void **desc)
{
    if (OPAL_LIKELY(NULL != op->local_handle)) {
        *desc = container_of(op->local_handle, mca_btl_ofi_reg_t, handle)->desc;
        return true;
    }
    *desc = NULL;
    if (OPAL_LIKELY(!module->mr_local || 0 == size)) {
        return true;
    }
    return mca_btl_ofi_op_transient_desc(module, op, address, size, desc);
}
/** Free-list item initializer of operations: where their words live (ctx: the module). */
int mca_btl_ofi_op_words_init(opal_free_list_item_t *item, void *ctx);
/** Close the registered word slabs (at finalize, after the last operation). */
void mca_btl_ofi_word_slabs_release(mca_btl_ofi_module_t *module);

/**
 * Translate a peer's virtual address into what the provider expects and check
 * that [address, address + size) lies inside the registration.
 *
 * @retval OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM for an address outside the region
 */
static inline int mca_btl_ofi_remote_addr(const mca_btl_ofi_module_t *module,
                                          const struct mca_btl_base_registration_handle_t *handle,
                                          uint64_t address, size_t size, uint64_t *translated)
{
    if (address < handle->base || size > handle->len ||
        address - handle->base > handle->len - size) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
        return OPAL_ERR_BAD_PARAM;
    }
    *translated = module->virt_addr ? address : address - handle->base;
    return OPAL_SUCCESS;
}

/* ---- operations (btl_ofi_ops.c) ---------------------------------------- */

/* Slow paths of the debug fault injection (btl_ofi_ops.c). */
bool mca_btl_ofi_inject_eagain_slow(void);
uint64_t mca_btl_ofi_inject_key_slow(uint64_t key);

/**
 * Debug fault injection (off by default): whether this put/get/atomic is
 * refused as if the provider returned -FI_EAGAIN. Inline so that the
 * disabled case costs one load and a branch.
 */
static inline bool mca_btl_ofi_inject_eagain(void)
{
    return OPAL_UNLIKELY(0 != mca_btl_ofi_component.inject_eagain_permille) &&
           mca_btl_ofi_inject_eagain_slow();
}

/** Debug fault injection: the key to post with (corrupted every Nth put/get). */
static inline uint64_t mca_btl_ofi_inject_key(uint64_t key)
{
    if (OPAL_LIKELY(0 == mca_btl_ofi_component.inject_cq_error_every)) {
        return key;
    }
    return mca_btl_ofi_inject_key_slow(key);
}

/** Take an operation context and count it as outstanding. */
mca_btl_ofi_op_t *mca_btl_ofi_op_alloc(mca_btl_ofi_module_t *module, mca_btl_ofi_op_kind_t kind,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       void *local_address,
                                       struct mca_btl_base_registration_handle_t *local_handle,
                                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                       void *cbdata);

/** Return an operation context that will not complete and uncount it. */
void mca_btl_ofi_op_release(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);

/**
 * Turn a libfabric posting result into the BTL return contract, releasing
 * the operation when it was not posted.
 *
 * @retval OPAL_SUCCESS (queued), OPAL_ERR_OUT_OF_RESOURCE (-FI_EAGAIN: try again),
 *         OPAL_ERROR (the provider refused the operation)
 */
int mca_btl_ofi_post_result(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, ssize_t rc,
                            const char *what);

/** Complete an operation: run its callback, release it. */
void mca_btl_ofi_op_complete(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op, int status);

/** Read up to one batch of CQ entries and run their callbacks. */
int mca_btl_ofi_progress_module(mca_btl_ofi_module_t *module);

/** Park an operation whose next post met -FI_EAGAIN inside progress; progress reposts it. */
void mca_btl_ofi_defer(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);

/* ---- RMA (btl_ofi_rdma.c) ---------------------------------------------- */

/**
 * prove_remote: post the read that proves a just-posted put landed (ordered
 * after it by FI_ORDER_RMA_RAW). The put's callback runs once both its own
 * completion and the proof's have arrived; -FI_EAGAIN defers the proof.
 */
void mca_btl_ofi_put_proof_post(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *put);

/** One of an unproven put's two completions (its own or its proof's) arrived. */
void mca_btl_ofi_put_part_done(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *put, int status);

/**
 * Put size bytes from local_address to remote_address at endpoint (btl.h contract).
 *
 * @param local_handle  (IN) registration of the local buffer, or NULL
 * @param remote_handle (IN) the peer's registration covering the target range
 * @param cbfunc        (IN) called from progress once the data is visible at the target
 * @retval OPAL_SUCCESS               queued
 * @retval OPAL_ERR_OUT_OF_RESOURCE   provider busy (-FI_EAGAIN) or no context: try again
 * @retval OPAL_ERR_BAD_PARAM         missing endpoint/handle, range outside the
 *                                    registration, or size above btl_put_limit
 * @retval OPAL_ERROR                 the provider refused the operation
 */
int mca_btl_ofi_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);
/** Get: as mca_btl_ofi_put, in the other direction and bounded by btl_get_limit. */
int mca_btl_ofi_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);
/**
 * Return once every operation posted before the call is complete at its
 * target: waits for the outstanding count to drain and, without
 * delivery-complete, proves remote completion with ordered reads.
 *
 * @param endpoint (IN) peer to prove, or NULL for all (draining is always global)
 * @retval OPAL_SUCCESS, or an OPAL error if a proof read could not be posted
 */
int mca_btl_ofi_flush(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint);

/* ---- atomics (btl_ofi_atomics.c) --------------------------------------- */

/** Learn from fi_*atomicvalid what the provider does natively; set btl_atomic_flags. */
int mca_btl_ofi_atomics_probe(mca_btl_ofi_module_t *module);

/**
 * Non-fetching atomic: (*remote_address) = (*remote_address) op operand.
 * Native when fi_atomicvalid says so, else a compare-and-swap loop.
 *
 * @param op    (IN) MCA_BTL_ATOMIC_*
 * @param flags (IN) MCA_BTL_ATOMIC_FLAG_32BIT / _FLOAT select the datatype
 * @retval as mca_btl_ofi_put; OPAL_ERR_NOT_SUPPORTED when neither the op nor a
 *         compare-and-swap of that width exists
 */
int mca_btl_ofi_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/**
 * Fetching atomic: as mca_btl_ofi_aop, and the previous value is stored in
 * local_address (4 or 8 bytes) before cbfunc runs.
 */
int mca_btl_ofi_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/**
 * Compare-and-swap: stores value if *remote_address == compare; the previous
 * value goes to local_address. 64-bit, or 32-bit with MCA_BTL_ATOMIC_FLAG_32BIT.
 *
 * @retval as mca_btl_ofi_put; OPAL_ERR_NOT_SUPPORTED without a provider CAS of that width
 */
int mca_btl_ofi_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/** Continue an emulated atomic after one of its compare-and-swap steps completed. */
void mca_btl_ofi_emulation_step_done(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);
/** Post an emulated atomic's next compare-and-swap; -FI_EAGAIN defers it. */
void mca_btl_ofi_emulation_post(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op);

/* ---- module (btl_ofi_module.c) ----------------------------------------- */

/**
 * Drain, deregister, close every fid and free the module.
 * Safe on a module whose device_open failed part-way.
 */
int mca_btl_ofi_finalize(struct mca_btl_base_module_t *btl);

/** Drop any btl_ofi_flags bit the user set that this BTL cannot honour. */
void mca_btl_ofi_module_limit_flags(mca_btl_ofi_module_t *module);

/**
 * Argument check shared by every data-transfer entry point. osc/rdma 4.1 calls
 * compare-and-swap on node-local Win_allocate windows with no registration
 * handle (open-mpi/ompi#7967); refusing it sends osc/rdma down its local path.
 */
static inline bool mca_btl_ofi_args_ok(const struct mca_btl_base_endpoint_t *endpoint,
                                       const struct mca_btl_base_registration_handle_t *remote)
{
    if (OPAL_LIKELY(NULL != endpoint && NULL != remote)) {
        return true;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
    return false;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_H */
