/*
 * osc_flush_visibility: does MPI_Win_flush mean "visible at the target"?
 *
 * Rank 0 puts SIZE bytes of a round-specific pattern into rank 1's window,
 * calls MPI_Win_flush, then tells rank 1 with a two-sided message; rank 1
 * checks the first, middle and last byte at once. A stale byte means flush
 * returned before the data landed. With btl_ofi_completion=local (a debug
 * setting that only waits for local completion) stale rounds can appear on
 * providers without delivery-complete semantics: that run shows the check
 * has the power to fail.
 *
 * With BUSY_MS > 0, after each round's barrier rank 1, the target, makes no
 * MPI call for BUSY_MS (a rank busy computing), and:
 *   watch (2 ranks): rank 1 watches the three bytes in its own memory while
 *     it is busy, and a round is stale if they still held the old value after
 *     rank 0's flush had returned. Both times are CLOCK_MONOTONIC: valid for
 *     ranks on one kernel (network namespaces, as compare.py --net makes them).
 *   third party (3 ranks or more): rank 0 puts, flushes and tells rank 2,
 *     which gets the three bytes from rank 1 and checks them. A flush that
 *     returns before the data is in rank 1's memory leaves the order of rank
 *     1's next progress to chance: rank 2 can read old data. No clock enters.
 * Built with any MPI's mpicc these check that MPI (compare.py --net does).
 *
 *   osc_flush_visibility [SIZE] [ROUNDS] [BUSY_MS]   default 16 MiB, 50 rounds, 0
 *
 * Prints "size=... rounds=... stale=... btl_ofi_puts=..." (and the form and
 * "busy_ms=..." with BUSY_MS); exit 0 if no round was stale, 1 if any was, 2 if
 * btl-ofi did not carry the puts (its put counter on rank 0 moved less than
 * ROUNDS), 77 with fewer than 2 ranks.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness_core.h"
#include "ofi_pvars.h"

enum { VIS_MESSAGE, VIS_WATCH, VIS_THIRD_PARTY };
static const char *const vis_form[] = {"", " watch", " third_party"};

typedef struct vis_ctx {
    size_t size;
    int rounds, rank, busy_ms, form;
} vis_ctx_t;

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* First, middle and last byte of the target window: stale unless all are the pattern. */
static int stale_bytes(const volatile unsigned char *b, size_t size, unsigned char pattern)
{
    return b[0] != pattern || b[size / 2] != pattern || b[size - 1] != pattern;
}

/* Rank 1 with BUSY_MS: no MPI call for ms milliseconds. With a window to watch, the last
 * time (now_us) its bytes were not yet the pattern, else 0. */
static double busy(int ms, const volatile unsigned char *window, size_t size, unsigned char pattern)
{
    const double end = now_us() + ms * 1e3;
    double last_old = 0;

    for (double t = now_us(); t < end; t = now_us()) {
        if (NULL != window && stale_bytes(window, size, pattern)) {
            last_old = t;
        }
    }
    return last_old;
}

/* One round, the checker's verdict (1 stale); the checker is rank 1, or rank 2 with a third
 * party. Rank 0 tells the checker when its flush returned (watch) or just that it did. */
