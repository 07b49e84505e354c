/*
 * ofi_strictmr: a libfabric test provider that layers over an RDM core
 * provider and enforces the memory-registration rules of the MR mode it is
 * told to demand. Design notes: strictmr/README.md.
 */
#ifndef STRICTMR_H
#define STRICTMR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "strictmr_ext.h"

#define STRICTMR_NAME "ofi_strictmr"
#define STRICTMR_VERSION FI_VERSION(0, 1)
#define STRICTMR_MAX_KEY 16        /* raw keys may be this wide */
#define STRICTMR_IOV_LIMIT 4       /* iov / rma_iov entries per operation */
#define STRICTMR_TABLE_SLOTS 16384 /* MRs per domain, live and closed (power of 2) */
#define STRICTMR_MR_MODES                                                                          \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_RAW)
/* What we let the core ask of us: we register and address for it ourselves. */
#define STRICTMR_CORE_MR_MODES (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define STRICTMR_CAPS                                                                              \
    (FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |       \
     FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM)
/* What we ask the core for when the caller names none of these (fi_info without -c). */
#define STRICTMR_DEFAULT_CAPS (FI_MSG | FI_RMA | FI_ATOMIC)
/* Asked for in hints, these get no info. */
#define STRICTMR_REFUSED_CAPS (FI_TAGGED | FI_RMA_EVENT | FI_COLLECTIVE)

extern struct fi_provider strictmr_prov;

/* ---------------------------------------------------------------- params */
/* Which atomics the emulated NIC offers (FI_OFI_STRICTMR_ATOMICS). */
enum strictmr_atomics {
    STRICTMR_ATOMICS_ALL,  /* whatever the core offers (default) */
    STRICTMR_ATOMICS_NIC,  /* 64-bit FI_SUM and FI_CSWAP only, as verbs hardware */
    STRICTMR_ATOMICS_NONE  /* FI_RMA without FI_ATOMIC */
};

/*
 * Behaviours of real NICs (issue 25). Every one is off by default; each has an
 * FI_OFI_STRICTMR_* variable, and FI_OFI_STRICTMR_PROFILE sets several at once.
 */
struct strictmr_behaviour {
    const char *profile;          /* the profile applied, or NULL */
    bool reorder;                 /* RMA and atomics reach the core, and complete, out of order */
    unsigned reorder_window;      /* operations held per endpoint before a release */
    long progress_us;             /* >= 0: own progress thread, this delay; < 0: none */
    size_t tx_size;               /* 0: the core's */
    size_t rx_size;               /* 0: the core's */
    size_t cq_size;               /* 0: the caller's or the core's */
    bool no_delivery_complete;    /* transmit-complete only */
    bool inject_zero;             /* inject_size 0 */
    enum strictmr_atomics atomics;
    size_t max_rma_size;          /* 0: no limit below the core's max_msg_size */
    bool write_only;              /* FI_WRITE / FI_REMOTE_WRITE without FI_READ */
    unsigned reg_cost_us;         /* fixed cost of each fi_mr_reg */
    unsigned reg_cost_page_ns;    /* and per 4 KiB page */
    size_t reg_limit;             /* live registrations per domain; 0: no limit */
    long inject_size;             /* >= 0: tx inject_size at most this; < 0: the core's */
};

struct strictmr_config {
    uint64_t mr_mode;  /* the FI_MR_* bits demanded of callers */
    size_t key_size;   /* bytes; > 8 only with FI_MR_RAW */
    char *report_path; /* FI_OFI_STRICTMR_REPORT, or NULL */
    bool valid;        /* false: a parameter was unreadable, getinfo offers nothing */
    struct strictmr_behaviour nic;
};
extern struct strictmr_config strictmr_config;
void strictmr_params_init(void);
int strictmr_read_number(const char *name, const char *var, unsigned long long min,
                         unsigned long long max, unsigned long long *value);
/* Writes "local,virt_addr" style text for a mode into buf. */
void strictmr_mode_str(uint64_t mode, char *buf, size_t len);

/* ---------------------------------------------------------------- registry */
enum strictmr_slot_state { STRICTMR_SLOT_EMPTY, STRICTMR_SLOT_LIVE, STRICTMR_SLOT_CLOSED };

/* One MR as every process on the host sees it (in the owner's shm segment). */
struct strictmr_slot {
    atomic_uint seq; /* odd while the owner rewrites the slot */
    uint32_t state;
    uint32_t gen;
    uint32_t key_size;
    uint8_t key[STRICTMR_MAX_KEY];
    uint64_t base;
    uint64_t len;
    uint64_t access;
    uint64_t core_key;
    uint32_t ep_id; /* FI_MR_ENDPOINT: the endpoint bound, 0 = none */
    uint32_t enabled;
};

