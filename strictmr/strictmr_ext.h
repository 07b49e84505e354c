/*
 * ofi_strictmr: what a program may ask the provider for besides libfabric's own
 * calls. Tests read the check and violation counters through fi_open_ops on the
 * fabric; a process without the provider loaded simply gets -FI_ENOSYS.
 */
#ifndef STRICTMR_EXT_H
#define STRICTMR_EXT_H

#include <stdint.h>

#define STRICTMR_STATS_OPS_NAME "ofi_strictmr_stats_v1"

/* The rules, in the order of the provider's check table (strictmr_check.c). */
enum strictmr_rule {
    STRICTMR_RULE_KEY_UNKNOWN,    /* a remote key this target never issued */
    STRICTMR_RULE_KEY_CLOSED,     /* a remote key whose MR is closed */
    STRICTMR_RULE_KEY_WIDTH,      /* fi_mr_reg: requested_key wider than mr_key_size */
    STRICTMR_RULE_KEY_IN_USE,     /* fi_mr_reg: requested_key already live */
    STRICTMR_RULE_RANGE,          /* remote address/length outside the MR */
    STRICTMR_RULE_REMOTE_ACCESS,  /* MR lacks FI_REMOTE_READ/FI_REMOTE_WRITE */
    STRICTMR_RULE_TARGET_UNKNOWN, /* no strictmr endpoint published at that address */
    STRICTMR_RULE_MR_UNBOUND,     /* FI_MR_ENDPOINT: MR not bound to the endpoint used */
    STRICTMR_RULE_MR_DISABLED,    /* FI_MR_ENDPOINT: MR bound but not enabled */
    STRICTMR_RULE_MR_BIND,        /* FI_MR_ENDPOINT: bad fi_mr_bind / fi_mr_enable order */
    STRICTMR_RULE_DESC_MISSING,   /* FI_MR_LOCAL: NULL desc for a local buffer */
    STRICTMR_RULE_DESC_INVALID,   /* FI_MR_LOCAL: desc not a live MR of this domain */
    STRICTMR_RULE_DESC_RANGE,     /* FI_MR_LOCAL: desc's MR does not cover the buffer */
    STRICTMR_RULE_ALLOCATED,      /* FI_MR_ALLOCATED: unmapped pages at fi_mr_reg */
    STRICTMR_RULE_RAW_UNMAPPED,   /* FI_MR_RAW: key not from fi_mr_map_raw */
    STRICTMR_RULE_COUNT
};

/*
 * What the provider did while behaving like a NIC (issue 25): each behaviour
 * has a counter, so a test over a behaviour can show that it happened.
 */
enum strictmr_event {
    STRICTMR_EV_REORDERED,         /* operations handed to the core in another order than posted */
    STRICTMR_EV_COMPLETIONS_REORDERED, /* completions returned in another order than the core's */
    STRICTMR_EV_THREAD_OPS,        /* operations the provider's own thread handed to the core */
    STRICTMR_EV_THREAD_COMPLETIONS, /* core completions reaped by the provider's own thread */
    STRICTMR_EV_TX_EAGAIN,         /* posts refused with -FI_EAGAIN: transmit queue full */
    STRICTMR_EV_RX_EAGAIN,         /* receives refused with -FI_EAGAIN: receive queue full */
    STRICTMR_EV_CQ_FULL,           /* completions that found their CQ full (an overrun on a NIC) */
    STRICTMR_EV_OP_REFUSED,        /* operations the emulated NIC lacks (atomic, read, size, DC) */
    STRICTMR_EV_REG_CHARGED,       /* fi_mr_reg calls that paid the registration cost */
    STRICTMR_EV_REG_CHARGED_US,    /* microseconds charged for them in all */
    STRICTMR_EV_REG_REFUSED,       /* fi_mr_reg calls refused: live registration limit */
    STRICTMR_EV_UNLOAD_STOPPED,    /* progress threads stopped when unloaded, domain open */
    STRICTMR_EV_COUNT
};

struct strictmr_stats {
    uint64_t checked[STRICTMR_RULE_COUNT];
    uint64_t violated[STRICTMR_RULE_COUNT];
    uint64_t events[STRICTMR_EV_COUNT];
};

struct strictmr_stats_ops {
    size_t size;
    /* Copies the process-wide counters. */
    void (*read)(struct strictmr_stats *stats);
    /* The rule's name as the JSON report spells it, or NULL. */
    const char *(*rule_name)(int rule);
    /* The event's name as the JSON report spells it, or NULL. */
    const char *(*event_name)(int event);
};

#endif /* STRICTMR_EXT_H */
