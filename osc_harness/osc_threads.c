/*
 * osc_threads: MPI_THREAD_MULTIPLE one-sided traffic through btl-ofi.
 *
 * T threads per rank (default 3) run at once, first all on ONE shared window
 * (one lock_all epoch opened by the main thread), then each on its OWN window
 * (each thread opens its own lock_all epoch). Every iteration a thread picks a
 * target and, with flushes from all threads interleaving:
 *   - puts a stamped block into its own slot there, flushes, gets it back and
 *     checks it (read-your-writes under concurrent flushes);
 *   - fetch-and-adds 1 on a counter all threads of all ranks share at that
 *     target (its own fetched values must strictly increase);
 *   - compare-and-swaps its own cell there from n to n+1 (must always hit);
 *   - accumulates (SUM) a known increment on a second shared counter.
 * At the end every target checks every slot, counter and cell exactly.
 *
 * Exit: 0 pass, 1 wrong result, 2 the btl_ofi counters show the traffic did not
 * go through btl-ofi, 3 usage, 77 the MPI library does not provide
 * MPI_THREAD_MULTIPLE.
 */

#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_core.h"
#include "ofi_pvars.h"
#include "stress_common.h"

#define MAX_THREADS 16
#define BLOCK 32 /* int64 per put slot */

typedef struct threads_ctx {
    int rank, size, nthreads, iters;
    size_t cells; /* window size in int64 */
    atomic_long wrong;
    atomic_ulong remote_puts, remote_gets, remote_atomics, remote_cas;
} threads_ctx_t;

typedef struct thread_arg {
    threads_ctx_t *ctx;
    int tid;
    bool own_epoch; /* separate windows: the thread opens and closes its own lock_all */
    MPI_Win win;
    pthread_t thread;
} thread_arg_t;

/* Window layout (int64 cells): put slots [origin][thread][BLOCK], CAS cells [origin][thread],
 * then the shared fetch-add counter and the shared accumulate counter. */
static size_t slot_at(const threads_ctx_t *ctx, int origin, int tid)
{
    return ((size_t)origin * ctx->nthreads + tid) * BLOCK;
}

static size_t cas_at(const threads_ctx_t *ctx, int origin, int tid)
{
    return (size_t)ctx->size * ctx->nthreads * BLOCK + (size_t)origin * ctx->nthreads + tid;
}

static size_t fadd_at(const threads_ctx_t *ctx)
{
    return (size_t)ctx->size * ctx->nthreads * (BLOCK + 1);
}

static int target_of(const threads_ctx_t *ctx, int origin, int tid, int iter)
{
    return (iter + tid + origin) % ctx->size;
}

static int64_t stamp(int origin, int tid, int iter, int k)
{
    return ((int64_t)origin << 40) ^ ((int64_t)tid << 32) ^ ((int64_t)iter << 8) ^ k ^
           INT64_C(0x1234000000000000);
}

static void wrong(threads_ctx_t *ctx, int tid, const char *what, int target, int iter,
                  int64_t expect, int64_t got)
{
    if (atomic_fetch_add(&ctx->wrong, 1) < 10) {
        fprintf(stderr,
                "MISMATCH rank %d thread %d target %d iteration %d: %s: expected %" PRId64
                " got %" PRId64 "\n",
                ctx->rank, tid, target, iter, what, expect, got);
    }
}