struct strictmr_table {
    uint64_t magic;
    int32_t pid;
    uint32_t slots;
    uint64_t mr_mode;
    uint32_t key_size;
    atomic_uint alive; /* 0 once the owning domain closed */
    struct strictmr_slot slot[];
};

/* A key as bytes: little-endian uint64 for ordinary keys, raw bytes with FI_MR_RAW. */
struct strictmr_key {
    size_t size;
    uint8_t bytes[STRICTMR_MAX_KEY];
};

struct strictmr_segment {
    char name[64];
    void *addr;
    size_t len;
    struct strictmr_segment *next_owned; /* made by this process, not yet unlinked */
};

int strictmr_table_create(struct strictmr_segment *seg, unsigned domain_id);
void strictmr_table_destroy(struct strictmr_segment *seg);
/* Index of the slot holding key, or of the first free slot for it; -1: table full. */
int strictmr_table_probe(const struct strictmr_table *t, const struct strictmr_key *key,
                         bool for_insert);
/* Copies a slot consistently while its owner may be rewriting it. */
void strictmr_slot_snapshot(const struct strictmr_slot *s, struct strictmr_slot *out);
void strictmr_slot_begin_write(struct strictmr_slot *s);
void strictmr_slot_end_write(struct strictmr_slot *s);
bool strictmr_key_equal(const struct strictmr_slot *s, const struct strictmr_key *key);

/* What an initiator knows about one target endpoint. */
struct strictmr_peer {
    struct strictmr_segment table; /* the target domain's table, mapped read-only */
    uint32_t ep_id;
    bool resolved;
};
int strictmr_ep_publish(struct strictmr_segment *seg, const void *name, size_t namelen,
                        const char *table_name, uint32_t ep_id);
void strictmr_segment_unlink(struct strictmr_segment *seg);
/* The provider's cleanup: unlinks every segment this process made and still names. */
unsigned strictmr_segments_unlink_all(void);
int strictmr_peer_resolve(struct strictmr_peer *peer, const void *name, size_t namelen);
void strictmr_peer_release(struct strictmr_peer *peer);

/* ---------------------------------------------------------------- objects */
struct strictmr_fabric {
    struct fid_fabric fabric;
    struct fid_fabric *core;
};

struct strictmr_mr;

struct strictmr_raw_map {
    uint64_t key; /* what fi_mr_map_raw handed out */
    uint64_t base_addr;
    struct strictmr_key raw;
};

struct strictmr_domain {
    struct fid_domain domain;
    struct fid_domain *core;
    struct fi_info *core_info;
    bool core_virt; /* the core addresses MRs by virtual address */
    struct strictmr_fabric *fabric;
    unsigned id;
    pthread_mutex_t lock; /* the local MR table, raw maps, endpoint ids */
    struct strictmr_segment table_seg;
    struct strictmr_table *table;
    struct strictmr_engine_domain *engine; /* NULL: no NIC data-path behaviour is on */
    struct strictmr_mr **local; /* slot -> our MR, NULL when closed */
    struct strictmr_raw_map *raw_maps;
    size_t raw_map_count;
    uint64_t next_raw_key;
    uint64_t next_core_key;
    uint32_t next_ep_id;
    atomic_int refs;
    size_t live_mrs; /* registrations not closed yet (FI_OFI_STRICTMR_REG_LIMIT), under lock */
};

struct strictmr_av {
    struct fid_av av;
    struct fid_av *core;
    struct strictmr_domain *domain;
    pthread_mutex_t lock;
    struct strictmr_peer **peers; /* indexed by fi_addr; NULL: not resolved */
    size_t peer_count;
    atomic_int refs;
};

/* An error completion this provider raised (strictmr_cq_error.c). */
struct strictmr_cq_error {
    struct strictmr_cq_error *next;
    struct fi_cq_err_entry entry;
};

struct strictmr_cq {
    struct fid_cq cq;
    struct fid_cq *core;
    struct strictmr_domain *domain;
    pthread_mutex_t lock;
    struct strictmr_cq_error *head, *tail; /* errors this provider raised */
    atomic_int refs;
    struct strictmr_engine_cq *engine; /* NULL: the core's entries pass through */
};

