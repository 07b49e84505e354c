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

#include <stdio.h>
#include <string.h>

#include "bench_common.h"

#define MSGRATE_DEFAULT_MAX 8192

#define NCOLS 8

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("op", 6, ""),         BENCH_STR("size", 8, ""),      BENCH_STR("iters", 8, ""),
    BENCH_STR("msgs_per_s", 14, ""), BENCH_STR("post_ns", 10, ""), BENCH_STR("sync_us", 10, ""),
    BENCH_STR("carried_by", 13, ""), BENCH_STR("ofi_ops", 10, ""),
};

static void run_one(bench_ctx_t *ctx, const bench_rma_op_t *op, size_t size, int *not_ours)
{
    const int window = ctx->opt.sweep.window;
    const int active = 0 == ctx->rank || ctx->opt.bidir;
    int iters, warmup;
    double msgs;
    bench_probe_t probe;
    bench_path_t path;
    bench_times_t t;

    bench_iterations(ctx, size * (size_t) window, &iters, &warmup);
    bench_probe_begin(&probe);
    t = bench_windowed(ctx, active, op->issue, ctx, size, iters, warmup);
    path = bench_probe_end(ctx, &probe, op->counters);
    *not_ours += !path.ours;
    msgs = (double) window * iters;

    bench_field_t row[NCOLS] = {
        BENCH_STR("op", 6, op->name),
        BENCH_INT("size", 8, size),
        BENCH_INT("iters", 8, iters),
        BENCH_DBL("msgs_per_s", 14, 0, msgs * (ctx->opt.bidir ? 2 : 1) / t.elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * t.post / msgs),
        BENCH_DBL("sync_us", 10, 3, 1e6 * (t.elapsed - t.post) / iters),
        BENCH_STR("carried_by", 13, path.label),
        BENCH_INT("ofi_ops", 10, path.delta),
    };
    bench_row(ctx, row, NCOLS);
}

static int run(bench_ctx_t *ctx)
{
    size_t max;
    int rc;

    if (ctx->opt.sweep.default_sizes) {
        while (ctx->opt.sweep.nsizes > 1 && ctx->opt.sweep.sizes[ctx->opt.sweep.nsizes - 1] > MSGRATE_DEFAULT_MAX) {
            --ctx->opt.sweep.nsizes;
        }
    }
    max = ctx->opt.sweep.sizes[ctx->opt.sweep.nsizes - 1];
    rc = bench_window_open(ctx, max * (size_t) ctx->opt.sweep.window);
    if (HARNESS_EXIT_PASS != rc) {
        return rc;
    }
    memset(ctx->origin, 0x3c, ctx->win_len);
    return bench_rma_sweep(ctx, "message rate", columns, NCOLS, run_one);
}

int main(int argc, char **argv)
{
    bench_ctx_t ctx;

    return bench_main(argc, argv, "osc_msgrate", " (put,get; default both)", &ctx, run);
}
