/*
 * strictmr test cases: one positive case per operation family and one
 * negative case per rule, each run against fresh MRs.
 */
#ifndef STRICTMR_TEST_CASES_H
#define STRICTMR_TEST_CASES_H

#include "fixture.h"

#define MSG_MAX (2 * REGION) /* the largest message: btl-ofi batches gathered puts up to ~8 KiB */

/* The MRs and buffers one case works with. */
struct env {
    struct fixture *f;
    uint8_t *tbuf; /* target region, REGION bytes, registered on b */
    uint8_t *lbuf; /* local buffer, 2 * REGION bytes; the first REGION registered on a */
    uint8_t *sbuf; /* send buffer, 2 * MSG_MAX bytes; the first MSG_MAX registered on a */
    uint8_t *rbuf; /* receive buffer, 2 * MSG_MAX bytes; the first MSG_MAX registered on b */
    struct fid_mr *tmr, *lmr, *smr, *rmr;
    uint64_t key, base; /* what a uses to reach tbuf */
    void *ldesc, *sdesc, *rdesc;
    uint64_t next_key; /* requested keys without FI_MR_PROV_KEY */
};

enum expect {
    EXPECT_OK,        /* completes, no violation, some check ran */
    EXPECT_DELIVERED, /* a message arrives, no violation; checks ran exactly under FI_MR_LOCAL */
    EXPECT_CQ_ERR,    /* posts, then an error completion for the rule */
    EXPECT_SYNC_ERR,  /* the call itself fails for the rule */
    EXPECT_PROPERTY,  /* run() returns 0 when the property holds */
};

struct test_case {
    const char *name;
    uint64_t needs;    /* MR mode bits that must be demanded */
    uint64_t excludes; /* MR mode bits that must not be */
    int rule;          /* the rule that must trip, -1 for none */
    enum expect expect;
    int (*run)(struct env *e, struct outcome *out);
};

extern const struct test_case test_cases[];
extern const size_t test_case_count;
/* The error a rule's violation reports (the provider's table, restated). */
int rule_errno(int rule);

#endif
