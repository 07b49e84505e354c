/*
 * osc_atomic_rate: one-sided atomic operation rate.
 *
 * Rank 0 posts -W 8-byte atomics (fetch_and_op SUM, compare_and_swap,
 * accumulate SUM, get_accumulate SUM on MPI_INT64_T) to one word of rank 1's
 * window, then MPI_Win_flush, inside one lock_all epoch. Reports operations
 * per second and the time spent inside each call. The adds are checked: the
 * word must end at the number of operations issued.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

typedef struct arate_ctx {
    bench_ctx_t b;
    int64_t one, compare, desired;
    int64_t *results; /* one per operation of a window */
} arate_ctx_t;

typedef struct arate_op {
    const char *name;
    int adds; /* 1 if every operation adds one to the target word */
    bench_issue_fn issue;
    unsigned counters; /* BENCH_CNT bits the operation moves */
} arate_op_t;

static void fop_issue(void *arg, size_t size, int j)
{
    arate_ctx_t *ctx = arg;

    (void)size;
    MPI_Fetch_and_op(&ctx->one, &ctx->results[j], MPI_INT64_T, ctx->b.peer, bench_disp(&ctx->b, 0),
                     MPI_SUM, ctx->b.win);
}

static void cas_issue(void *arg, size_t size, int j)
{
    arate_ctx_t *ctx = arg;

    (void)size;
    MPI_Compare_and_swap(&ctx->desired, &ctx->compare, &ctx->results[j], MPI_INT64_T, ctx->b.peer,
                         bench_disp(&ctx->b, 8), ctx->b.win);
}

static void acc_issue(void *arg, size_t size, int j)
{
    arate_ctx_t *ctx = arg;

    (void)size;
    (void)j;
    MPI_Accumulate(&ctx->one, 1, MPI_INT64_T, ctx->b.peer, bench_disp(&ctx->b, 0), 1, MPI_INT64_T,
                   MPI_SUM, ctx->b.win);
}

static void get_acc_issue(void *arg, size_t size, int j)
{
    arate_ctx_t *ctx = arg;

    (void)size;
    MPI_Get_accumulate(&ctx->one, 1, MPI_INT64_T, &ctx->results[j], 1, MPI_INT64_T, ctx->b.peer,
                       bench_disp(&ctx->b, 0), 1, MPI_INT64_T, MPI_SUM, ctx->b.win);
}

static const arate_op_t arate_ops[] = {
    {"fop", 1, fop_issue, BENCH_CNT(OFI_PVAR_ATOMICS)},
    {"cas", 0, cas_issue, BENCH_CNT_CAS},
    {"acc", 1, acc_issue, BENCH_CNT(OFI_PVAR_ATOMICS)},
    {"get_acc", 1, get_acc_issue, BENCH_CNT(OFI_PVAR_ATOMICS)},
};

#define NCOLS 8

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("op", 8, ""),          BENCH_STR("size", 6, ""),     BENCH_STR("iters", 8, ""),
    BENCH_STR("ops_per_s", 12, ""),  BENCH_STR("post_ns", 10, ""), BENCH_STR("valid", 7, ""),
    BENCH_STR("carried_by", 13, ""), BENCH_STR("ofi_ops", 10, ""),
};

static int run_one(arate_ctx_t *ctx, const arate_op_t *op, int *not_ours)
{
    const int window = ctx->b.opt.sweep.window;
    int64_t *word = (int64_t *)ctx->b.win_buf;
    bench_run_t run;
    double ops;
    int valid;

    word[0] = word[1] = 0;
    bench_measure(&ctx->b, 0 == ctx->b.rank, op->issue, ctx, 8, op->counters, &run);
    valid = harness_min_int(
        0 == ctx->b.rank ||
        (op->adds ? word[0] == (int64_t)window * (run.warmup + run.iters) : 1 == word[1]));
    *not_ours += !run.path.ours;
    ops = (double)window * run.iters;

    bench_field_t row[NCOLS] = {
        BENCH_STR("op", 8, op->name),
        BENCH_INT("size", 6, 8),
        BENCH_INT("iters", 8, run.iters),
        BENCH_DBL("ops_per_s", 12, 0, ops / run.t.elapsed),
        BENCH_DBL("post_ns", 10, 1, 1e9 * run.t.post / ops),
        BENCH_STR("valid", 7, valid ? "yes" : "WRONG"),
        BENCH_STR("carried_by", 13, run.path.label),
        BENCH_INT("ofi_ops", 10, run.path.delta),
    };
    bench_row(&ctx->b, row, NCOLS);
    return valid;
}

static int run(bench_ctx_t *b)
{
    arate_ctx_t *ctx = (arate_ctx_t *)b; /* b is its first member */
    char what[160];
    int failures = 0, not_ours = 0, rc;

    ctx->one = 1;
    ctx->compare = 0;
    ctx->desired = 1;
    ctx->results = calloc((size_t)ctx->b.opt.sweep.window, sizeof(int64_t));
    rc = bench_window_open(&ctx->b, 64);
    if (HARNESS_EXIT_PASS != rc || NULL == ctx->results) {
        free(ctx->results);
        return HARNESS_EXIT_PASS != rc ? rc : HARNESS_EXIT_FAIL;
    }
    snprintf(
        what, sizeof(what), "8-byte atomic rate, %d operations per %s", ctx->b.opt.sweep.window,
        BENCH_SYNC_FLUSH == ctx->b.opt.sync ? "MPI_Win_flush (lock_all epoch)" : "MPI_Win_fence");
    bench_header(&ctx->b, what, columns, NCOLS);
    for (size_t o = 0; o < sizeof(arate_ops) / sizeof(arate_ops[0]); ++o) {
        if (bench_op_wanted(&ctx->b, arate_ops[o].name, 1)) {
            failures += !run_one(ctx, &arate_ops[o], &not_ours);
        }
    }
    free(ctx->results);
    return bench_exit_code(&ctx->b, failures, not_ours);
}

int main(int argc, char **argv)
{
    arate_ctx_t ctx = {0};

    return bench_main(argc, argv, "osc_atomic_rate", " (fop,cas,acc,get_acc; default all)", &ctx.b,
                      run);
}