static int round_of(const vis_ctx_t *ctx, int k, unsigned char *src, unsigned char *window,
                    MPI_Win win)
{
    const unsigned char pattern = (unsigned char)k;
    const int checker = VIS_THIRD_PARTY == ctx->form ? 2 : 1;
    unsigned char got[3];
    int token = k;
    double flushed = 0, last_old = 0;

    if (ctx->busy_ms) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (0 == ctx->rank) {
        memset(src, pattern, ctx->size);
        MPI_Put(src, (int)ctx->size, MPI_BYTE, 1, 0, (int)ctx->size, MPI_BYTE, win);
        MPI_Win_flush(1, win);
        flushed = now_us();
        MPI_Send(&flushed, 1, MPI_DOUBLE, checker, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, checker, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (checker == ctx->rank) {
        if (VIS_WATCH == ctx->form) {
            last_old = busy(ctx->busy_ms, window, ctx->size, pattern);
        }
        MPI_Recv(&flushed, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (VIS_THIRD_PARTY == ctx->form) {
            const MPI_Aint at[3] = {0, (MPI_Aint)(ctx->size / 2), (MPI_Aint)ctx->size - 1};
            for (int i = 0; i < 3; ++i) {
                MPI_Get(&got[i], 1, MPI_BYTE, 1, at[i], 1, MPI_BYTE, win);
            }
            MPI_Win_flush(1, win);
        } else {
            got[0] = window[0];
            got[1] = window[ctx->size / 2];
            got[2] = window[ctx->size - 1];
        }
        /* Read before rank 0 may go on: a provider that applies puts on its own (a NIC)
         * would otherwise land the next round's put under this round's check. */
        MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        if (VIS_WATCH == ctx->form) {
            return last_old > flushed;
        }
        if (stale_bytes(got, 3, pattern)) {
            fprintf(stderr, "round %d: first, middle and last byte %u %u %u, expected %u\n", k,
                    got[0], got[1], got[2], pattern);
            return 1;
        }
        return 0;
    } else if (1 == ctx->rank) {
        busy(ctx->busy_ms, NULL, 0, 0);
    }
    return 0;
}

static int run(const vis_ctx_t *ctx)
{
    unsigned char *window = calloc(ctx->size, 1), *src = malloc(ctx->size);
    int stale = 0;
    MPI_Win win;

    if (NULL == window || NULL == src) {
        fprintf(stderr, "cannot allocate %zu bytes\n", ctx->size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_create(window, (MPI_Aint)ctx->size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    for (int k = 1; k <= ctx->rounds; ++k) {
        stale += round_of(ctx, k, src, window, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(window);
    free(src);
    return stale;
}

static int run_counted(void *arg)
{
    const vis_ctx_t *ctx = arg;
    int stale, ours;
    ofi_pvars_t before, after;
    unsigned long puts;

    ofi_pvars_read(&before);
    stale = run(ctx);
    ofi_pvars_read(&after);
    puts = after.value[OFI_PVAR_PUTS] - before.value[OFI_PVAR_PUTS];
    ours = after.present && puts >= (unsigned long)ctx->rounds;
    MPI_Allreduce(MPI_IN_PLACE, &stale, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == ctx->rank) {
        printf("size=%zu rounds=%d stale=%d btl_ofi_puts=%lu%s", ctx->size, ctx->rounds, stale,
               puts, ours ? "" : " NOT CARRIED BY btl-ofi");
        printf(ctx->busy_ms ? "%s busy_ms=%d\n" : "\n", vis_form[ctx->form], ctx->busy_ms);
    }
    MPI_Bcast(&ours, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return stale ? HARNESS_EXIT_FAIL : (ours ? HARNESS_EXIT_PASS : HARNESS_EXIT_NOT_OURS);
}

int main(int argc, char **argv)
{
    vis_ctx_t ctx = {
        .size = (argc > 1) ? strtoull(argv[1], NULL, 0) : 16u << 20,
        .rounds = (argc > 2) ? atoi(argv[2]) : 50,
        .busy_ms = (argc > 3) ? atoi(argv[3]) : 0,
    };
    int nranks;

    harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &nranks, NULL, NULL, NULL, 0);
    if (nranks < 2 || 0 == ctx.size || ctx.size > (size_t)1 << 30 || ctx.rounds < 1 ||
        ctx.busy_ms < 0 || ctx.busy_ms > 60000) {
        return harness_skip(ctx.rank, "needs >= 2 ranks, 0 < SIZE <= 1 GiB, ROUNDS >= 1, "
                                      "0 <= BUSY_MS <= 60000\n");
    }
    ctx.form = 0 == ctx.busy_ms ? VIS_MESSAGE : 2 == nranks ? VIS_WATCH : VIS_THIRD_PARTY;
    return harness_run(run_counted, &ctx);
}