static void *thread_main(void *p)
{
    thread_arg_t *arg = p;
    threads_ctx_t *ctx = arg->ctx;
    const int me = ctx->rank, tid = arg->tid;
    int64_t block[BLOCK], back[BLOCK], one = 1, fetched, cas_res, cas_new, cas_cmp, inc;
    int64_t *last_fetched = malloc(ctx->size * sizeof(int64_t)), *cas_count = calloc(ctx->size, 8);
    MPI_Win win = arg->win;

    for (int t = 0; t < ctx->size; ++t) {
        last_fetched[t] = -1;
    }
    if (arg->own_epoch) {
        MPI_Win_lock_all(0, win);
    }
    for (int i = 0; i < ctx->iters; ++i) {
        int t = target_of(ctx, me, tid, i);
        unsigned long remote = t != me;

        for (int k = 0; k < BLOCK; ++k) {
            block[k] = stamp(me, tid, i, k);
            back[k] = -1;
        }
        MPI_Put(block, BLOCK, MPI_INT64_T, t, (MPI_Aint)slot_at(ctx, me, tid), BLOCK, MPI_INT64_T,
                win);
        MPI_Win_flush(t, win);
        MPI_Get(back, BLOCK, MPI_INT64_T, t, (MPI_Aint)slot_at(ctx, me, tid), BLOCK, MPI_INT64_T,
                win);
        MPI_Win_flush(t, win);
        for (int k = 0; k < BLOCK; ++k) {
            if (back[k] != block[k]) {
                wrong(ctx, tid, "get after put+flush of own slot", t, i, block[k], back[k]);
                break;
            }
        }
        cas_cmp = cas_count[t];
        cas_new = cas_cmp + 1;
        inc = (int64_t)me * 1000 + tid * 10 + 1;
        MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, t, (MPI_Aint)fadd_at(ctx), MPI_SUM, win);
        MPI_Compare_and_swap(&cas_new, &cas_cmp, &cas_res, MPI_INT64_T, t,
                             (MPI_Aint)cas_at(ctx, me, tid), win);
        MPI_Accumulate(&inc, 1, MPI_INT64_T, t, (MPI_Aint)fadd_at(ctx) + 1, 1, MPI_INT64_T, MPI_SUM,
                       win);
        MPI_Win_flush(t, win);
        if (fetched <= last_fetched[t]) {
            wrong(ctx, tid, "fetch-and-add result did not increase", t, i, last_fetched[t] + 1,
                  fetched);
        }
        last_fetched[t] = fetched;
        if (cas_res != cas_cmp) {
            wrong(ctx, tid, "compare-and-swap on own cell", t, i, cas_cmp, cas_res);
        }
        cas_count[t]++;
        atomic_fetch_add(&ctx->remote_puts, remote);
        atomic_fetch_add(&ctx->remote_gets, remote);
        atomic_fetch_add(&ctx->remote_atomics, 2 * remote); /* fetch_and_op, accumulate */
        atomic_fetch_add(&ctx->remote_cas, remote);
    }
    if (arg->own_epoch) {
        MPI_Win_unlock_all(win);
    }
    free(last_fetched);
    free(cas_count);
    return NULL;
}

/* What this rank's window must hold after every thread of every rank ran (only_tid < 0: all
 * threads used this window; else only thread `only_tid` did). */
static void verify_window(threads_ctx_t *ctx, const int64_t *base, int only_tid)
{
    int64_t fadd = 0, acc = 0;

    for (int r = 0; r < ctx->size; ++r) {
        for (int tid = 0; tid < ctx->nthreads; ++tid) {
            int last = -1;
            int64_t cas = 0;
            if (only_tid >= 0 && tid != only_tid) {
                continue;
            }
            for (int i = 0; i < ctx->iters; ++i) {
                if (target_of(ctx, r, tid, i) == ctx->rank) {
                    last = i;
                    cas++;
                    fadd++;
                    acc += (int64_t)r * 1000 + tid * 10 + 1;
                }
            }
            for (int k = 0; k < BLOCK; ++k) {
                int64_t expect = last < 0 ? 0 : stamp(r, tid, last, k);
                if (base[slot_at(ctx, r, tid) + k] != expect) {
                    wrong(ctx, tid, "put slot of origin at the end", ctx->rank, last, expect,
                          base[slot_at(ctx, r, tid) + k]);
                    break;
                }
            }
            if (base[cas_at(ctx, r, tid)] != cas) {
                wrong(ctx, tid, "compare-and-swap cell at the end", ctx->rank, -1, cas,
                      base[cas_at(ctx, r, tid)]);
            }
        }
    }
    if (base[fadd_at(ctx)] != fadd) {
        wrong(ctx, -1, "fetch-and-add counter total", ctx->rank, -1, fadd, base[fadd_at(ctx)]);
    }
    if (base[fadd_at(ctx) + 1] != acc) {
        wrong(ctx, -1, "accumulate counter total", ctx->rank, -1, acc, base[fadd_at(ctx) + 1]);
    }
}

/*
 * All threads at once, on one window in one lock_all epoch of the main thread (shared), or each
 * on its own window in its own lock_all epoch; then every window is checked. Returns seconds.
 */
