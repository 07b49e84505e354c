/*
 * stale_key's lowest layer (stale_key_base.c): the types every part shares, the run's
 * settings, the names of probes and configurations, and the clock, CQ and pipe helpers.
 * The parts above it each have a header of their own, and each includes only those below:
 *   stale_key.c         options, the rows to measure, main
 *   stale_key_output.c  the table and the JSON rows
 *   stale_key_pair.c    a probe's process pair: forked, bounded and reaped by the
 *                       parent; each child's fabric, endpoint and report
 *   stale_key_probe.c   what the target and the origin do in a probe
 *   stale_key_base.c    this header's functions
 */
#ifndef STALE_KEY_BASE_H
#define STALE_KEY_BASE_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdio.h>

#define REQUESTED_KEY 0x5a1
#define BOGUS_KEY_DISTANCE 0x1000
#define BYTES 8
#define TAG_LEN 96
#define ADDR_LEN 256

enum { P_BOGUS, P_STALE_WRITE, P_STALE_READ, P_SAME_KEY, P_FRESH_KEY, NPROBES };
extern const char *const probe_names[NPROBES];

enum { CFG_APP, CFG_PROV, CFG_BTL };
extern const char *const cfg_names[];

struct config {
    const char *prov;
    int kind;     /* CFG_* */
    int delivery; /* app/prov: ask for FI_DELIVERY_COMPLETE; btl: negotiated */
};

/* The command line's settings (stale_key_base.c; main sets them). */
extern int offer_virt_addr;
extern long wait_ms;
extern long settle_ms;
extern int json;

/* One operation posted by the origin. */
struct outcome {
    int tried;
    int post_rc;         /* 0, or the last posting's negative libfabric error */
    char completion[16]; /* ok, error, none (within wait_ms), not_posted, not_tried */
    int err, prov_errno; /* error completion */
    char error[TAG_LEN]; /* fi_strerror(err) */
    long waited_ms;
    char late[TAG_LEN]; /* a completion that came after the wait ended, "" if none */
    uint8_t data[BYTES];
};

/* What one side saw, sent back to the parent through a pipe. */
struct result {
    char setup[TAG_LEN];                   /* first failing setup call and its error, "" if none */
    uint64_t mr_mode, op_flags, msg_order; /* granted */
    uint64_t key_a, key_b;                 /* target */
    char reg_b[TAG_LEN];                   /* target: "", "ok" or "refused: ..." */
    int control_landed;                    /* target */
    int changed_a, changed_b;              /* target: memory changed during the probe */
    int cq_errors;                         /* error entries on this side's own CQ */
    struct outcome control, probe;         /* origin */
};

struct side {
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
    int to_peer, from_peer;
    struct result *res;
};

enum { OP_PENDING, OP_OK, OP_ERROR };
struct op {
    struct fi_context2 ctx; /* first: the provider's room (FI_CONTEXT / FI_CONTEXT2) */
    int state;
    int waiting; /* the bounded wait is still running */
    struct outcome *out;
    uint8_t buf[BYTES];
};

/* One probe's process pair, as the parent saw it. */
struct probe_run {
    int got_t, got_o; /* reports received */
    int killed;       /* the pair did not finish within the bound */
    struct result t, o;
};

/* In a function with a struct side *s: record the first failing setup call, return 1. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ < 0) {                                                                             \
            snprintf(s->res->setup, TAG_LEN, "%.50s: %s", #call, fi_strerror(-rc_));               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static inline int all_bytes(const volatile uint8_t *p, uint8_t v)
{
    for (int i = 0; i < BYTES; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

long now_ms(void);
void nap(void);
void drain(struct side *s);
int recv_peer(struct side *s, void *msg, size_t len, long ms);
long peer_ms(void);
int wait_peer(struct side *s, char *msg);
int tell_peer(struct side *s, char msg);

#endif
