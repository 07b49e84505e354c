/*
 * osc_acc: accumulates that osc/rdma cannot map to one network atomic.
 *
 *   large       rank 0 adds N doubles (MPI_SUM, default N = 131072, 1 MiB)
 *               into rank 1's window, each call followed by
 *               MPI_Win_flush_local, in one lock_all epoch:
 *                 contig   N x MPI_DOUBLE
 *                 strided  a vector of N doubles with stride 2, origin and
 *                          target (2 MiB of window, every other element)
 *   contention  every rank but the last adds -c doubles (default 64) to the
 *               same elements of the last rank's window, -i times, each
 *               followed by MPI_Win_flush (osc/rdma's accumulate lock).
 *
 * Each row is checked: after the epoch the target holds exactly what was
 * added (and the strided holes are untouched). The row also reports what
 * btl-ofi carried per call (atomics, gets, puts from its MPI_T counters):
 * the way osc/rdma cut the accumulate up, which is where its time goes.
 *
 *   -m MODES   large,contention (default both); -k KINDS contig,strided
 *   -n N       doubles per large accumulate (default 131072)
 *   -c N       doubles per contended accumulate (default 64)
 *   -i ITERS   calls per row (default 20; the strided row takes -i / 4, at least 2)
 *   -j         JSON lines;  -r  exit 2 unless btl-ofi carried every row
 * Exit: 0 correct, 1 wrong results, 2 not carried by btl-ofi (-r), 3 usage, 77 not runnable.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_output.h"
#include "harness_core.h"
#include "ofi_pvars.h"

static const char *const mode_names[] = {"large", "contention"};
static const char *const kind_names[] = {"contig", "strided"};

typedef struct acc_opts {
    bool mode[2]; /* large, contention */
    bool kind[2]; /* contig, strided */
    int json, require_ofi;
    int n, c, iters;
} acc_opts_t;

typedef struct acc_row {
    const char *mode, *kind;
    int count, calls, ranks;
    double seconds; /* per call, slowest origin */
    int exact;
    unsigned long carried[3]; /* btl-ofi's atomics, gets, puts, summed over ranks */
} acc_row_t;

static void usage(const void *opts)
{
    (void)opts;
    fprintf(stderr, "usage: mpirun -np 2+ osc_acc [-m large,contention] [-k contig,strided] "
                    "[-n N] [-c N] [-i ITERS] [-j] [-r]\n");
}

static int parse(int argc, char **argv, void *opts)
{
    acc_opts_t *o = opts;
    const harness_opt_t table[] = {
        HARNESS_NAMED('m', HARNESS_OPT_PICK, o->mode, mode_names, 2),
        HARNESS_NAMED('k', HARNESS_OPT_PICK, o->kind, kind_names, 2),
        HARNESS_ARG('n', HARNESS_OPT_POS, &o->n),
        HARNESS_ARG('c', HARNESS_OPT_POS, &o->c),
        HARNESS_ARG('i', HARNESS_OPT_POS, &o->iters),
        HARNESS_FLAG('j', &o->json, 1),
        HARNESS_FLAG('r', &o->require_ofi, 1),
        {0},
    };

    return harness_getopt(argc, argv, table);
}

/* btl-ofi's atomics, gets and puts of this process so far. */
static void counters(unsigned long out[3])
{
    static const enum ofi_pvar_id ids[3] = {OFI_PVAR_ATOMICS, OFI_PVAR_GETS, OFI_PVAR_PUTS};
    ofi_pvars_t now;

    ofi_pvars_read(&now);
    for (int i = 0; i < 3; ++i) {
        out[i] = now.present ? now.value[ids[i]] : 0;
    }
}

/*
 * One row. large: rank 0 adds ones into rank 1, each call followed by MPI_Win_flush_local;
 * contention: every rank but the last adds ones to the same elements of the last rank, each
 * call followed by MPI_Win_flush. The target then checks every element.
 */
