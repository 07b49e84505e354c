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
        BENCH_STR("op", 10, r->op->name),
        BENCH_INT("size", 10, r->size),
        BENCH_INT("iters", 8, r->iters),
        BENCH_DBL("lat_us", 12, 3, 1e6 * r->elapsed / r->iters),
        BENCH_STR("valid", 7, r->valid ? "yes" : "WRONG"),
        BENCH_STR("carried_by", 13, r->carried),
        BENCH_INT("ofi_ops", 10, r->delta),
    };

    bench_row(ctx, fields, sizeof(fields) / sizeof(fields[0]));
}

/* Large accumulates run as get + put under osc/rdma's accumulate lock. */
#define ACC_CNT (BENCH_CNT_ATOMIC | BENCH_CNT_RMA)

static const bench_op_t ops[] = {
    {"put", BENCH_PUT, 0, BENCH_CNT(OFI_PVAR_PUTS)},
    {"get", BENCH_GET, 0, BENCH_CNT(OFI_PVAR_GETS)},
    {"acc", BENCH_ACC, 0, ACC_CNT},
    {"get_acc", BENCH_GET_ACC, 0, ACC_CNT},
    {"fop", BENCH_FOP, 8, BENCH_CNT_ATOMIC},
    {"cas", BENCH_CAS, 8, BENCH_CNT_CAS},
};

int main(int argc, char **argv)
{
    const bench_prog_t prog = {.name = "osc_latency",
                               .ops_help = " (put,get,acc,get_acc,fop,cas; default all)",
                               .metric = "latency of one operation + MPI_Win_flush, lock_all epoch",
                               .mode = BENCH_LATENCY,
                               .checked = 1,
                               .ops = ops,
                               .nops = sizeof(ops) / sizeof(ops[0]),
                               .row = row};

    return bench_main(argc, argv, &prog);
}
