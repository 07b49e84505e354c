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

#define NCOLS 11

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
    unsigned long atomics, gets, puts; /* btl-ofi's, summed over ranks */
} acc_row_t;

static const bench_field_t columns[NCOLS] = {
    BENCH_STR("mode", 11, ""),     BENCH_STR("kind", 8, ""),    BENCH_STR("ranks", 6, ""),
    BENCH_STR("count", 8, ""),     BENCH_STR("calls", 6, ""),   BENCH_STR("ms_per_call", 12, ""),
    BENCH_STR("MB_per_s", 10, ""), BENCH_STR("atomics", 9, ""), BENCH_STR("gets", 7, ""),
    BENCH_STR("puts", 7, ""),      BENCH_STR("result", 7, ""),
};

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
        HARNESS_ARG('n', HARNESS_OPT_INT, &o->n),
        HARNESS_ARG('c', HARNESS_OPT_INT, &o->c),
        HARNESS_ARG('i', HARNESS_OPT_INT, &o->iters),
        HARNESS_FLAG('j', &o->json, 1),
        HARNESS_FLAG('r', &o->require_ofi, 1),
        {0},
    };

    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    if (!o->mode[0] && !o->mode[1]) {
        o->mode[0] = o->mode[1] = true;
    }
    if (!o->kind[0] && !o->kind[1]) {
        o->kind[0] = o->kind[1] = true;
    }
    return o->n < 1 || o->c < 1 || o->iters < 1 ? -1 : 0;
}

static void counters(unsigned long out[3])
{
    ofi_pvars_t now;

    ofi_pvars_read(&now);
    out[0] = now.present ? now.value[OFI_PVAR_ATOMICS] : 0;
    out[1] = now.present ? now.value[OFI_PVAR_GETS] : 0;
    out[2] = now.present ? now.value[OFI_PVAR_PUTS] : 0;
}

/* The window over len doubles, zeroed; rows run one after another in it. */
static MPI_Win open_window(double **buf, size_t len)
{
    MPI_Win win;

    *buf = calloc(len, sizeof(double));
    MPI_Win_create(*buf, (MPI_Aint)(len * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    return win;
}

/* Sum each rank's counter deltas and its exactness; the slowest origin's time. */
static void finish_row(acc_row_t *row, const unsigned long before[3], double mine, int exact)
{
    unsigned long after[3], delta[3];

    counters(after);
    for (int i = 0; i < 3; ++i) {
        delta[i] = after[i] - before[i];
    }
    harness_sum_ul_n(delta, 3);
    MPI_Allreduce(&mine, &row->seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    row->exact = harness_min_int(exact);
    row->seconds /= row->calls;
    row->atomics = delta[0];
    row->gets = delta[1];
    row->puts = delta[2];
}

/* Rank 0 adds ones into rank 1, -i times; rank 1 then checks every element. */
static void large_row(const acc_opts_t *o, int rank, int strided, acc_row_t *row)
{
    const int stride = strided ? 2 : 1, n = o->n;
    const size_t len = (size_t)n * stride;
    unsigned long before[3];
    double *win_buf, *src = malloc(len * sizeof(double)), t = 0;
    MPI_Datatype type = MPI_DOUBLE;
    int count = n, exact = 1;
    MPI_Win win = open_window(&win_buf, len);

    *row = (acc_row_t){.mode = "large",
                       .kind = strided ? "strided" : "contig",
                       .count = n,
                       .calls = strided ? (o->iters / 4 > 2 ? o->iters / 4 : 2) : o->iters,
                       .ranks = 2};
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
    if (0 == rank) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < row->calls; ++k) {
            MPI_Accumulate(src, count, type, 1, 0, count, type, MPI_SUM, win);
            MPI_Win_flush_local(1, win);
        }
        MPI_Win_flush(1, win);
        t = MPI_Wtime() - t0;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) {
        for (size_t i = 0; i < len; ++i) {
            exact &= win_buf[i] == (0 == i % stride ? (double)row->calls : 0.0);
        }
    }
    finish_row(row, before, t, exact);
    if (strided) {
        MPI_Type_free(&type);
    }
    MPI_Win_free(&win);
    free(win_buf);
    free(src);
}

/* Every rank but the last adds ones to the same -c elements of the last rank. */
static void contention_row(const acc_opts_t *o, int rank, int nranks, acc_row_t *row)
{
    const int target = nranks - 1;
    unsigned long before[3];
    double *win_buf, *src = malloc((size_t)o->c * sizeof(double)), t = 0;
    int exact = 1;
    MPI_Win win = open_window(&win_buf, (size_t)o->c);

    *row = (acc_row_t){
        .mode = "contention", .kind = "contig", .count = o->c, .calls = o->iters, .ranks = nranks};
    for (int i = 0; i < o->c; ++i) {
        src[i] = 1.0;
    }
    counters(before);
    MPI_Win_lock_all(0, win);
    if (rank != target) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < o->iters; ++k) {
            MPI_Accumulate(src, o->c, MPI_DOUBLE, target, 0, o->c, MPI_DOUBLE, MPI_SUM, win);
            MPI_Win_flush(target, win);
        }
        t = MPI_Wtime() - t0;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        for (int i = 0; i < o->c; ++i) {
            exact &= win_buf[i] == (double)(nranks - 1) * o->iters;
        }
    }
    finish_row(row, before, t, exact);
    MPI_Win_free(&win);
    free(win_buf);
    free(src);
}

