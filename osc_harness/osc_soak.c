/*
 * osc_soak: long-running one-sided load through btl-ofi, checked exactly.
 *
 *   fadd         N fetch-and-add(+1) in total from all ranks on one counter at
 *                rank 0 (default 10,000,000). The final value must be N and the
 *                fetched values of all ranks together must be exactly 0..N-1,
 *                each once (bitmaps OR-reduced at rank 0).
 *   outstanding  every rank keeps K operations outstanding before one flush
 *                (default 10,000: more than the CQ size and the provider's tx
 *                queue): K puts of distinct stamped slots, then K Rgets of them,
 *                then K Raccumulates (SUM) on per-origin counters, round-robin
 *                over all ranks. Nothing may be lost or wrong, nothing may hang.
 * After MPI_Win_free, btl_ofi_registrations_live must be back to 0 on every rank.
 * ops/s is reported per mode.
 *
 * Exit: 0 pass, 1 wrong result or leaked registrations, 2 the btl_ofi counters
 * show the traffic did not go through btl-ofi, 3 usage.
 */

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_core.h"
#include "ofi_pvars.h"
#include "stress_common.h"

typedef struct soak_opts {
    long long total; /* fadd: operations across all ranks */
    int batch;       /* fadd: fetch-adds between flushes */
    int outstanding; /* outstanding: operations per flush */
    int rounds;      /* outstanding: repetitions */
    bool fadd, keep; /* which modes run */
} soak_opts_t;

typedef struct soak_ctx {
    soak_opts_t opt;
    int rank, size;
    long wrong;
    unsigned long remote_atomics, remote_puts, remote_gets; /* issued to other ranks */
    unsigned long live_during; /* registrations held while a window existed (max) */
} soak_ctx_t;

/* Registrations held now; a window that exists must hold some, or "0 after free" proves nothing. */
static void note_live(soak_ctx_t *ctx)
{
    ofi_pvars_t now;

    ofi_pvars_read(&now);
    if (now.value[OFI_PVAR_REGISTRATIONS_LIVE] > ctx->live_during) {
        ctx->live_during = now.value[OFI_PVAR_REGISTRATIONS_LIVE];
    }
}

static void wrong(soak_ctx_t *ctx, const char *what, long long index, int64_t expect, int64_t got)
{
    if (ctx->wrong++ < 10) {
        fprintf(stderr, "MISMATCH rank %d: %s [%lld]: expected %" PRId64 " got %" PRId64 "\n",
                ctx->rank, what, index, expect, got);
    }
}

static long long share(const soak_ctx_t *ctx, long long total)
{
    return total / ctx->size + (ctx->rank < total % ctx->size ? 1 : 0);
}