struct strictmr_ep {
    struct fid_ep ep;
    struct fid_ep *core;
    struct strictmr_domain *domain;
    struct strictmr_av *av;
    struct strictmr_cq *tx_cq;
    struct strictmr_cq *rx_cq;
    uint32_t id;
    struct strictmr_segment published;
    struct strictmr_engine_ep *engine; /* NULL: posts go straight to the core */
};

struct strictmr_mr {
    struct fid_mr mr;
    struct fid_mr *core;
    struct strictmr_domain *domain;
    int slot;
    uint32_t gen;
    uint64_t base;
    uint64_t len;
    struct strictmr_key key;
    uint32_t ep_id; /* FI_MR_ENDPOINT: bound endpoint */
    bool enabled;
};

#define strictmr_container(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

int strictmr_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                     const struct fi_info *hints, struct fi_info **info);
int strictmr_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int strictmr_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                         struct fid_domain **domain, void *context);
int strictmr_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
                     void *context);
int strictmr_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
                     void *context);
int strictmr_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
                     void *context);
extern struct fi_ops_mr strictmr_mr_ops;
int strictmr_domain_raw_control(struct strictmr_domain *domain, int command, void *arg);
extern struct fi_ops_rma strictmr_rma_ops;
extern struct fi_ops_atomic strictmr_atomic_ops;
extern struct fi_ops_msg strictmr_msg_ops;
extern struct fi_ops_tagged strictmr_tagged_ops;

/* The core info behind one of our infos, asking the core nothing the engine itself adds. */
int strictmr_engine_core_info(const struct fi_info *info, struct fi_info **core);
/* Strips ";ofi_strictmr" (or all of "ofi_strictmr") from a provider name; NULL if nothing is
 * left. The result is malloc'd. */
char *strictmr_core_prov_name(const char *prov_name);
/* Our fid, or NULL when fid belongs to someone else. */
struct strictmr_av *strictmr_av_of(struct fid *fid);
struct strictmr_cq *strictmr_cq_of(struct fid *fid);
struct strictmr_ep *strictmr_ep_of(struct fid *fid);
struct strictmr_peer *strictmr_av_peer(struct strictmr_av *av, fi_addr_t addr);
/* Queues an error completion this provider raised. */
int strictmr_cq_raise(struct strictmr_cq *cq, void *context, uint64_t flags, int err);
bool strictmr_cq_has_errors(struct strictmr_cq *cq);
/* The oldest raised error, off the queue (the caller frees it), or NULL. */
struct strictmr_cq_error *strictmr_cq_pop_error(struct strictmr_cq *cq);

/* ---------------------------------------------------------------- engine */
/*
 * The NIC data path (strictmr_engine*.c): reordering, own progress, tight queues.
 * Used only when one of them is on (strictmr_engine_on); then every post of an
 * endpoint goes through strictmr_engine_post and every CQ read through the
 * engine's completion ring.
 */
struct strictmr_engine_domain;
struct strictmr_engine_cq;
struct strictmr_engine_ep;

/* A CQ's entries when neither the caller nor FI_OFI_STRICTMR_CQ_SIZE bounds it. */
#define STRICTMR_CQ_DEFAULT_ENTRIES 8192

enum strictmr_post_kind {
    STRICTMR_POST_SEND,
    STRICTMR_POST_RECV,
    STRICTMR_POST_WRITE,
    STRICTMR_POST_READ,
    STRICTMR_POST_ATOMIC,
    STRICTMR_POST_FETCH,
    STRICTMR_POST_COMPARE
};

/* One checked operation in the form of the *msg calls, with the core's keys and addresses. */
struct strictmr_post {
    enum strictmr_post_kind kind;
    uint64_t flags;  /* as for the *msg calls (FI_REMOTE_CQ_DATA for the *data calls) */
    bool op_flags;   /* a call without flags: the endpoint's operation flags apply */
    bool inject;     /* fi_inject*: no completion, the buffer is the caller's again at return */
    const struct iovec *iov; /* messages and RMA */
    size_t iov_count;
    const struct fi_ioc *ioc[3]; /* atomics: data, result, compare */
    size_t ioc_count[3];
    size_t datatype_size;
    const struct fi_rma_iov *rma; /* RMA */
    const struct fi_rma_ioc *rma_ioc; /* atomics */
    size_t rma_count;
    fi_addr_t addr;
    uint64_t data;
    enum fi_datatype datatype;
    enum fi_op op;
    void *context;
};

bool strictmr_engine_on(void);
void strictmr_engine_shape_info(struct fi_info *info);
/* The domain's engine lock, for control calls into core objects the progress thread may be
 * progressing (enable, bind, close); nothing when the engine is off. */
