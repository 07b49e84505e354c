/*
 * The strictmr test cases (cases.h): the table of every case, the errors of the rules and the
 * posting helpers the cases share. The cases themselves are in cases_rma.c, cases_rules.c and
 * cases_msg.c (cases_impl.h).
 */
#include "cases_impl.h"

int rule_errno(int rule)
{
    switch (rule) {
    case STRICTMR_RULE_KEY_IN_USE:
        return FI_ENOKEY;
    case STRICTMR_RULE_KEY_UNKNOWN:
    case STRICTMR_RULE_KEY_CLOSED:
    case STRICTMR_RULE_KEY_WIDTH:
    case STRICTMR_RULE_TARGET_UNKNOWN:
    case STRICTMR_RULE_MR_UNBOUND:
    case STRICTMR_RULE_MR_DISABLED:
    case STRICTMR_RULE_RAW_UNMAPPED:
        return FI_EKEYREJECTED;
    default:
        return FI_EINVAL;
    }
}

/* Posts are followed by a wait for their completion. */
int waited(struct env *e, int ret, struct outcome *out)
{
    out->ret = ret;
    return ret ? 0 : fixture_wait(e->f, out);
}

int write_to(struct env *e, void *buf, void *desc, fi_addr_t peer, uint64_t addr, uint64_t key,
             struct outcome *out)
{
    return waited(e, POST_RETRY(e->f, fi_write(e->f->a.ep, buf, LEN, desc, peer, addr, key, CTX)),
                  out);
}

int write_plain(struct env *e, uint64_t key, uint64_t offset, struct outcome *out)
{
    return write_to(e, e->lbuf, e->ldesc, e->f->a.peer, e->base + offset, key, out);
}

int compare_swap(struct env *e, void *compare_desc, struct outcome *out)
{
    uint64_t *v = (uint64_t *)e->lbuf; /* operand, compare, result */

    v[0] = 7;
    v[1] = 3;
    *(uint64_t *)e->tbuf = 3;
    return waited(e,
                  POST_RETRY(e->f, fi_compare_atomic(e->f->a.ep, &v[0], 1, e->ldesc, &v[1],
                                                     compare_desc, &v[2], e->ldesc, e->f->a.peer,
                                                     e->base, e->key, FI_UINT64, FI_CSWAP, CTX)),
                  out);
}

#define R(rule) STRICTMR_RULE_##rule

const struct test_case test_cases[] = {
    {.name = "write_ok", .rule = -1, .expect = EXPECT_OK, .run = case_write_ok},
    {.name = "read_ok", .rule = -1, .expect = EXPECT_OK, .run = case_read_ok},
    {.name = "writemsg_ok", .rule = -1, .expect = EXPECT_OK, .run = case_writemsg_ok},
    {.name = "atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_atomic_ok},
    {.name = "fetch_atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_fetch_ok},
    {.name = "compare_atomic_ok", .rule = -1, .expect = EXPECT_OK, .run = case_cswap_ok},
    {.name = "send_recv_ok", .rule = -1, .expect = EXPECT_DELIVERED, .run = case_send_recv_ok},
    {.name = "sendmsg_recvv_8k_ok",
     .rule = -1,
     .expect = EXPECT_DELIVERED,
     .run = case_sendmsg_recvv_ok},
    {.name = "inject_no_desc_ok", .rule = -1, .expect = EXPECT_DELIVERED, .run = case_inject_ok},
    {.name = "key_unknown",
     .rule = R(KEY_UNKNOWN),
     .expect = EXPECT_CQ_ERR,
     .run = case_key_unknown},
    {.name = "key_closed", .rule = R(KEY_CLOSED), .expect = EXPECT_CQ_ERR, .run = case_key_closed},
    {.name = "range", .rule = R(RANGE), .expect = EXPECT_CQ_ERR, .run = case_range},
    {.name = "remote_access",
     .rule = R(REMOTE_ACCESS),
     .expect = EXPECT_CQ_ERR,
     .run = case_remote_access},
    {.name = "target_unknown",
     .rule = R(TARGET_UNKNOWN),
     .expect = EXPECT_CQ_ERR,
     .run = case_target_unknown},
    {.name = "desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_missing},
    {.name = "desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_invalid},
    {.name = "desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_desc_range},
    {.name = "fetch_result_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_fetch_result_desc},
    {.name = "compare_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_compare_desc},
    {.name = "send_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_missing},
    {.name = "send_desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_invalid},
    {.name = "send_desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_send_desc_range},
    {.name = "sendmsg_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_sendmsg_desc_missing},
    {.name = "recv_desc_missing",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_MISSING),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_missing},
    {.name = "recv_desc_invalid",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_invalid},
    {.name = "recv_desc_range",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_RANGE),
     .expect = EXPECT_CQ_ERR,
     .run = case_recv_desc_range},
    {.name = "recvv_foreign_desc",
     .needs = FI_MR_LOCAL,
     .rule = R(DESC_INVALID),
     .expect = EXPECT_CQ_ERR,
     .run = case_recvv_foreign_desc},
    {.name = "allocated",
     .needs = FI_MR_ALLOCATED,
     .rule = R(ALLOCATED),
     .expect = EXPECT_SYNC_ERR,
     .run = case_allocated},
    {.name = "key_width",
     .excludes = FI_MR_PROV_KEY | FI_MR_RAW,
     .rule = R(KEY_WIDTH),
     .expect = EXPECT_SYNC_ERR,
     .run = case_key_width},
    {.name = "key_in_use",
     .excludes = FI_MR_PROV_KEY | FI_MR_RAW,
     .rule = R(KEY_IN_USE),
     .expect = EXPECT_SYNC_ERR,
     .run = case_key_in_use},
    {.name = "prov_key_width",
     .needs = FI_MR_PROV_KEY,
     .excludes = FI_MR_RAW,
     .rule = -1,
     .expect = EXPECT_PROPERTY,
     .run = case_prov_key_width},
    {.name = "mr_unbound",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_UNBOUND),
     .expect = EXPECT_CQ_ERR,
     .run = case_mr_unbound},
    {.name = "mr_disabled",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_DISABLED),
     .expect = EXPECT_CQ_ERR,
     .run = case_mr_disabled},
    {.name = "mr_enable_before_bind",
     .needs = FI_MR_ENDPOINT,
     .rule = R(MR_BIND),
     .expect = EXPECT_SYNC_ERR,
     .run = case_mr_bind_order},
    {.name = "local_mr_unbound",
     .needs = FI_MR_ENDPOINT | FI_MR_LOCAL,
     .rule = R(MR_UNBOUND),
     .expect = EXPECT_CQ_ERR,
     .run = case_local_mr_unbound},
    {.name = "raw_unmapped",
     .needs = FI_MR_RAW,
     .rule = R(RAW_UNMAPPED),
     .expect = EXPECT_CQ_ERR,
     .run = case_raw_unmapped},
    {.name = "raw_attr_too_small",
     .needs = FI_MR_RAW,
     .rule = -1,
     .expect = EXPECT_PROPERTY,
     .run = case_raw_attr_small},
};

const size_t test_case_count = sizeof(test_cases) / sizeof(test_cases[0]);
