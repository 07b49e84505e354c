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
#include <string.h>

#include "bench_common.h"

#define NCOLS 8

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("op", 6, ""),         BENCH_STR("size", 10, ""),     BENCH_STR("iters", 7, ""),
    BENCH_STR("bw_MBps", 12, ""),   BENCH_STR("us_per_sync", 13, ""),
    BENCH_STR("post_ns", 10, ""),   BENCH_STR("carried_by", 13, ""), BENCH_STR("ofi_ops", 10, ""),
};

static void run_one(bench_ctx_t *ctx, const bench_rma_op_t *op, size_t size, int *not_ours)
{
    const int window = ctx->opt.sweep.window;
    const int active = 0 == ctx->rank || ctx->opt.bidir;
    int iters, warmup;
    bench_probe_t probe;
    bench_path_t path;
    bench_times_t t;
    double bytes;

    bench_iterations(ctx, size * (size_t) window, &iters, &warmup);
    bench_probe_begin(&probe);
    t = bench_windowed(ctx, active, op->issue, ctx, size, iters, warmup);
    path = bench_probe_end(ctx, &probe, op->counters);
    *not_ours += !path.ours;
    bytes = (double) size * window * iters * (ctx->opt.bidir ? 2 : 1);

    bench_field_t row[NCOLS] = {
        BENCH_STR("op", 6, op->name),
        BENCH_INT("size", 10, size),
        BENCH_INT("iters", 7, iters),
        BENCH_DBL("bw_MBps", 12, 2, bytes / t.elapsed / 1e6),
        BENCH_DBL("us_per_sync", 13, 3, 1e6 * t.elapsed / iters),
        BENCH_DBL("post_ns", 10, 1, 1e9 * t.post / ((double) iters * window)),
        BENCH_STR("carried_by", 13, path.label),
        BENCH_INT("ofi_ops", 10, path.delta),
    };
    bench_row(ctx, row, NCOLS);
}

/* Distinct slots for a whole window of the largest size, within 64 MiB. */
static size_t window_bytes(const bench_ctx_t *ctx)
{
    size_t max = ctx->opt.sweep.sizes[ctx->opt.sweep.nsizes - 1];
    size_t want = max * (size_t) ctx->opt.sweep.window;
    const size_t cap = 64UL << 20;

    return want > cap ? (max > cap ? max : cap) : want;
}

static int run(bench_ctx_t *ctx)
{
    int rc;

    rc = bench_window_open(ctx, window_bytes(ctx));
    if (HARNESS_EXIT_PASS != rc) {
        return rc;
    }
    memset(ctx->origin, 0x5a, ctx->win_len);
    return bench_rma_sweep(ctx, "bandwidth", columns, NCOLS, run_one);
}

int main(int argc, char **argv)
{
    bench_ctx_t ctx;

    return bench_main(argc, argv, "osc_bw", " (put,get; default both)", &ctx, run);
}