void strictmr_engine_lock(struct strictmr_domain *dom);
void strictmr_engine_unlock(struct strictmr_domain *dom);
/* What the engine itself adds (progress, queue sizes) taken out of hints for the core. */
void strictmr_engine_core_hints(struct fi_info *asked);
bool strictmr_engine_hints_ok(const struct fi_info *hints);
int strictmr_engine_domain_open(struct strictmr_domain *dom);
void strictmr_engine_domain_close(struct strictmr_domain *dom);
/* The provider's cleanup (libfabric unloads it): stops the progress threads still running. */
void strictmr_engine_cleanup(void);
int strictmr_engine_cq_open(struct strictmr_cq *cq, const struct fi_cq_attr *attr, void *context);
/* With the engine lock held. */
void strictmr_engine_cq_close(struct strictmr_cq *cq);
ssize_t strictmr_engine_cq_read(struct strictmr_cq *cq, void *buf, size_t count,
                                fi_addr_t *src_addr, int timeout);
ssize_t strictmr_engine_cq_readerr(struct strictmr_cq *cq, struct fi_cq_err_entry *buf,
                                   uint64_t flags);
int strictmr_engine_ep_open(struct strictmr_ep *ep, const struct fi_info *info);
/* The core is bound without FI_SELECTIVE_COMPLETION (the engine counts every core completion
 * and drops the unwanted ones itself); once the core's bind succeeded, this records the
 * caller's flags (lock held). */
void strictmr_engine_ep_bind_cq(struct strictmr_ep *ep, uint64_t flags);
/* An endpoint was enabled: the progress thread may read its CQs from now on (lock held). */
void strictmr_engine_ep_enabled(struct strictmr_ep *ep);
/* fi_control(FI_SETOPSFLAG / FI_GETOPSFLAG, set or not): the engine keeps the endpoint's
 * operation flags (it hands the core each operation's flags). *flags names FI_TRANSMIT or
 * FI_RECV, not both (fi_endpoint(3)); anything else gets -FI_EINVAL and changes nothing. */
int strictmr_engine_ep_op_flags(struct strictmr_ep *ep, bool set, uint64_t *flags);
/* With the engine lock held. */
void strictmr_engine_ep_close(struct strictmr_ep *ep);
ssize_t strictmr_engine_size_left(struct strictmr_ep *ep, bool rx);
ssize_t strictmr_engine_cancel(struct strictmr_ep *ep, void *context);
ssize_t strictmr_engine_post(struct strictmr_ep *ep, const struct strictmr_post *post);
/* How a call names its flags. */
enum strictmr_call {
    STRICTMR_CALL_PLAIN,  /* fi_write and the like: the endpoint's operation flags */
    STRICTMR_CALL_MSG,    /* the *msg calls: their flags */
    STRICTMR_CALL_INJECT, /* fi_inject*: no completion */
};
/* The posting calls' way into strictmr_engine_post, with the core's keys and addresses. */
ssize_t strictmr_engine_msg(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                            const struct iovec *iov, size_t count, fi_addr_t addr, uint64_t flags,
                            uint64_t data, enum strictmr_call how, void *context);
ssize_t strictmr_engine_rma(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                            const struct iovec *iov, size_t count, fi_addr_t addr,
                            const struct fi_rma_iov *rma, uint64_t flags, uint64_t data,
                            enum strictmr_call how, void *context);
ssize_t strictmr_engine_rma_msg(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                                const struct fi_msg_rma *msg, uint64_t flags);
ssize_t strictmr_engine_atomic(struct strictmr_ep *ep, enum strictmr_post_kind kind,
                               const struct fi_msg_atomic *msg, const struct fi_ioc *resultv,
                               size_t result_count, const struct fi_ioc *comparev,
                               size_t compare_count, uint64_t flags, enum strictmr_call how);

/* ---------------------------------------------------------------- checks */
enum strictmr_op {
    STRICTMR_OP_WRITE,
    STRICTMR_OP_READ,
    STRICTMR_OP_ATOMIC,
    STRICTMR_OP_FETCH,
    STRICTMR_OP_COMPARE,
    STRICTMR_OP_SEND, /* messages name no target MR: only their local buffers are checked */
    STRICTMR_OP_RECV
};

/* The local buffers of one operation: data, result, compare. */
struct strictmr_local_set {
    const struct iovec *iov;
    void **desc;
    size_t count;
};

struct strictmr_xfer {
    enum strictmr_op op;
    struct strictmr_local_set local[3];
    fi_addr_t peer;               /* RMA and atomics only */
    const struct fi_rma_iov *rma; /* RMA and atomics only */
    size_t rma_count;
    void *context;
};

