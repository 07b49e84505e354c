/*
 * osc_latency: one-sided latency, OSU style but our own code.
 *
 * Rank 0 holds a lock_all epoch on a Win_create (or dynamic) window of rank 1
 * and times "operation + MPI_Win_flush(1)" for put, get, accumulate,
 * get_accumulate (MPI_INT64_T, MPI_SUM, sizes rounded to 8-byte elements),
 * fetch_and_op and compare_and_swap (one 8-byte integer). Rank 1 waits in a
 * barrier meanwhile, which keeps its progress engine turning. Each row also
 * says whether btl-ofi's counters moved while it ran, and whether the values
 * that arrived are the ones expected.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

typedef struct lat_ctx {
    bench_ctx_t b;
    int64_t *result; /* get_accumulate / fetch results */
} lat_ctx_t;

typedef struct lat_op {
    const char *name;
    size_t fixed_size; /* 8 for single-element atomics, 0 to sweep the size list */
    size_t elem;       /* element size: 1 (MPI_BYTE) or 8 (MPI_INT64_T) */
    unsigned counters; /* btl-ofi counters this operation moves */
    void (*issue)(lat_ctx_t *ctx, size_t size);
    /* Before the timed loop: rank 1 sets the target, rank 0 the origin. */
    void (*prepare)(lat_ctx_t *ctx, size_t size);
    /* After it: each rank checks its side; total = operations issued. */
    int (*check)(lat_ctx_t *ctx, size_t size, int64_t total);
} lat_op_t;

static uint8_t pattern(size_t size)
{
    return (uint8_t)(size * 7 + 1);
}

static int64_t *target64(lat_ctx_t *ctx)
{
    return (int64_t *)ctx->b.win_buf;
}

static int64_t *origin64(lat_ctx_t *ctx)
{
    return (int64_t *)ctx->b.origin;
}

/* ---- put / get ---------------------------------------------------------- */

static void put_issue(lat_ctx_t *ctx, size_t size)
{
    MPI_Put(ctx->b.origin, (int)size, MPI_BYTE, ctx->b.peer, bench_disp(&ctx->b, 0), (int)size,
            MPI_BYTE, ctx->b.win);
}

static void put_prepare(lat_ctx_t *ctx, size_t size)
{
    memset(0 == ctx->b.rank ? ctx->b.origin : ctx->b.win_buf, 0 == ctx->b.rank ? pattern(size) : 0,
           size);
}

static int put_check(lat_ctx_t *ctx, size_t size, int64_t total)
{
    const uint8_t *t = (const uint8_t *)ctx->b.win_buf;

    (void)total;
    return 0 == ctx->b.rank || (t[0] == pattern(size) && t[size - 1] == pattern(size));
}

static void get_issue(lat_ctx_t *ctx, size_t size)
{
    MPI_Get(ctx->b.origin, (int)size, MPI_BYTE, ctx->b.peer, bench_disp(&ctx->b, 0), (int)size,
            MPI_BYTE, ctx->b.win);
}

static void get_prepare(lat_ctx_t *ctx, size_t size)
{
    memset(0 == ctx->b.rank ? ctx->b.origin : ctx->b.win_buf, 0 == ctx->b.rank ? 0 : pattern(size),
           size);
}

static int get_check(lat_ctx_t *ctx, size_t size, int64_t total)
{
    const uint8_t *o = (const uint8_t *)ctx->b.origin;

    (void)total;
    return 1 == ctx->b.rank || (o[0] == pattern(size) && o[size - 1] == pattern(size));
}

/* ---- accumulate family: every element adds 1 per operation -------------- */

static void acc_prepare(lat_ctx_t *ctx, size_t size)
{
    size_t n = size / 8;

    for (size_t i = 0; i < n; ++i) {
        if (0 == ctx->b.rank) {
            origin64(ctx)[i] = 1;
            ctx->result[i] = -1;
        } else {
            target64(ctx)[i] = 0;
        }
    }
}

static void acc_issue(lat_ctx_t *ctx, size_t size)
{
    int n = (int)(size / 8);

    MPI_Accumulate(ctx->b.origin, n, MPI_INT64_T, ctx->b.peer, bench_disp(&ctx->b, 0), n,
                   MPI_INT64_T, MPI_SUM, ctx->b.win);
}

static int acc_check(lat_ctx_t *ctx, size_t size, int64_t total)
{
    size_t n = size / 8;

    return 0 == ctx->b.rank || (target64(ctx)[0] == total && target64(ctx)[n - 1] == total);
}

static void get_acc_issue(lat_ctx_t *ctx, size_t size)
{
    int n = (int)(size / 8);

    MPI_Get_accumulate(ctx->b.origin, n, MPI_INT64_T, ctx->result, n, MPI_INT64_T, ctx->b.peer,
                       bench_disp(&ctx->b, 0), n, MPI_INT64_T, MPI_SUM, ctx->b.win);
}

/* The last fetch returned the value before the last addition. */
static int fetch_check(lat_ctx_t *ctx, size_t size, int64_t total)
{
    size_t n = size / 8;

    if (1 == ctx->b.rank) {
        return acc_check(ctx, size, total);
    }
    return ctx->result[0] == total - 1 && ctx->result[n - 1] == total - 1;
}

static void fop_issue(lat_ctx_t *ctx, size_t size)
{
    (void)size;
    MPI_Fetch_and_op(ctx->b.origin, ctx->result, MPI_INT64_T, ctx->b.peer, bench_disp(&ctx->b, 0),
                     MPI_SUM, ctx->b.win);
}

/* ---- compare-and-swap: the first one swaps 0 -> 1, the rest find 1 ----- */

