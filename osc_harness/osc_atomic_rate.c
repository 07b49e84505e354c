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
        BENCH_DBL("ops_per_s", 12, 0, ops / r->elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * r->post / ops),
    };

    bench_row(ctx, r, fields, 2);
}

static const bench_op_t ops[] = {
    {"fop", BENCH_FOP, 0},
    {"cas", BENCH_CAS, 0},
    {"acc", BENCH_ACC, 0},
    {"get_acc", BENCH_GET_ACC, 0},
    {0},
};

static const bench_prog_t prog = {
    .name = "osc_atomic_rate",
    .ops_help = " (fop,cas,acc,get_acc; default all)",
    .metric = "8-byte atomic rate",
    .mode = BENCH_ATOMICS,
    .widths = {8, 6, 8},
    .ops = ops,
    .row = row,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &prog);
}