static double run_threads(threads_ctx_t *ctx, bool shared)
{
    const int nwins = shared ? 1 : ctx->nthreads;
    int64_t *base[MAX_THREADS];
    thread_arg_t args[MAX_THREADS];
    MPI_Win wins[MAX_THREADS];
    double t0;

    for (int w = 0; w < nwins; ++w) { /* collective: same order on every rank */
        base[w] = calloc(ctx->cells, sizeof(int64_t));
        MPI_Win_create(base[w], (MPI_Aint)(ctx->cells * sizeof(int64_t)), sizeof(int64_t),
                       MPI_INFO_NULL, MPI_COMM_WORLD, &wins[w]);
    }
    t0 = harness_now();
    if (shared) {
        MPI_Win_lock_all(0, wins[0]);
    }
    for (int t = 0; t < ctx->nthreads; ++t) {
        args[t] =
            (thread_arg_t){.ctx = ctx, .tid = t, .own_epoch = !shared, .win = wins[t % nwins]};
        if (pthread_create(&args[t].thread, NULL, thread_main, &args[t])) {
            fprintf(stderr, "osc_threads: pthread_create failed\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    for (int t = 0; t < ctx->nthreads; ++t) {
        pthread_join(args[t].thread, NULL);
    }
    if (shared) {
        MPI_Win_unlock_all(wins[0]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = harness_now() - t0;
    for (int w = 0; w < nwins; ++w) {
        verify_window(ctx, base[w], shared ? -1 : w);
        MPI_Win_free(&wins[w]);
        free(base[w]);
    }
    return t0;
}

static int run(void *arg)
{
    threads_ctx_t *ctx = arg;
    ofi_pvars_t before, after;
    unsigned long d[OFI_PVAR_COUNT], need[4], live;
    int not_ours;
    long wrong_total;
    double t_shared, t_separate;

    ctx->cells = (size_t)ctx->size * ctx->nthreads * (BLOCK + 1) + 2;
    ofi_pvars_read(&before);
    t_shared = run_threads(ctx, true);
    t_separate = run_threads(ctx, false);
    ofi_pvars_read(&after);
    need[0] = atomic_load(&ctx->remote_puts);
    need[1] = atomic_load(&ctx->remote_gets);
    need[2] = atomic_load(&ctx->remote_atomics);
    need[3] = atomic_load(&ctx->remote_cas);
    ofi_pvars_delta(&before, &after, d);
    /*
     * Each remote operation must show as btl-ofi traffic. A compare-and-swap is
     * a BTL atomic, except within one node on Open MPI 5, whose osc/rdma does it
     * as a get (and a put when it swaps) under its accumulate lock: it counts as
     * either, beyond what the puts, gets and other atomics account for.
     */
    not_ours = !after.present || d[OFI_PVAR_PUTS] < need[0] || d[OFI_PVAR_GETS] < need[1] ||
               d[OFI_PVAR_ATOMICS] < need[2] ||
               (d[OFI_PVAR_ATOMICS] - need[2]) + (d[OFI_PVAR_GETS] - need[1]) < need[3];
    not_ours = harness_max_int(not_ours);
    harness_sum_ul_n(d, OFI_PVAR_COUNT);
    harness_sum_ul_n(need, 4);
    live = harness_sum_ul(after.value[OFI_PVAR_REGISTRATIONS_LIVE]);
    wrong_total = harness_sum_long(atomic_load(&ctx->wrong));
    if (0 == ctx->rank) {
        printf("osc_threads: %d ranks x %d threads x %d iterations (put+flush+get+flush, "
               "fetch_and_op, compare_and_swap, accumulate, flush)\n",
               ctx->size, ctx->nthreads, ctx->iters);
        printf("shared window      %.2fs\nseparate windows   %.2fs\n", t_shared, t_separate);
        printf("btl-ofi (all ranks): puts=%lu (>= %lu remote) gets=%lu (>= %lu remote) "
               "atomics=%lu (>= %lu remote, + %lu compare-and-swaps as atomics or gets) "
               "flushes=%lu cq_errors=%lu registrations_live after MPI_Win_free=%lu "
               "cq_wake_armed=%lu cq_wake_reads=%lu\n",
               d[OFI_PVAR_PUTS], need[0], d[OFI_PVAR_GETS], need[1], d[OFI_PVAR_ATOMICS], need[2],
               need[3], d[OFI_PVAR_FLUSHES], d[OFI_PVAR_CQ_ERRORS], live,
               d[OFI_PVAR_WAKE_ARMED], d[OFI_PVAR_WAKE_READS]);
        if (not_ours) {
            printf("NOT CARRIED BY btl-ofi: counters absent or fewer btl_ofi operations than "
                   "remote MPI operations\n");
        }
    }
    return stress_verdict(0 == ctx->rank, wrong_total, live, not_ours);
}

static void usage(const void *opts)
{
    (void)opts;
    fprintf(stderr,
            "usage: osc_threads [-t threads (1-%d, default 3)] "
            "[-i iterations per thread (default 2000)]\n",
            MAX_THREADS);
}

static int parse_args(int argc, char **argv, void *arg)
{
    threads_ctx_t *ctx = arg;
    const harness_opt_t table[] = {
        HARNESS_ARG('t', HARNESS_OPT_INT, &ctx->nthreads),
        HARNESS_ARG('i', HARNESS_OPT_INT, &ctx->iters),
        {0},
    };

    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    return (ctx->nthreads < 1 || ctx->nthreads > MAX_THREADS || ctx->iters < 1) ? -1 : 0;
}

int main(int argc, char **argv)
{
    threads_ctx_t ctx = {.nthreads = 3, .iters = 2000};
    int provided, rc;

    rc = harness_init(&argc, &argv, MPI_THREAD_MULTIPLE, &provided, &ctx.rank, &ctx.size,
                      parse_args, &ctx, usage, HARNESS_EXIT_USAGE);
    if (rc) {
        return rc;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == ctx.rank) {
            printf("SKIP: MPI_THREAD_MULTIPLE not provided (got level %d)\n", provided);
        }
        MPI_Finalize();
        return HARNESS_EXIT_SKIP;
    }
    return harness_run(run, &ctx);
}
