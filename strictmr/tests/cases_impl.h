/*
 * What the strictmr test cases share (cases.c, cases_rma.c, cases_rules.c, cases_msg.c): the
 * posting helpers cases.c holds, and each file's case functions for cases.c's table.
 */
#ifndef STRICTMR_TEST_CASES_IMPL_H
#define STRICTMR_TEST_CASES_IMPL_H

#include "cases.h"

#define LEN 64
#define CTX ((void *)0x5ca1ab1e)

/* cases.c: posts are followed by a wait for their completion (none if ret, the call's, is not
 * 0); a write of LEN bytes from buf (plain: from lbuf to the target region at offset); the
 * compare-swap of lbuf's words (operand, compare, result) on the target's first word. */
int waited(struct env *e, int ret, struct outcome *out);
int write_to(struct env *e, void *buf, void *desc, fi_addr_t peer, uint64_t addr, uint64_t key,
             struct outcome *out);
int write_plain(struct env *e, uint64_t key, uint64_t offset, struct outcome *out);
int compare_swap(struct env *e, void *compare_desc, struct outcome *out);

/* The cases: 0 and the outcome filled in, 1 skipped, else the case could not run. */
/* cases_rma.c */
int case_write_ok(struct env *e, struct outcome *out);
int case_read_ok(struct env *e, struct outcome *out);
int case_writemsg_ok(struct env *e, struct outcome *out);
int case_atomic_ok(struct env *e, struct outcome *out);
int case_fetch_ok(struct env *e, struct outcome *out);
int case_cswap_ok(struct env *e, struct outcome *out);
/* cases_rules.c */
int case_key_unknown(struct env *e, struct outcome *out);
int case_key_closed(struct env *e, struct outcome *out);
int case_range(struct env *e, struct outcome *out);
int case_remote_access(struct env *e, struct outcome *out);
int case_target_unknown(struct env *e, struct outcome *out);
int case_desc_missing(struct env *e, struct outcome *out);
int case_desc_invalid(struct env *e, struct outcome *out);
int case_desc_range(struct env *e, struct outcome *out);
int case_fetch_result_desc(struct env *e, struct outcome *out);
int case_compare_desc(struct env *e, struct outcome *out);
int case_allocated(struct env *e, struct outcome *out);
int case_key_width(struct env *e, struct outcome *out);
int case_key_in_use(struct env *e, struct outcome *out);
int case_prov_key_width(struct env *e, struct outcome *out);
int case_mr_unbound(struct env *e, struct outcome *out);
int case_mr_disabled(struct env *e, struct outcome *out);
int case_mr_bind_order(struct env *e, struct outcome *out);
int case_local_mr_unbound(struct env *e, struct outcome *out);
int case_raw_unmapped(struct env *e, struct outcome *out);
int case_raw_attr_small(struct env *e, struct outcome *out);
/* cases_msg.c */
int case_send_recv_ok(struct env *e, struct outcome *out);
int case_sendmsg_recvv_ok(struct env *e, struct outcome *out);
int case_inject_ok(struct env *e, struct outcome *out);
int case_send_desc_missing(struct env *e, struct outcome *out);
int case_send_desc_invalid(struct env *e, struct outcome *out);
int case_send_desc_range(struct env *e, struct outcome *out);
int case_sendmsg_desc_missing(struct env *e, struct outcome *out);
int case_recv_desc_missing(struct env *e, struct outcome *out);
int case_recv_desc_invalid(struct env *e, struct outcome *out);
int case_recv_desc_range(struct env *e, struct outcome *out);
int case_recvv_foreign_desc(struct env *e, struct outcome *out);

#endif
