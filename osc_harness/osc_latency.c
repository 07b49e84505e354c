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

#include "bench_common.h"

static void row(const bench_ctx_t *ctx, const bench_run_t *r)
{
    const bench_field_t fields[] = {
        BENCH_DBL("lat_us", 12, 3, 1e6 * r->elapsed / r->iters),
    };

    bench_row(ctx, r, fields, 1);
}

/* Large accumulates run as get + put under osc/rdma's accumulate lock. */
static const bench_op_t ops[] = {
    {"put", BENCH_PUT, 0},
    {"get", BENCH_GET, 0},
    {"acc", BENCH_ACC, BENCH_CNT_RMA},
    {"get_acc", BENCH_GET_ACC, BENCH_CNT_RMA},
    {"fop", BENCH_FOP, 0},
    {"cas", BENCH_CAS, 0},
    {0},
};

static const bench_prog_t prog = {
    .name = "osc_latency",
    .ops_help = " (put,get,acc,get_acc,fop,cas; default all)",
    .metric = "latency of one operation + MPI_Win_flush, lock_all epoch",
    .mode = BENCH_LATENCY,
    .widths = {10, 10, 8},
    .ops = ops,
    .row = row,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &prog);
}
