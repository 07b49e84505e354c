/*
 * osc_demo: a short one-sided demo through btl-ofi.
 *
 * Every rank runs put, get, accumulate, fetch_and_op and compare_and_swap
 * against its right neighbour in a Win_create window, checks the results
 * exactly, and rank 0 prints one table row per operation with the btl_ofi
 * counters that moved while it ran: the proof that this component carried the
 * traffic. Exit codes: 0 pass, 1 wrong result, 2 traffic did not go through
 * btl-ofi (stock component or osc/pt2pt), 77 not supported here.
 */

#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_core.h"
#include "ofi_pvars.h"

#define COUNT 1024

typedef struct demo_ctx {
    int rank, size, right, left;
    int64_t *base;
    MPI_Win win;
} demo_ctx_t;

typedef int (*demo_fn)(demo_ctx_t *ctx);

/* Puts rank-stamped values into the right neighbour, then checks what arrived from the left. */
static int demo_put(demo_ctx_t *ctx)
{
    int64_t src[COUNT];

    for (int i = 0; i < COUNT; ++i) {
        src[i] = ctx->rank * 1000000 + i;
    }
    MPI_Win_fence(0, ctx->win);
    MPI_Put(src, COUNT, MPI_INT64_T, ctx->right, 0, COUNT, MPI_INT64_T, ctx->win);
    MPI_Win_fence(0, ctx->win);
    for (int i = 0; i < COUNT; ++i) {
        if (ctx->base[i] != ctx->left * 1000000 + i) {
            return 0;
        }
    }
    return 1;
}

static int demo_get(demo_ctx_t *ctx)
{
    int64_t dst[COUNT];

    MPI_Win_lock(MPI_LOCK_SHARED, ctx->right, 0, ctx->win);
    MPI_Get(dst, COUNT, MPI_INT64_T, ctx->right, 0, COUNT, MPI_INT64_T, ctx->win);
    MPI_Win_unlock(ctx->right, ctx->win);
    for (int i = 0; i < COUNT; ++i) {
        /* the right neighbour holds what its left (this rank) put there */
        if (dst[i] != ctx->rank * 1000000 + i) {
            return 0;
        }
    }
    return 1;
}

static int demo_accumulate(demo_ctx_t *ctx)
{
    int64_t one = 1;

    MPI_Win_fence(0, ctx->win);
    ctx->base[COUNT] = 0;
    MPI_Win_fence(0, ctx->win);
    /* every rank adds its rank+1 to rank 0's slot: sum 1..size */
    one = ctx->rank + 1;
    MPI_Accumulate(&one, 1, MPI_INT64_T, 0, COUNT, 1, MPI_INT64_T, MPI_SUM, ctx->win);
    MPI_Win_fence(0, ctx->win);
    return 0 != ctx->rank || ctx->base[COUNT] == (int64_t)ctx->size * (ctx->size + 1) / 2;
}

static int demo_fetch_and_op(demo_ctx_t *ctx)
{
    int64_t one = 1, old = -1, total = 0;
    const int rounds = 100;

    MPI_Win_fence(0, ctx->win);
    ctx->base[COUNT + 1] = 0;
    MPI_Win_fence(0, ctx->win);
    MPI_Win_lock_all(0, ctx->win);
    for (int i = 0; i < rounds; ++i) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, ctx->right, COUNT + 1, MPI_SUM, ctx->win);
        MPI_Win_flush(ctx->right, ctx->win);
        total += (old == i);
    }
    MPI_Win_unlock_all(ctx->win);
    MPI_Win_fence(0, ctx->win);
    return total == rounds && ctx->base[COUNT + 1] == rounds;
}

static int demo_compare_and_swap(demo_ctx_t *ctx)
{
    int64_t expected = 0, desired, result = -1;
    int ok;

    MPI_Win_fence(0, ctx->win);
    ctx->base[COUNT + 2] = 0;
    MPI_Win_fence(0, ctx->win);
    /* all ranks race to claim rank 0's slot; exactly one wins */
    desired = ctx->rank + 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, ctx->win);
    MPI_Compare_and_swap(&desired, &expected, &result, MPI_INT64_T, 0, COUNT + 2, ctx->win);
    MPI_Win_unlock(0, ctx->win);
    ok = (0 == result) ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_fence(0, ctx->win);
    return 1 == ok &&
           (0 != ctx->rank || (ctx->base[COUNT + 2] >= 1 && ctx->base[COUNT + 2] <= ctx->size));
}

