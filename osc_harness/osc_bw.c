/*
 * osc_bw: one-sided bandwidth, windowed (OSU style, our own code).
 *
 * Per iteration rank 0 (both ranks with -d bi) posts -W puts or gets of one
 * size into distinct slots of the peer's window, then synchronizes: with
 * -s flush inside one lock_all epoch, with -s fence by MPI_Win_fence on both
 * ranks. Bandwidth counts every byte moved, in both directions for -d bi,
 * in MB/s (10^6 bytes per second).
 */

#include <stdio.h>

#include "bench_common.h"

#define NCOLS 8

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("op", 6, ""),          BENCH_STR("size", 10, ""),        BENCH_STR("iters", 7, ""),
    BENCH_STR("bw_MBps", 12, ""),    BENCH_STR("us_per_sync", 13, ""), BENCH_STR("post_ns", 10, ""),
    BENCH_STR("carried_by", 13, ""), BENCH_STR("ofi_ops", 10, ""),
};

static void row(bench_ctx_t *ctx, const bench_rma_op_t *op, size_t size, const bench_run_t *run)
{
    const int window = ctx->opt.sweep.window;
    const double bytes = (double)size * window * run->iters * (ctx->opt.bidir ? 2 : 1);
    bench_field_t fields[NCOLS] = {
        BENCH_STR("op", 6, op->name),
        BENCH_INT("size", 10, size),
        BENCH_INT("iters", 7, run->iters),
        BENCH_DBL("bw_MBps", 12, 2, bytes / run->t.elapsed / 1e6),
        BENCH_DBL("us_per_sync", 13, 3, 1e6 * run->t.elapsed / run->iters),
        BENCH_DBL("post_ns", 10, 1, 1e9 * run->t.post / ((double)run->iters * window)),
        BENCH_STR("carried_by", 13, run->path.label),
        BENCH_INT("ofi_ops", 10, run->path.delta),
    };

    bench_row(ctx, fields, NCOLS);
}

static int run(bench_ctx_t *ctx)
{
    return bench_rma_sweep(ctx, "bandwidth", bench_sweep_window_bytes(&ctx->opt.sweep, 1), 0x5a,
                           columns, NCOLS, row);
}

int main(int argc, char **argv)
{
    bench_ctx_t ctx;

    return bench_main(argc, argv, "osc_bw", " (put,get; default both)", &ctx, run);
}