/* Fetch-and-add soak on rank 0's counter. Returns elapsed seconds. */
static double soak_fadd(soak_ctx_t *ctx)
{
    const long long n = ctx->opt.total, mine = share(ctx, n);
    const int64_t one = 1;
    int64_t *counter, *fetched = malloc(ctx->opt.batch * sizeof(int64_t)), last = -1;
    size_t words = (size_t)(n + 63) / 64;
    uint64_t *seen = calloc(words, 8), *all = 0 == ctx->rank ? calloc(words, 8) : NULL;
    long long done = 0, ones = 0;
    MPI_Win win;
    double t0, t;

    /* Win_create, not Win_allocate: on one node the latter is served by shared memory */
    counter = calloc(1, sizeof(int64_t));
    MPI_Win_create(counter, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = harness_now();
    MPI_Win_lock_all(0, win);
    while (done < mine) {
        int b = (int)(mine - done < ctx->opt.batch ? mine - done : ctx->opt.batch);
        for (int i = 0; i < b; ++i) {
            MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 0, 0, MPI_SUM, win);
        }
        MPI_Win_flush(0, win);
        for (int i = 0; i < b; ++i) {
            /* this rank's adds are ordered, so its fetched values strictly increase */
            if (fetched[i] <= last || fetched[i] < 0 || fetched[i] >= n) {
                wrong(ctx, "fetched value (must increase, in [0,N))", done + i, last + 1,
                      fetched[i]);
            } else {
                seen[fetched[i] / 64] |= UINT64_C(1) << (fetched[i] % 64);
                last = fetched[i];
            }
        }
        done += b;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    t = harness_now() - t0;
    note_live(ctx);
    if (0 != ctx->rank) {
        ctx->remote_atomics += (unsigned long)mine;
    }
    MPI_Reduce(seen, all, (int)words, MPI_UINT64_T, MPI_BOR, 0, MPI_COMM_WORLD);
    if (0 == ctx->rank) {
        for (size_t w = 0; w < words; ++w) {
            ones += __builtin_popcountll(all[w]);
        }
        if (*counter != n) {
            wrong(ctx, "final counter at rank 0", 0, n, *counter);
        }
        if (ones != n) { /* with each rank's values distinct: some value fetched twice or never */
            wrong(ctx, "distinct fetched values over all ranks", 0, n, ones);
        }
    }
    MPI_Win_free(&win);
    free(counter);
    free(fetched);
    free(seen);
    free(all);
    return t;
}

static int64_t stamp(int origin, int round, int i)
{
    return ((int64_t)origin << 48) ^ ((int64_t)round << 32) ^ (int64_t)i ^ INT64_C(0x5a5a0000);
}

/*
 * K operations in flight before one flush: puts of stamped slots, gets of them, accumulates.
 * Target layout: slot[origin][i] (K per origin), then one SUM counter per origin.
 */
static double soak_outstanding(soak_ctx_t *ctx, unsigned long *ops)
{
    const int k = ctx->opt.outstanding, size = ctx->size;
    const size_t slots = (size_t)size * k;
    int64_t *base = calloc(slots + size, sizeof(int64_t)), *src = malloc(k * sizeof(int64_t)),
            *dst = malloc(k * sizeof(int64_t)), *acc = malloc(k * sizeof(int64_t));
    MPI_Request *reqs = malloc(k * sizeof(MPI_Request));
    int64_t expect_sum = 0;
    MPI_Win win;
    double t0, t;

    MPI_Win_create(base, (MPI_Aint)((slots + size) * sizeof(int64_t)), sizeof(int64_t),
                   MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    t0 = harness_now();
    for (int round = 0; round < ctx->opt.rounds; ++round) {
        MPI_Win_lock_all(0, win);
        for (int i = 0; i < k; ++i) { /* K puts, no flush in between */
            int t = (ctx->rank + i) % size;
            src[i] = stamp(ctx->rank, round, i);
            MPI_Put(&src[i], 1, MPI_INT64_T, t, (MPI_Aint)ctx->rank * k + i, 1, MPI_INT64_T, win);
            ctx->remote_puts += t != ctx->rank;
        }
        MPI_Win_flush_all(win);
        for (int i = 0; i < k; ++i) { /* K gets of what was just put, one wait */
            int t = (ctx->rank + i) % size;
            dst[i] = -1;
            MPI_Rget(&dst[i], 1, MPI_INT64_T, t, (MPI_Aint)ctx->rank * k + i, 1, MPI_INT64_T, win,
                     &reqs[i]);
            ctx->remote_gets += t != ctx->rank;
        }
        MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < k; ++i) {
            if (dst[i] != stamp(ctx->rank, round, i)) {
                wrong(ctx, "Rget of a slot this rank put", i, stamp(ctx->rank, round, i), dst[i]);
            }
        }
        for (int i = 0; i < k; ++i) { /* K accumulates on this origin's counter at each target */
            int t = (ctx->rank + i) % size;
            acc[i] = i + 1;
            MPI_Raccumulate(&acc[i], 1, MPI_INT64_T, t, (MPI_Aint)(slots + ctx->rank), 1,
                            MPI_INT64_T, MPI_SUM, win, &reqs[i]);
            ctx->remote_atomics += t != ctx->rank;
        }
        MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
        MPI_Win_flush_all(win);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        /* the target checks every slot: origin o's slot i was written by o iff (o+i)%size == me */
        for (int o = 0; o < size; ++o) {
            for (int i = 0; i < k; ++i) {
                if ((o + i) % size == ctx->rank && base[(size_t)o * k + i] != stamp(o, round, i)) {
                    wrong(ctx, "slot put by another rank", (long long)o * k + i, stamp(o, round, i),
                          base[(size_t)o * k + i]);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD); /* checks done before the next round writes */
    }
    t = harness_now() - t0;
    note_live(ctx);
    /* counter[o] at target me = rounds * sum of (i+1) over i with (o+i)%size == me */
    for (int o = 0; o < size; ++o) {
        expect_sum = 0;
        for (int i = 0; i < k; ++i) {
            if ((o + i) % size == ctx->rank) {
                expect_sum += i + 1;
            }
        }
        expect_sum *= ctx->opt.rounds;
        if (base[slots + o] != expect_sum) {
            wrong(ctx, "Raccumulate total from origin", o, expect_sum, base[slots + o]);
        }
    }
    *ops = (unsigned long)ctx->opt.rounds * 3 * k;
    MPI_Win_free(&win);
    free(base);
    free(src);
    free(dst);
    free(acc);
    free(reqs);
    return t;
}

static void usage(const void *opts)
{
    (void)opts;
    fprintf(stderr, "usage: osc_soak [-n total_fadd] [-b batch] [-k outstanding] [-r rounds] "
                    "[-m fadd|outstanding|all]\n"
                    "  -n  fetch-and-adds across all ranks (default 10000000)\n"
                    "  -b  fetch-and-adds between flushes (default 64)\n"
                    "  -k  operations outstanding before one flush/wait (default 10000)\n"
                    "  -r  rounds of the outstanding mode (default 5)\n"
                    "  -m  modes to run (default all)\n");
}

static int parse_modes(const char *arg, void *value)
{
    soak_opts_t *o = value;

    o->fadd = 0 == strcmp(arg, "fadd") || 0 == strcmp(arg, "all");
    o->keep = 0 == strcmp(arg, "outstanding") || 0 == strcmp(arg, "all");
    return (o->fadd || o->keep) ? 0 : -1;
}

static int parse_args(int argc, char **argv, void *opts)
{
    soak_opts_t *o = opts;
    const harness_opt_t table[] = {
        HARNESS_ARG('n', HARNESS_OPT_LLONG, &o->total),
        HARNESS_ARG('b', HARNESS_OPT_INT, &o->batch),
        HARNESS_ARG('k', HARNESS_OPT_INT, &o->outstanding),
        HARNESS_ARG('r', HARNESS_OPT_INT, &o->rounds),
        HARNESS_CUSTOM('m', o, parse_modes),
        {0},
    };

    *o = (soak_opts_t){.total = 10000000,
                       .batch = 64,
                       .outstanding = 10000,
                       .rounds = 5,
                       .fadd = true,
                       .keep = true};
    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    return (o->total < 1 || o->batch < 1 || o->outstanding < 1 || o->rounds < 1) ? -1 : 0;
}

static int run(void *arg)
{
    soak_ctx_t *ctx = arg;
    ofi_pvars_t before, after;
    unsigned long d[OFI_PVAR_COUNT], need[3], live, ops = 0, eagain, live_during;
    int present, not_ours = 0;
    long wrong_total;

    ofi_pvars_read(&before);
    if (ctx->opt.fadd) {
        double t = soak_fadd(ctx);
        if (0 == ctx->rank) {
            printf("fadd         %lld fetch-and-adds from %d ranks on one counter: %.2fs, "
                   "%.0f ops/s\n",
                   ctx->opt.total, ctx->size, t, ctx->opt.total / t);
        }
    }
    if (ctx->opt.keep) {
        double t = soak_outstanding(ctx, &ops);
        ops = harness_sum_ul(ops);
        if (0 == ctx->rank) {
            printf("outstanding  %d rounds x (%d puts, %d Rgets, %d Raccumulates) in flight per "
                   "rank before each flush/wait: %.2fs, %.0f ops/s\n",
                   ctx->opt.rounds, ctx->opt.outstanding, ctx->opt.outstanding,
                   ctx->opt.outstanding, t, ops / t);
        }
    }
    ofi_pvars_read(&after);
    /* per rank: every operation to another rank must have been a btl_ofi one */
    present = after.present;
    if (present &&
        (after.value[OFI_PVAR_ATOMICS] - before.value[OFI_PVAR_ATOMICS] < ctx->remote_atomics ||
         after.value[OFI_PVAR_PUTS] - before.value[OFI_PVAR_PUTS] < ctx->remote_puts ||
         after.value[OFI_PVAR_GETS] - before.value[OFI_PVAR_GETS] < ctx->remote_gets)) {
        not_ours = 1;
    }
    not_ours = harness_max_int(not_ours | !present);
    ofi_pvars_delta(&before, &after, d);
    harness_sum_ul_n(d, OFI_PVAR_COUNT);
    need[0] = ctx->remote_puts;
    need[1] = ctx->remote_gets;
    need[2] = ctx->remote_atomics;
    harness_sum_ul_n(need, 3);
    live = harness_sum_ul(after.value[OFI_PVAR_REGISTRATIONS_LIVE]);
    live_during = harness_min_ul(ctx->live_during);
    not_ours |= 0 == live_during;
    eagain = d[OFI_PVAR_POST_EAGAIN];
    wrong_total = harness_sum_long(ctx->wrong);
    if (0 == ctx->rank) {
        printf("btl_ofi (all ranks): puts=%lu (>= %lu remote) gets=%lu (>= %lu remote) "
               "atomics=%lu (>= %lu remote) cq_entries=%lu cq_errors=%lu flushes=%lu "
               "post_eagain=%lu registrations_live while a window existed (min over ranks)=%lu, "
               "after MPI_Win_free=%lu\n",
               d[OFI_PVAR_PUTS], need[0], d[OFI_PVAR_GETS], need[1], d[OFI_PVAR_ATOMICS], need[2],
               d[OFI_PVAR_CQ_ENTRIES], d[OFI_PVAR_CQ_ERRORS], d[OFI_PVAR_FLUSHES], eagain,
               live_during, live);
        if (live) {
            printf("LEAK: btl_ofi_registrations_live is %lu after MPI_Win_free\n", live);
        }
        if (not_ours) {
            printf("NOT CARRIED BY btl-ofi: %s\n",
                   !present           ? "btl_ofi counters absent"
                   : 0 == live_during ? "no btl_ofi registration while a window existed"
                                      : "fewer btl_ofi operations than remote MPI operations");
        }
    }
    return stress_verdict(0 == ctx->rank, wrong_total, live, not_ours);
}

int main(int argc, char **argv)
{
    soak_ctx_t ctx = {0};
    int rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &ctx.size, parse_args,
                          &ctx.opt, usage, HARNESS_EXIT_USAGE);

    return rc ? rc : harness_run(run, &ctx);
}