/*
 * The btl-ofi counter each operation must move. Within one node Open MPI 5's
 * osc/rdma does compare-and-swap as a get and a put under its accumulate lock
 * (osc_rdma_accumulate.c: use_shared_mem when single_node), where 4.1 asked
 * the BTL for an atomic: either counter proves the path, and the row names the
 * one that moved.
 */
static const struct {
    const char *name;
    demo_fn fn;
    enum ofi_pvar_id counter;
    enum ofi_pvar_id or_counter;
} demos[] = {
    {"put", demo_put, OFI_PVAR_PUTS, OFI_PVAR_PUTS},
    {"get", demo_get, OFI_PVAR_GETS, OFI_PVAR_GETS},
    {"accumulate", demo_accumulate, OFI_PVAR_ATOMICS, OFI_PVAR_ATOMICS},
    {"fetch_and_op", demo_fetch_and_op, OFI_PVAR_ATOMICS, OFI_PVAR_ATOMICS},
    {"compare_and_swap", demo_compare_and_swap, OFI_PVAR_ATOMICS, OFI_PVAR_GETS},
};

/* Every demo in turn, one table row each; the exit code. */
static int run(void *arg)
{
    demo_ctx_t *ctx = arg;
    int failures = 0, not_ours = 0;

    ctx->base = calloc(COUNT + 8, sizeof(int64_t));
    MPI_Win_create(ctx->base, (COUNT + 8) * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &ctx->win);

    if (0 == ctx->rank) {
        printf("%-18s %-7s %-28s %12s\n", "operation", "result", "btl-ofi counter (all ranks)",
               "delta");
    }
    for (size_t d = 0; d < sizeof(demos) / sizeof(demos[0]); ++d) {
        ofi_pvars_t before, after;
        unsigned long delta[2];
        enum ofi_pvar_id moved;
        int ok;

        ofi_pvars_read(&before);
        ok = demos[d].fn(ctx);
        ofi_pvars_read(&after);
        delta[0] = after.value[demos[d].counter] - before.value[demos[d].counter];
        delta[1] = after.value[demos[d].or_counter] - before.value[demos[d].or_counter];
        ok = harness_min_int(ok);
        harness_sum_ul_n(delta, 2);
        moved = (0 == delta[0] && 0 != delta[1]) ? demos[d].or_counter : demos[d].counter;
        failures += !ok;
        not_ours += !after.present || 0 == delta[moved == demos[d].counter ? 0 : 1];
        if (0 == ctx->rank) {
            printf("%-18s %-7s %-28s %12lu\n", demos[d].name, ok ? "exact" : "WRONG",
                   ofi_pvar_name(moved), delta[moved == demos[d].counter ? 0 : 1]);
        }
    }

    MPI_Win_free(&ctx->win);
    if (0 == ctx->rank) {
        ofi_pvars_t end;
        ofi_pvars_read(&end);
        printf("%d ranks; %s after MPI_Win_free: %lu\n", ctx->size,
               ofi_pvar_name(OFI_PVAR_REGISTRATIONS_LIVE), end.value[OFI_PVAR_REGISTRATIONS_LIVE]);
        if (not_ours) {
            printf("NOT CARRIED BY btl-ofi: its counters %s\n",
                   end.present ? "did not move"
                               : "are absent (component not loaded or not selected)");
        }
        printf("%s\n", failures ? "FAILED" : (not_ours ? "FAILED (wrong path)" : "PASSED"));
    }
    free(ctx->base);
    return failures ? HARNESS_EXIT_FAIL : (not_ours ? HARNESS_EXIT_NOT_OURS : HARNESS_EXIT_PASS);
}

int main(int argc, char **argv)
{
    demo_ctx_t ctx;

    harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &ctx.size, NULL, NULL, NULL, 0);
    ctx.right = (ctx.rank + 1) % ctx.size;
    ctx.left = (ctx.rank + ctx.size - 1) % ctx.size;
    if (ctx.size < 2) {
        return harness_skip(ctx.rank, "osc_demo needs at least 2 ranks\n");
    }
    return harness_run(run, &ctx);
}