static void run_row(const acc_opts_t *o, int rank, int nranks, int contention, int strided,
                    acc_row_t *row)
{
    const int stride = strided ? 2 : 1, n = contention ? o->c : o->n;
    const int target = contention ? nranks - 1 : 1, origins = contention ? nranks - 1 : 1;
    const size_t len = (size_t)n * stride;
    unsigned long before[3];
    double *win_buf = calloc(len, sizeof(double)), *src = malloc(len * sizeof(double)), t = 0;
    MPI_Datatype type = MPI_DOUBLE;
    int count = n, exact = 1;
    MPI_Win win;

    *row = (acc_row_t){.mode = mode_names[contention],
                       .kind = kind_names[strided],
                       .count = n,
                       .calls = strided ? (o->iters / 4 > 2 ? o->iters / 4 : 2) : o->iters,
                       .ranks = origins + 1};
    MPI_Win_create(win_buf, (MPI_Aint)(len * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    for (size_t i = 0; i < len; ++i) {
        src[i] = 1.0;
    }
    if (strided) {
        MPI_Type_vector(n, 1, stride, MPI_DOUBLE, &type);
        MPI_Type_commit(&type);
        count = 1;
    }
    counters(before);
    MPI_Win_lock_all(0, win);
    if (contention ? rank != target : 0 == rank) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < row->calls; ++k) {
            MPI_Accumulate(src, count, type, target, 0, count, type, MPI_SUM, win);
            (contention ? MPI_Win_flush : MPI_Win_flush_local)(target, win);
        }
        if (!contention) {
            MPI_Win_flush(target, win);
        }
        t = MPI_Wtime() - t0;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; rank == target && i < len; ++i) {
        exact &= win_buf[i] == (0 == i % stride ? (double)origins * row->calls : 0.0);
    }
    /* each rank's counter deltas and exactness summed; the slowest origin's time */
    counters(row->carried);
    for (int i = 0; i < 3; ++i) {
        row->carried[i] -= before[i];
    }
    harness_sum_ul_n(row->carried, 3);
    MPI_Allreduce(&t, &row->seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    row->exact = harness_min_int(exact);
    row->seconds /= row->calls;
    if (strided) {
        MPI_Type_free(&type);
    }
    MPI_Win_free(&win);
    free(win_buf);
    free(src);
}

/* A row, or (columns) the column names. */
static void print_row(const acc_opts_t *o, const acc_row_t *r, int columns)
{
    const double calls = r->calls;
    const double bytes = (double)r->count * sizeof(double) * (r->ranks - 1);
    const bench_field_t f[] = {
        BENCH_STR("mode", 11, r->mode),
        BENCH_STR("kind", 8, r->kind),
        BENCH_INT("ranks", 6, r->ranks),
        BENCH_INT("count", 8, r->count),
        BENCH_INT("calls", 6, r->calls),
        BENCH_DBL("ms_per_call", 12, 3, 1e3 * r->seconds),
        BENCH_DBL("MB_per_s", 10, 2, bytes / r->seconds / 1e6),
        BENCH_DBL("atomics", 9, 0, r->carried[0] / calls),
        BENCH_DBL("gets", 7, 0, r->carried[1] / calls),
        BENCH_DBL("puts", 7, 0, r->carried[2] / calls),
        BENCH_STR("result", 7, r->exact ? "exact" : "WRONG"),
    };
    bench_print_row("osc_acc", o->json, columns, f, sizeof(f) / sizeof(f[0]));
}

static int run(void *ctx)
{
    const acc_opts_t *o = ctx;
    acc_row_t row = {.calls = 1, .ranks = 1, .seconds = 1};
    int rank, nranks, wrong = 0, ours = 1;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (0 == rank && !o->json) {
        printf("# osc_acc: MPI_SUM on doubles, %d ranks; per call what btl-ofi carried "
               "(atomics, gets, puts)\n",
               nranks);
        print_row(o, &row, 1);
    }
    for (int mode = 0; mode < 2; ++mode) {
        for (int strided = 0; strided < 2 - mode; ++strided) { /* contention: contig */
            if (!o->mode[mode] || (!mode && !o->kind[strided])) {
                continue;
            }
            run_row(o, rank, nranks, mode, strided, &row);
            wrong += !row.exact;
            ours &= row.carried[0] + row.carried[1] + row.carried[2] > 0;
            if (0 == rank) {
                print_row(o, &row, 0);
            }
        }
    }
    return wrong ? HARNESS_EXIT_FAIL : (o->require_ofi && !ours ? HARNESS_EXIT_NOT_OURS : 0);
}

int main(int argc, char **argv)
{
    acc_opts_t o = {.mode = {true, true}, .kind = {true, true}, .n = 131072, .c = 64, .iters = 20};
    int rank, nranks;
    int rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &rank, &nranks, parse, &o, usage,
                          HARNESS_EXIT_USAGE);

    if (rc) {
        return rc;
    }
    if (nranks < 2) {
        return harness_skip(rank, "osc_acc: needs 2 or more ranks\n");
    }
    return harness_run(run, &o);
}