static void print_row(const acc_opts_t *o, const acc_row_t *r)
{
    const double calls = r->calls;
    const double bytes = (double)r->count * sizeof(double) * (r->ranks - 1);
    bench_field_t f[NCOLS] = {
        BENCH_STR("mode", 11, r->mode),
        BENCH_STR("kind", 8, r->kind),
        BENCH_INT("ranks", 6, r->ranks),
        BENCH_INT("count", 8, r->count),
        BENCH_INT("calls", 6, r->calls),
        BENCH_DBL("ms_per_call", 12, 3, 1e3 * r->seconds),
        BENCH_DBL("MB_per_s", 10, 2, bytes / r->seconds / 1e6),
        BENCH_DBL("atomics", 9, 0, r->atomics / calls),
        BENCH_DBL("gets", 7, 0, r->gets / calls),
        BENCH_DBL("puts", 7, 0, r->puts / calls),
        BENCH_STR("result", 7, r->exact ? "exact" : "WRONG"),
    };
    bench_print_row("osc_acc", o->json, 0, f, NCOLS);
}

/* Print a finished row (rank 0) and count it: wrong results, rows btl-ofi did not carry. */
static void tally(const acc_opts_t *o, int rank, const acc_row_t *row, int *wrong, int *ours)
{
    *wrong += !row->exact;
    *ours &= row->atomics + row->gets + row->puts > 0;
    if (0 == rank) {
        print_row(o, row);
    }
}

static int run(void *ctx)
{
    const acc_opts_t *o = ctx;
    acc_row_t row;
    int rank, nranks, wrong = 0, ours = 1;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (0 == rank && !o->json) {
        printf("# osc_acc: MPI_SUM on doubles, %d ranks; per call what btl-ofi carried "
               "(atomics, gets, puts)\n",
               nranks);
        bench_print_row("osc_acc", 0, 1, columns, NCOLS);
    }
    for (int strided = 0; strided < 2; ++strided) {
        if (o->mode[0] && o->kind[strided]) {
            large_row(o, rank, strided, &row);
            tally(o, rank, &row, &wrong, &ours);
        }
    }
    if (o->mode[1]) {
        contention_row(o, rank, nranks, &row);
        tally(o, rank, &row, &wrong, &ours);
    }
    return wrong ? HARNESS_EXIT_FAIL : (o->require_ofi && !ours ? HARNESS_EXIT_NOT_OURS : 0);
}

int main(int argc, char **argv)
{
    acc_opts_t o = {.n = 131072, .c = 64, .iters = 20};
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
