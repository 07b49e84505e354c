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
 *   osc_flush_visibility [SIZE] [ROUNDS]      default 16 MiB, 50 rounds
 *
 * Prints "size=... rounds=... stale=... btl_ofi_puts=..."; exit 0 if no round
 * was stale, 1 if any was, 2 if btl-ofi did not carry the puts (its put
 * counter on rank 0 moved less than ROUNDS), 77 with fewer than 2 ranks.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_core.h"
#include "ofi_pvars.h"

static int run(size_t size, int rounds, int rank)
{
    unsigned char *window = calloc(size, 1), *src = malloc(size);
    int stale = 0, token = 0;
    MPI_Win win;

    if (NULL == window || NULL == src) {
        fprintf(stderr, "cannot allocate %zu bytes\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_create(window, (MPI_Aint) size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    for (int k = 1; k <= rounds; ++k) {
        const unsigned char pattern = (unsigned char) k;
        if (0 == rank) {
            memset(src, pattern, size);
            MPI_Put(src, (int) size, MPI_BYTE, 1, 0, (int) size, MPI_BYTE, win);
            MPI_Win_flush(1, win);
            MPI_Send(&k, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (1 == rank) {
            MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stale += window[0] != pattern || window[size / 2] != pattern ||
                     window[size - 1] != pattern;
            MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(window);
    free(src);
    return stale;
}

typedef struct vis_ctx {
    size_t size;
    int rounds, rank;
} vis_ctx_t;

static int run_counted(void *arg)
{
    const vis_ctx_t *ctx = arg;
    int stale, ours;
    ofi_pvars_t before, after;
    unsigned long puts;

    ofi_pvars_read(&before);
    stale = run(ctx->size, ctx->rounds, ctx->rank);
    ofi_pvars_read(&after);
    puts = after.value[OFI_PVAR_PUTS] - before.value[OFI_PVAR_PUTS];
    ours = after.present && puts >= (unsigned long) ctx->rounds;
    MPI_Bcast(&stale, 1, MPI_INT, 1, MPI_COMM_WORLD);
    if (0 == ctx->rank) {
        printf("size=%zu rounds=%d stale=%d btl_ofi_puts=%lu%s\n", ctx->size, ctx->rounds, stale,
               puts, ours ? "" : " NOT CARRIED BY btl-ofi");
    }
    MPI_Bcast(&ours, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return stale ? HARNESS_EXIT_FAIL : (ours ? HARNESS_EXIT_PASS : HARNESS_EXIT_NOT_OURS);
}

int main(int argc, char **argv)
{
    vis_ctx_t ctx = {
        .size = (argc > 1) ? strtoull(argv[1], NULL, 0) : 16u << 20,
        .rounds = (argc > 2) ? atoi(argv[2]) : 50,
    };
    int nranks;

    harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &nranks, NULL, NULL, NULL, 0);
    if (nranks < 2 || 0 == ctx.size || ctx.size > (size_t) 1 << 30 || ctx.rounds < 1) {
        return harness_skip(ctx.rank, "needs >= 2 ranks, 0 < SIZE <= 1 GiB, ROUNDS >= 1\n");
    }
    return harness_run(run_counted, &ctx);
}
