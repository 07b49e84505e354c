/*
 * The raw libfabric reference: two processes on this machine, no MPI, the
 * same provider and the same terms the BTL negotiates (FI_EP_RDM, RMA +
 * atomics, MR mode virt_addr|prov_key|allocated at most, FI_DELIVERY_COMPLETE
 * in tx op_flags when granted else RMA/atomic read-after-write ordering,
 * FI_PROGRESS_MANUAL data progress, FI_CQ_FORMAT_CONTEXT, fi_context2
 * contexts). Its figures are the provider's limit that btl-ofi is measured
 * against.
 */
#ifndef OSC_HARNESS_OFI_REF_H
#define OSC_HARNESS_OFI_REF_H

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stddef.h>
#include <stdint.h>

#define REF_FI_VERSION FI_VERSION(1, 9)

/* One process's side of the reference. */
typedef struct ref_fabric {
    int role; /* 0 drives one-directional tests, 1 is their target */
    int sock; /* out-of-band channel to the other process */

    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    int delivery_complete; /* 0: remote completion proven by a read after the writes */
    /* acc as fi_fetch_atomic into acc_sink, as the BTL posts it on shm with delivery-complete,
     * where fi_atomic releases an inject buffer twice (NOTES.txt section 8) */
    int acc_as_fetch;
    int64_t acc_sink;

    char *region; /* registered: data, then the control page */
    size_t data_len;
    volatile uint64_t *ctrl; /* first word of the control page: step counter the peer writes */
    uint64_t *scratch;       /* second word: proof reads target it */
    char *origin;            /* unregistered local buffer, like the BTL's (no FI_MR_LOCAL) */

    fi_addr_t peer;
    uint64_t peer_base; /* peer's region start as the target address (0 without virt_addr) */
    uint64_t peer_key;

    struct fi_context2 *ctxs; /* one per operation in flight */
    int nctx;
    uint64_t outstanding;
    uint64_t step_src; /* source of the step word written to the peer */
    int64_t proof_src; /* operand/result of proof reads */
    int64_t proof_dst;
} ref_fabric_t;

/** Open everything for provider prov, register data_len + a page, exchange addresses. */
int ref_fabric_open(ref_fabric_t *f, const char *prov, size_t data_len, int max_window);
void ref_fabric_close(ref_fabric_t *f);

/** Describe what was negotiated (provider, MR mode, completion), for the header. */
void ref_fabric_describe(const ref_fabric_t *f, char *buf, size_t len);

/* Out-of-band: block until the other process reaches the same point / exchange one double. */
int ref_oob_barrier(ref_fabric_t *f);

/** Enter network namespace /run/netns/NAME (NULL or "": stay); 0, or -1 with a message. */
int ref_enter_netns(const char *name);
int ref_oob_exchange(ref_fabric_t *f, double mine, double *theirs);

/** Read completions; returns how many, exits the process on a completion error. */
int ref_progress(ref_fabric_t *f);
/** Progress until nothing is outstanding. */
void ref_wait_all(ref_fabric_t *f);

/* What ref_post posts: fi_write, fi_read, fi_atomic SUM, fi_fetch_atomic SUM, fi_compare_atomic. */
typedef enum { REF_PUT, REF_GET, REF_ACC, REF_FOP, REF_CAS, REF_ATOMIC_READ } ref_kind_t;

/**
 * Post one operation (progressing while the provider says -FI_EAGAIN; what names the call in
 * an error): put and get of len bytes between the origin buffer and the peer's data at off;
 * atomics of one int64 at off that add 1 (cas: swap 0 for 1), fetching into result. slot
 * picks the context.
 */
void ref_post(ref_fabric_t *f, const char *what, ref_kind_t kind, size_t off, size_t len,
              int64_t *result, int slot);

/**
 * What MPI_Win_flush costs at the least: nothing more with FI_DELIVERY_COMPLETE; else one
 * read (after writes) or one atomic read (after atomics) ordered behind them.
 */
void ref_flush(ref_fabric_t *f, int after_atomics);

/** End of a step: tell the peer, then progress until the peer said so too. */
void ref_step_done(ref_fabric_t *f, uint64_t step);

#endif
