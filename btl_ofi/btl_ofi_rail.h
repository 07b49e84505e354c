/*
 * btl-ofi rail: one libfabric domain with its endpoint, address vector and
 * completion queue, and everything that belongs to it: the negotiated MR mode,
 * completion level and atomics, the room for operations and their accounting,
 * how its CQ is read, and failure watching (btl_ofi_rail_setup.c opens and closes
 * it). The type alone lives here, at the bottom, for every layer to use.
 * A rail knows nothing of the module that owns it: it reports through the hooks
 * it was given (mca_btl_ofi_rail_hooks_t).
 */

#ifndef MCA_BTL_OFI_RAIL_H
#define MCA_BTL_OFI_RAIL_H

#include "btl_ofi.h"

#include <time.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"

#include "btl_ofi_pvar.h"

BEGIN_C_DECLS

/** Network rails (NICs) a module stripes large puts and gets over: its first and up to
 *  MCA_BTL_OFI_STRIPES_MAX - 1 more (btl_ofi_stripe.c). */
#define MCA_BTL_OFI_STRIPES_MAX 4
/** Rails of a module, and so handle slots of its registrations: the first network rail (0),
 *  the node-local rail (1), then each further NIC (2..). */
#define MCA_BTL_OFI_SLOTS (1 + MCA_BTL_OFI_STRIPES_MAX)

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
    bool nofetch_as_fetch; /**< non-fetching atomics are posted as fetching ones */
} mca_btl_ofi_atomic_caps_t;

/** What a rail can do, as Open MPI's BTL fields would say it: the module advertises what
 *  every rail it uses can do (btl_ofi_module.c). */
typedef struct mca_btl_ofi_rail_caps_t {
    uint32_t flags;        /**< MCA_BTL_FLAGS_* */
    uint32_t atomic_flags; /**< MCA_BTL_ATOMIC_SUPPORTS_* */
    size_t put_limit, get_limit;
    size_t put_alignment, get_alignment;
    /** local buffers of at least this many bytes come registered (0 under FI_MR_LOCAL) */
    size_t local_reg_threshold;
} mca_btl_ofi_rail_caps_t;

/** How a rail's owner hears from it: a lower layer reaches the one above only through
 *  these (NOTES.txt section 1). */
typedef struct mca_btl_ofi_rail_hooks_t {
    /** the BTL that completion callbacks name */
    struct mca_btl_base_module_t *btl;
    /** one pass over the owner's other rails, for a rail that waits (a peer it waits for may
     *  wait for this process's progress on another rail); the completions read */
    int (*progress_others)(void *owner, const struct mca_btl_ofi_rail_t *except);
    /** the rail's NIC failed (btl_ofi_fault.c): the owner reports it and shuts the rail
     *  (mca_btl_ofi_rail_shut) */
    void (*failed)(void *owner, struct mca_btl_ofi_rail_t *rail, const char *why, long waiting);
    void *owner;
} mca_btl_ofi_rail_hooks_t;

/** How the owner uses a rail, given when it is opened. */
typedef struct mca_btl_ofi_rail_config_t {
    mca_btl_ofi_rail_hooks_t hooks;
    /** where the rail's handle sits in a registration handle (0: first) */
    int index;
    /** the modex key's suffix ("" for the first rail, "-local", "-nic1", ...) */
    const char *modex_suffix;
    /** published to the processes of this node only */
    bool publish_on_node;
    /** its operations count in the local_* counters as well */
    bool count_local;
    /** a failure of its NIC is watched for (btl_ofi_fault.c) */
    bool watch_failures;
    /** its CQ is read at a pace beside other rails, and may be left to a wake-up
     *  (btl_ofi_wake.h) */
    bool paced;
    /** an endpoint without a 64-bit compare-and-swap sends its atomics as messages */
    bool casless_as_messages;
    /** whether local registrations of the owner reach it (it needs none of its own: no
     *  FI_MR_LOCAL allowed) */
    bool shares_local_handles;
} mca_btl_ofi_rail_config_t;

/** One libfabric domain and everything that belongs to it. */
struct mca_btl_ofi_rail_t {
    mca_btl_ofi_rail_config_t config;
    mca_btl_ofi_rail_caps_t caps;

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
    int reg_error; /**< the provider's last fi_mr_reg error (for the register-failed message) */

    /** operations posted and not yet completed */
    atomic_int_fast64_t outstanding;
    /** live registrations peers may reach (windows, osc/rdma's state and fragments): while
     *  none, Open MPI's progress loop does not read the CQ */
    atomic_int_fast64_t remote_regs;
    /** the CQ's size as asked (0: the provider's choice) and how many operations may be
     * outstanding beside the posted receives so that their completions always fit in it
     * (0: no bound) */
    size_t cq_size;
    int_fast64_t op_limit;
    opal_free_list_t ops;

    /* Proof-of-remote-completion target: 8 bytes every peer may read. */
    uint64_t proof_word;
    struct mca_btl_ofi_reg_t *proof_reg;

    opal_mutex_t endpoint_lock;
    opal_hash_table_t endpoints; /**< process name -> endpoint */

    opal_mutex_t reg_lock;
    opal_list_t live_regs;
    opal_hash_table_t regs_by_key; /**< key -> live registration */
    /** local registrations kept while their memory is mapped (btl_ofi_rcache.c), or NULL */
    struct mca_btl_ofi_rcache_t *rcache;
    /** FI_MR_LOCAL: registered slabs of operation words (mca_btl_ofi_words_slab_t) */
    opal_list_t word_slabs;

