/*
 * osc_atomic_rate: one-sided atomic operation rate.
 *
 * Rank 0 posts -W 8-byte atomics (fetch_and_op SUM, compare_and_swap,
 * accumulate SUM, get_accumulate SUM on MPI_INT64_T) to one word of rank 1's
 * window, then synchronizes (flush in a lock_all epoch, or fence). Reports
 * operations per second and the time spent inside each call. The adds are
 * checked: the word must end at the number of operations issued (and a
 * compare_and_swap of 0 with 1 at 1).
 */

#include "bench_common.h"

static void row(const bench_ctx_t *ctx, const bench_run_t *r)
{
    const double ops = (double)ctx->opt.sweep.window * r->iters;
    const bench_field_t fields[] = {
        BENCH_STR("op", 8, r->op->name),
        BENCH_INT("size", 6, 8),
        BENCH_INT("iters", 8, r->iters),
        BENCH_DBL("ops_per_s", 12, 0, ops / r->elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * r->post / ops),
        BENCH_STR("valid", 7, r->valid ? "yes" : "WRONG"),
        BENCH_STR("carried_by", 13, r->carried),
        BENCH_INT("ofi_ops", 10, r->delta),
    };

    bench_row(ctx, fields, sizeof(fields) / sizeof(fields[0]));
}

static const bench_op_t ops[] = {
    {"fop", BENCH_FOP, 8, BENCH_CNT_ATOMIC},
    {"cas", BENCH_CAS, 8, BENCH_CNT_CAS},
    {"acc", BENCH_ACC, 8, BENCH_CNT_ATOMIC},
    {"get_acc", BENCH_GET_ACC, 8, BENCH_CNT_ATOMIC},
};

int main(int argc, char **argv)
{
    const bench_prog_t prog = {.name = "osc_atomic_rate",
                               .ops_help = " (fop,cas,acc,get_acc; default all)",
                               .metric = "8-byte atomic rate",
                               .mode = BENCH_ONE_WAY,
                               .checked = 1,
                               .ops = ops,
                               .nops = sizeof(ops) / sizeof(ops[0]),
                               .row = row};

    return bench_main(argc, argv, &prog);
}
