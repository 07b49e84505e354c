/*
 * osc_msgrate: one-sided message rate.
 *
 * Rank 0 (both ranks with -d bi) posts -W puts or gets of one small size,
 * then synchronizes (flush in a lock_all epoch, or fence), and reports
 * messages per second together with the time spent inside each MPI_Put /
 * MPI_Get call and per synchronization: the per-message software overhead
 * of the one-sided stack, separated from the time the transfers take.
 * Without -S or -M the size list stops at 8 KiB.
 */

#include "bench_common.h"

static void row(const bench_ctx_t *ctx, const bench_run_t *r)
{
    const double msgs = (double)ctx->opt.sweep.window * r->iters;
    const bench_field_t fields[] = {
        BENCH_DBL("msgs_per_s", 14, 0, msgs * (ctx->opt.bidir ? 2 : 1) / r->elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * r->post / msgs),
        BENCH_DBL("sync_us", 10, 3, 1e6 * (r->elapsed - r->post) / r->iters),
    };

    bench_row(ctx, r, fields, 3);
}

static const bench_prog_t prog = {
    .name = "osc_msgrate",
    .ops_help = " (put,get; default both)",
    .metric = "message rate",
    .mode = BENCH_DIRECTED,
    .default_max = 8192,
    .widths = {6, 8, 8},
    .ops = bench_rma_ops,
    .row = row,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &prog);
}
