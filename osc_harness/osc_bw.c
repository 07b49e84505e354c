/*
 * osc_bw: one-sided bandwidth, windowed (OSU style, our own code).
 *
 * Per iteration rank 0 (both ranks with -d bi) posts -W puts or gets of one
 * size into distinct slots of the peer's window, then synchronizes: with
 * -s flush inside one lock_all epoch, with -s fence by MPI_Win_fence on both
 * ranks. Bandwidth counts every byte moved, in both directions for -d bi,
 * in MB/s (10^6 bytes per second).
 */

#include "bench_common.h"

static void row(const bench_ctx_t *ctx, const bench_run_t *r)
{
    const int window = ctx->opt.sweep.window;
    const double bytes = (double)r->size * window * r->iters * (ctx->opt.bidir ? 2 : 1);
    const bench_field_t fields[] = {
        BENCH_DBL("bw_MBps", 12, 2, bytes / r->elapsed / 1e6),
        BENCH_DBL("us_per_sync", 13, 3, 1e6 * r->elapsed / r->iters),
        BENCH_DBL("post_ns", 10, 1, 1e9 * r->post / ((double)r->iters * window)),
    };

    bench_row(ctx, r, fields, 3);
}

static const bench_prog_t prog = {
    .name = "osc_bw",
    .ops_help = " (put,get; default both)",
    .metric = "bandwidth",
    .mode = BENCH_DIRECTED,
    .widths = {6, 10, 7},
    .ops = bench_rma_ops,
    .row = row,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &prog);
}
