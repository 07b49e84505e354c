/*
 * strictmr_engine_test's shared state: the fixture, buffers and MRs engine_test.c sets up,
 * and the helpers its cases in other files use (engine_control.c).
 */
#ifndef STRICTMR_ENGINE_TEST_H
#define STRICTMR_ENGINE_TEST_H

#include "fixture.h"

#define BOUND_MS 3000

extern struct fixture fx;
/* Each 64 words registered: tbuf on b (remote read and write), lbuf on a (read and write), sbuf
 * on a (send), rbuf on b (receive). */
extern uint64_t *tbuf, *lbuf, *sbuf, *rbuf;
extern struct fid_mr *tmr, *lmr, *smr, *rmr;
extern uint64_t tkey; /* what a uses to reach tbuf */

/* Prints PASS or FAIL and what; a FAIL fails the run. */
void check(bool ok, const char *what);
/* The address a writes to for word of tbuf. */
uint64_t taddr(size_t word);
/* One completion from cq, driving other (NULL: nobody else) by reading its CQ. */
int take_cq(struct fid_cq *cq, struct side *other, void **context, long bound_ms);

/* engine_control.c */
void control(void);
void rebind(bool engine);

#endif
