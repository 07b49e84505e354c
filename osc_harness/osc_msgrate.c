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
    BENCH_STR("op", 6, ""),          BENCH_STR("size", 8, ""),     BENCH_STR("iters", 8, ""),
    BENCH_STR("msgs_per_s", 14, ""), BENCH_STR("post_ns", 10, ""), BENCH_STR("sync_us", 10, ""),
    BENCH_STR("carried_by", 13, ""), BENCH_STR("ofi_ops", 10, ""),
};

static void row(bench_ctx_t *ctx, const bench_rma_op_t *op, size_t size, const bench_run_t *run)
{
    const double msgs = (double)ctx->opt.sweep.window * run->iters;
    bench_field_t fields[NCOLS] = {
        BENCH_STR("op", 6, op->name),
        BENCH_INT("size", 8, size),
        BENCH_INT("iters", 8, run->iters),
        BENCH_DBL("msgs_per_s", 14, 0, msgs * (ctx->opt.bidir ? 2 : 1) / run->t.elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * run->t.post / msgs),
        BENCH_DBL("sync_us", 10, 3, 1e6 * (run->t.elapsed - run->t.post) / run->iters),
        BENCH_STR("carried_by", 13, run->path.label),
        BENCH_INT("ofi_ops", 10, run->path.delta),
    };

    bench_row(ctx, fields, NCOLS);
}

static int run(bench_ctx_t *ctx)
{
    bench_sweep_t *sweep = &ctx->opt.sweep;

    if (sweep->default_sizes) {
        while (sweep->nsizes > 1 && sweep->sizes[sweep->nsizes - 1] > MSGRATE_DEFAULT_MAX) {
            --sweep->nsizes;
        }
    }
    return bench_rma_sweep(ctx, "message rate",
                           sweep->sizes[sweep->nsizes - 1] * (size_t)sweep->window, 0x3c, columns,
                           NCOLS, row);
}

int main(int argc, char **argv)
{
    bench_ctx_t ctx;

    return bench_main(argc, argv, "osc_msgrate", " (put,get; default both)", &ctx, run);
}