    /** operations whose next post met -FI_EAGAIN inside progress (op->repost) */
    opal_mutex_t deferred_lock;
    opal_list_t deferred;
    /** MCA_BTL_OFI_PASS_*: which of the deferred posts, queued messages and gathered puts
     *  hold work for the next progress pass, so that a pass reads one word, not three lists */
    atomic_uint pass_work;

    mca_btl_ofi_atomic_caps_t atomics;

    /** messages beside RMA (btl_ofi_msg.c); NULL where the provider grants no FI_MSG */
    struct mca_btl_ofi_msg_t *msg;
    /** what progress runs first when messages are on (sends what met -FI_EAGAIN) */
    void (*msg_progress)(struct mca_btl_ofi_rail_t *rail);
    /** questions to peers about their registrations (btl_ofi_locate.c), or NULL */
    struct mca_btl_ofi_locate_t *locate;
    /** questions asked and not yet served to a retry: while not 0, accesses look there */
    atomic_int locating;

    /** small puts to a busy peer travel gathered in messages (btl_ofi_coalesce.c) */
    bool coalesce;
    size_t coalesce_max; /**< the largest put that is gathered */
    struct mca_btl_ofi_coalesce_t *co;
    /** what progress runs first when coalescing is on (sends gathered puts) */
    void (*co_progress)(struct mca_btl_ofi_rail_t *rail);

    bool initialized;

    /** every atomic travels as a message that the target applies (btl_ofi_am.c) */
    bool atomics_as_messages;
    /** every get travels as a request that the target answers with the data */
    bool gets_as_messages;
    /** the message handlers of both are set (rail->msg exists) */
    bool am_ready;

    /** idle reads of a paced rail's CQ (btl_ofi_pace.c), CLOCK_MONOTONIC ns: what a quiet
     *  one costs (the least of late, slowly rising), before when the next one waits, until
     *  when every pass reads it. On the rail read at every pass beside paced ones: what a
     *  quiet read of its CQ costs, and until when it counts as at work */
    uint64_t idle_read_ns, idle_read_next, eager_until;
    /** a paced rail's CQ descriptor (FI_WAIT_FD), polled through a ring of its own
     *  (btl_ofi_wake.h): its state (MCA_BTL_OFI_WAKE_*), the descriptor, the ring,
     *  progress calls that found the ring quiet since the last look at the clock, and when
     *  an armed one is read all the same (CLOCK_MONOTONIC ns) */
    int wake_state;
    int wake_fd;
    struct mca_btl_ofi_wake_ring_t *wake_ring;
    unsigned wake_passes, wake_quiet;
    uint64_t wake_safety_next;

    /* A NIC that fails while operations are in flight on it (btl_ofi_fault.c). */
    /** its operations are listed (posted) and a stall is looked into */
    bool watch;
    /** the NIC failed: every call on it returns OPAL_ERR_UNREACH, and nothing of it is
     *  called again (its endpoint is closed where the provider moves data on its own) */
    atomic_bool failed;
    /** failed with its endpoint left open (a provider that moves data only in our calls):
     *  its fids are never closed (btl_ofi_fault.h) */
    bool quarantined;
    opal_mutex_t posted_lock;
    /** with watch: every operation taken and not yet released, newest first */
    struct mca_btl_ofi_op_t *posted;
    /** CLOCK_MONOTONIC seconds: since when reads find nothing while operations wait (0: not
     *  now), and when the link is looked at next */
    double stall_since, next_probe;
    unsigned empty_reads;    /**< empty CQ reads with operations waiting, since the last clock */
    int stall_timeout;       /**< seconds of such a wait that mean a failed NIC; 0: none */
    bool stall_timeout_auto; /**< stall_timeout is btl_ofi_nic_timeout's default (-1) */
    char *link_state; /**< /sys/class/net/<domain>/operstate where the domain is one, or NULL */
};

/** CLOCK_MONOTONIC in nanoseconds (the pace of idle CQ reads: btl_ofi_ops.c). */
static inline uint64_t mca_btl_ofi_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** CLOCK_MONOTONIC in seconds (finalize's bounded drain, a NIC's stall: btl_ofi_fault.c). */
static inline double mca_btl_ofi_now(void)
{
    return 1e-9 * (double)mca_btl_ofi_now_ns();
}

/** What a progress pass runs before it reads the CQ (rail->pass_work). */
enum {
    MCA_BTL_OFI_PASS_DEFERRED = 0x1, /**< posts that met -FI_EAGAIN (mca_btl_ofi_defer) */
    MCA_BTL_OFI_PASS_MSG = 0x2,      /**< messages refused before (rail->msg_progress) */
    MCA_BTL_OFI_PASS_CO = 0x4,       /**< gathered puts to send (rail->co_progress) */
};

/** Tell the next progress pass of rail to run what (MCA_BTL_OFI_PASS_*); called after the
 *  work is listed, so a pass that takes the word and then the list finds it. */
static inline void mca_btl_ofi_rail_pass_wants(mca_btl_ofi_rail_t *rail, unsigned what)
{
    if (what != (atomic_load_explicit(&rail->pass_work, memory_order_relaxed) & what)) {
        atomic_fetch_or(&rail->pass_work, what);
    }
}

/** Operations of this rail's own in flight, or waiting to be posted again. */
static inline bool mca_btl_ofi_rail_busy(mca_btl_ofi_rail_t *rail)
{
    return 0 != atomic_load_explicit(&rail->outstanding, memory_order_relaxed) ||
           !opal_list_is_empty(&rail->deferred);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_RAIL_H */