/* 0: passes, core_rma (RMA and atomics) holds the core's keys and addresses; 1: a violation was
 * reported as an error completion (a receive's on the receive CQ); < 0: an error to return to
 * the caller. */
int strictmr_xfer_check(struct strictmr_ep *ep, const struct strictmr_xfer *x,
                        struct fi_rma_iov *core_rma);
/* What a data call returns for strictmr_xfer_check's answer when it does not reach the core:
 * a violation already reported as an error completion is a successful post. */
static inline ssize_t strictmr_verdict(int ret)
{
    return ret > 0 ? 0 : ret;
}
#define STRICTMR_EP_OF(ep_fid) strictmr_container(ep_fid, struct strictmr_ep, ep)
/* Records that a rule was evaluated and, if violated, logs and counts it;
 * returns the rule's error (positive) or 0. */
int strictmr_rule(enum strictmr_rule rule, bool violated, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int strictmr_rule_errno(enum strictmr_rule rule);
void strictmr_stats_read(struct strictmr_stats *stats);
/* Counts n occurrences of a behaviour (strictmr_ext.h). */
void strictmr_event(enum strictmr_event event, uint64_t n);
const char *strictmr_rule_name(int rule);
void strictmr_report_write(void);
extern struct strictmr_stats_ops strictmr_stats_ops;

/* The MR behind a local desc, checked; the domain lock must be held. */
int strictmr_desc_check(struct strictmr_ep *ep, const void *buf, size_t len, void *desc);
bool strictmr_mode(uint64_t bit);
/* Both with the domain lock held. */
struct strictmr_mr *strictmr_desc_mr(struct strictmr_domain *domain, void *desc);
const struct strictmr_raw_map *strictmr_raw_map_find(struct strictmr_domain *domain, uint64_t key);
void strictmr_key_from_u64(struct strictmr_key *key, uint64_t value, size_t size);

/* ---------------------------------------------------------------- NIC behaviours */
/* libfabric >= 1.20 states an RMA-only size limit (fi_getopt FI_OPT_MAX_RMA_SIZE); the FI_OPT_*
 * names are enumerators, so the version decides. */
#define STRICTMR_HAVE_OPT_MAX_RMA_SIZE                                                             \
    FI_VERSION_GE(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), FI_VERSION(1, 20))
/* The completion levels a transmit-complete-only NIC lacks. */
#define STRICTMR_DC_FLAGS (FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)

/* strictmr_prov.c: what the behaviours do to an info, and to hints. */
void strictmr_nic_info(struct fi_info *info);
/* FI_OFI_STRICTMR_NIC_PCI (strictmr_device.c): defined and read at init. */
void strictmr_device_params(void);
/* The PCI address FI_OFI_STRICTMR_NIC_PCI gives info's domain, as its nic; 0 or -FI_ENOMEM. */
int strictmr_device_info(struct fi_info *info);
bool strictmr_nic_hints_accept(const struct fi_info *hints);
/* strictmr_nic.c: counts an operation the emulated NIC lacks, logs why; returns err (< 0). */
int strictmr_nic_refuse(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A post of op moving len bytes with these flags (FI_INJECT, completion levels): 0 or refused. */
int strictmr_nic_post(enum strictmr_op op, size_t len, uint64_t flags);
/* fi_endpoint: default op_flags the NIC cannot honour are refused. */
int strictmr_nic_ep_check(const struct fi_info *info);
/* fi_control(FI_SETOPSFLAG) of *flags (NULL: nothing to judge): transmit defaults the NIC
 * cannot honour are refused the same way, before the engine or the core takes them. */
int strictmr_nic_set_op_flags(const uint64_t *flags);
/* fi_getopt answers the endpoint's limits; -FI_ENOPROTOOPT: not one of ours. */
int strictmr_nic_getopt(struct strictmr_ep *ep, int level, int optname, void *optval,
                        size_t *optlen);
/* strictmr_atomic.c: 0 if the NIC offers this atomic (kind: ATOMIC, FETCH or COMPARE), else
 * -FI_EOPNOTSUPP; count limits the elements of one operation. */
int strictmr_atomic_offered(enum strictmr_op kind, enum fi_datatype datatype, enum fi_op op);
void strictmr_atomic_count_limit(size_t *count);
/* strictmr_params.c: does the NIC offer any atomic at all? */
bool strictmr_nic_has_atomics(void);

#endif /* STRICTMR_H */