static void cas_prepare(lat_ctx_t *ctx, size_t size)
{
    (void)size;
    if (0 == ctx->b.rank) {
        origin64(ctx)[0] = 1; /* desired */
        origin64(ctx)[1] = 0; /* compare */
        ctx->result[0] = -1;
    } else {
        target64(ctx)[0] = 0;
    }
}

static void cas_issue(lat_ctx_t *ctx, size_t size)
{
    (void)size;
    MPI_Compare_and_swap(&origin64(ctx)[0], &origin64(ctx)[1], ctx->result, MPI_INT64_T,
                         ctx->b.peer, bench_disp(&ctx->b, 0), ctx->b.win);
}

static int cas_check(lat_ctx_t *ctx, size_t size, int64_t total)
{
    (void)size;
    if (1 == ctx->b.rank) {
        return 1 == target64(ctx)[0];
    }
    return (total > 1 ? 1 : 0) == ctx->result[0];
}

#define ATOMIC_CNT BENCH_CNT(OFI_PVAR_ATOMICS)

static const lat_op_t lat_ops[] = {
    {"put", 0, 1, BENCH_CNT(OFI_PVAR_PUTS), put_issue, put_prepare, put_check},
    {"get", 0, 1, BENCH_CNT(OFI_PVAR_GETS), get_issue, get_prepare, get_check},
    /* Large accumulates run as get + put under osc/rdma's accumulate lock. */
    {"acc", 0, 8, ATOMIC_CNT | BENCH_CNT_RMA, acc_issue, acc_prepare, acc_check},
    {"get_acc", 0, 8, ATOMIC_CNT | BENCH_CNT_RMA, get_acc_issue, acc_prepare, fetch_check},
    {"fop", 8, 8, ATOMIC_CNT, fop_issue, acc_prepare, fetch_check},
    {"cas", 8, 8, BENCH_CNT_CAS, cas_issue, cas_prepare, cas_check},
};

#define NCOLS 7

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("op", 10, ""),      BENCH_STR("size", 10, ""), BENCH_STR("iters", 8, ""),
    BENCH_STR("lat_us", 12, ""),  BENCH_STR("valid", 7, ""), BENCH_STR("carried_by", 13, ""),
    BENCH_STR("ofi_ops", 10, ""),
};

/* Time one (operation, size); returns 1 if the values were right on both ranks. */
static int run_one(lat_ctx_t *ctx, const lat_op_t *op, size_t size, int *not_ours)
{
    int iters, warmup, valid;
    double t0 = 0, elapsed = 0;
    bench_probe_t probe;
    bench_path_t path;

    bench_iterations(&ctx->b, size, &iters, &warmup);
    op->prepare(ctx, size);
    MPI_Barrier(MPI_COMM_WORLD);
    bench_probe_begin(&probe);
    if (0 == ctx->b.rank) {
        MPI_Win_lock_all(0, ctx->b.win);
        for (int i = 0; i < warmup + iters; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            op->issue(ctx, size);
            MPI_Win_flush(ctx->b.peer, ctx->b.win);
        }
        elapsed = bench_now() - t0;
        MPI_Win_unlock_all(ctx->b.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    valid = harness_min_int(op->check(ctx, size, (int64_t)warmup + iters));
    path = bench_probe_end(&ctx->b, &probe, op->counters);
    *not_ours += !path.ours;

    bench_field_t row[NCOLS] = {
        BENCH_STR("op", 10, op->name),
        BENCH_INT("size", 10, size),
        BENCH_INT("iters", 8, iters),
        BENCH_DBL("lat_us", 12, 3, 1e6 * elapsed / iters),
        BENCH_STR("valid", 7, valid ? "yes" : "WRONG"),
        BENCH_STR("carried_by", 13, path.label),
        BENCH_INT("ofi_ops", 10, path.delta),
    };
    bench_row(&ctx->b, row, NCOLS);
    return valid;
}

static int run(bench_ctx_t *b)
{
    lat_ctx_t *ctx = (lat_ctx_t *)b; /* b is its first member */
    size_t max = ctx->b.opt.sweep.sizes[ctx->b.opt.sweep.nsizes - 1];
    int failures = 0, not_ours = 0, rc;

    max = max < 64 ? 64 : (max + 7) & ~(size_t)7;
    rc = bench_window_open(&ctx->b, max);
    ctx->result = calloc(max / 8, sizeof(int64_t));
    if (HARNESS_EXIT_PASS != rc || NULL == ctx->result) {
        return HARNESS_EXIT_PASS != rc ? rc : HARNESS_EXIT_FAIL;
    }
    bench_header(&ctx->b, "latency of one operation + MPI_Win_flush, lock_all epoch", columns,
                 NCOLS);
    for (size_t o = 0; o < sizeof(lat_ops) / sizeof(lat_ops[0]); ++o) {
        const lat_op_t *op = &lat_ops[o];
        size_t last = 0;

        if (!bench_op_wanted(&ctx->b, op->name, 1)) {
            continue;
        }
        for (int s = 0; s < ctx->b.opt.sweep.nsizes; ++s) {
            size_t size =
                op->fixed_size ? op->fixed_size : ctx->b.opt.sweep.sizes[s] / op->elem * op->elem;
            if (0 == size || size == last) {
                continue; /* e.g. 3 B has no 8-byte element; 100 B and 96 B would repeat */
            }
            last = size;
            failures += !run_one(ctx, op, size, &not_ours);
        }
    }
    free(ctx->result);
    return bench_exit_code(&ctx->b, failures, not_ours);
}

int main(int argc, char **argv)
{
    lat_ctx_t ctx = {0};

    return bench_main(argc, argv, "osc_latency", " (put,get,acc,get_acc,fop,cas; default all)",
                      &ctx.b, run);
}
