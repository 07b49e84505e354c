/*
 * osc_stress: a long seeded random mix of one-sided operations from every rank
 * against every rank, checked exactly against a model of every window.
 *
 * Every rank builds the same plan for each phase from (seed, flavor, epoch,
 * phase), so every rank knows what every window must hold. The plan keeps the
 * outcome decidable:
 *   - put area: each chunk touched in a phase has ONE owner, which puts to
 *     disjoint pieces of it and gets pieces nobody writes in that phase (or
 *     several origins get the whole chunk);
 *   - atomic area: each cell group touched in a phase is either
 *       commute  several origins apply one commutative op (SUM, BXOR, BOR,
 *                BAND, MAX, MIN), so the final value is known;
 *       vector   several origins accumulate count>1 (SUM/BXOR) on a run of cells;
 *       chain    several origins fetch-and-add positive increments: the fetched
 *                values, sorted, must form the exact chain start, +inc, ...;
 *       owner    one origin runs a sequence of fetch_and_op / get_accumulate /
 *                compare_and_swap (hit and miss) / accumulate whose every
 *                fetched value is known (MPI orders them per origin);
 *       claim    several origins compare_and_swap(start -> their value):
 *                exactly one wins and every loser sees the winner's value;
 *       read     origins get a cell nobody writes.
 * Phases end with a fence, an unlock, or flush + barrier (lock_all), then every
 * target compares its whole window (including a guard zone nobody writes) with
 * the model and every origin checks what it fetched.
 *
 * Exit: 0 pass, 1 mismatch (first one printed with seed, rank, target, offset,
 * op, expected, got), 2 the btl_ofi counters show the traffic did not go through
 * btl-ofi, 3 usage. With -r (report only) mismatches are printed and counted but
 * the exit is 0: for fault injection runs where wrong results are expected.
 */

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_core.h"
#include "ofi_pvars.h"
#include "osc_stress_shared.h"

/* ---- windows, epochs, flavors ------------------------------------------------------------- */

static int window_create(stress_ctx_t *ctx)
{
    MPI_Aint base;

    ctx->local = NULL;
    if (FLAVOR_ALLOCATE == ctx->flavor) {
        MPI_Win_allocate((MPI_Aint)ctx->win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &ctx->local,
                         &ctx->win);
        initial_content(ctx, ctx->rank, ctx->local);
        MPI_Barrier(MPI_COMM_WORLD);
        return 0;
    }
    if (posix_memalign((void **)&ctx->local, 64, ctx->win_bytes)) {
        return -1;
    }
    initial_content(ctx, ctx->rank, ctx->local);
    if (FLAVOR_CREATE == ctx->flavor) {
        MPI_Win_create(ctx->local, (MPI_Aint)ctx->win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                       &ctx->win);
        return 0;
    }
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &ctx->win);
    MPI_Win_attach(ctx->win, ctx->local, (MPI_Aint)ctx->win_bytes);
    MPI_Get_address(ctx->local, &base);
    MPI_Allgather(&base, 1, MPI_AINT, ctx->dyn_base, 1, MPI_AINT, MPI_COMM_WORLD);
    return 0;
}

static void window_free(stress_ctx_t *ctx)
{
    if (FLAVOR_DYNAMIC == ctx->flavor) {
        MPI_Win_detach(ctx->win, ctx->local);
    }
    MPI_Win_free(&ctx->win);
    if (FLAVOR_ALLOCATE != ctx->flavor) {
        free(ctx->local);
    }
    ctx->local = NULL;
}

static void ensure_scratch(stress_ctx_t *ctx, size_t need)
{
    if (need > ctx->scratch_cap) {
        free(ctx->scratch);
        ctx->scratch_cap = need + need / 2;
        if (posix_memalign((void **)&ctx->scratch, 64, ctx->scratch_cap)) {
            harness_out_of_memory("osc_stress");
        }
    }
}

/* Runs every epoch on one window flavor. Returns the number of phases with a mismatch. */
static long run_flavor(stress_ctx_t *ctx, stress_plan_t *plan, int *modes, int nmodes)
{
    long bad_phases = 0;

    for (int t = 0; t < ctx->size; ++t) {
        initial_content(ctx, t, model_of(ctx, t));
    }
    window_create(ctx);
    if (ctx->opt.report_only) {
        MPI_Win_set_errhandler(ctx->win, MPI_ERRORS_RETURN);
    }
    for (ctx->epoch = 0; ctx->epoch < ctx->opt.epochs; ++ctx->epoch) {
        ctx->sync = modes[(ctx->epoch + ctx->opt.seed % nmodes) % nmodes];
        if (SYNC_FENCE == ctx->sync) {
            MPI_Win_fence(MPI_MODE_NOPRECEDE, ctx->win);
        } else if (SYNC_LOCK_ALL == ctx->sync) {
            MPI_Win_lock_all(0, ctx->win);
        }
        for (ctx->phase = 0; ctx->phase < ctx->opt.phases; ++ctx->phase) {
            long before = ctx->mismatches, any;
            plan_phase(ctx, plan);
            ensure_scratch(ctx, plan->scratch_need[ctx->rank] + 64);
            run_phase(ctx, plan, ctx->phase + 1 == ctx->opt.phases);
            verify_phase(ctx, plan);
            any = ctx->mismatches - before;
            /* also the barrier between the local checks and the next phase's remote writes */
            MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
            if (any) {
                bad_phases++;
                if (!ctx->opt.report_only) {
                    break;
                }
                /* report-only: the windows are the truth from here on. Each rank copies its
                 * own window before the collective: a peer may leave the collective and
                 * write the next phase into it (a NIC applies that on its own) while this
                 * rank is still in there. */
                memcpy(model_of(ctx, ctx->rank), ctx->local, ctx->win_bytes);
                MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ctx->model,
                              (int)ctx->win_bytes, MPI_BYTE, MPI_COMM_WORLD);
            }
        }
        if (SYNC_LOCK_ALL == ctx->sync) {
            MPI_Win_unlock_all(ctx->win);
        } else if (SYNC_FENCE == ctx->sync && ctx->phase < ctx->opt.phases) {
            MPI_Win_fence(MPI_MODE_NOSUCCEED, ctx->win); /* stopped early: close the epoch */
        }
        if (ctx->opt.verbose && 0 == ctx->rank) {
            printf("  epoch %d %-11s %s\n", ctx->epoch, sync_names[ctx->sync],
                   ctx->phase < ctx->opt.phases ? "stopped" : "done");
        }
        if (bad_phases && !ctx->opt.report_only) {
            break;
        }
    }
    window_free(ctx);
    return bad_phases;
}

static void usage(const void *opts)
{
    (void)opts;
    fprintf(
        stderr,
        "usage: osc_stress [-s seed] [-e epochs] [-p phases] [-c chunks] [-a groups] [-w KiB]\n"
        "                  [-f create,dynamic,allocate] [-m fence,lock_excl,lock_shared,lock_all]\n"
        "                  [-r] [-v]\n"
        "  -s  seed (default: from the clock; always printed)\n"
        "  -e  epochs per window flavor (default 16); sync modes rotate per epoch\n"
        "  -p  phases per epoch (default 3), each verified exactly\n"
        "  -c  put-area chunks touched per target per phase (default 24)\n"
        "  -a  atomic cell groups per target per phase (default 24)\n"
        "  -w  put area per window in KiB (default 128)\n"
        "  -f  window flavors (default create,dynamic; allocate is served by shared memory)\n"
        "  -m  synchronization modes (default all four)\n"
        "  -r  report only: print and count mismatches, exit 0 (fault injection runs)\n"
        "  -v  one line per epoch\n");
}

static int parse_args(int argc, char **argv, void *opts)
{
    stress_opts_t *o = opts;
    const harness_opt_t table[] = {
        HARNESS_ARG('s', HARNESS_OPT_U64, &o->seed),
        HARNESS_ARG('e', HARNESS_OPT_INT, &o->epochs),
        HARNESS_ARG('p', HARNESS_OPT_INT, &o->phases),
        HARNESS_ARG('c', HARNESS_OPT_INT, &o->chunks),
        HARNESS_ARG('a', HARNESS_OPT_INT, &o->groups),
        HARNESS_ARG('w', HARNESS_OPT_KIB, &o->put_area),
        HARNESS_NAMED('f', HARNESS_OPT_PICK, o->flavor_on, flavor_names, FLAVOR_COUNT),
        HARNESS_NAMED('m', HARNESS_OPT_PICK, o->sync_on, sync_names, SYNC_COUNT),
        HARNESS_FLAG('r', &o->report_only, 1),
        HARNESS_FLAG('v', &o->verbose, 1),
        {0},
    };

    *o = (stress_opts_t){.seed = stress_default_seed(),
                         .epochs = 16,
                         .phases = 3,
                         .chunks = 24,
                         .groups = 24,
                         .put_area = 128 * 1024};
    o->flavor_on[FLAVOR_CREATE] = o->flavor_on[FLAVOR_DYNAMIC] = true;
    for (int i = 0; i < SYNC_COUNT; ++i) {
        o->sync_on[i] = true;
    }
    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    if (o->epochs < 1 || o->phases < 1 || o->chunks < 0 || o->groups < 0 || o->put_area < 1) {
        return -1;
    }
    return 0;
}

static int run(void *arg)
{
    stress_ctx_t *ctx = arg;
    stress_plan_t plan = {0};
    int modes[SYNC_COUNT], nmodes = 0, not_ours = 0, leak = 0, present;
    long bad_phases = 0, total_mismatches, mpi_errors;
    unsigned long ops_total;
    unsigned long eagain = 0, cq_err_total = 0;
    ofi_pvars_t end;

    for (int i = 0; i < SYNC_COUNT; ++i) {
        if (ctx->opt.sync_on[i]) {
            modes[nmodes++] = i;
        }
    }
    layout(ctx);
    ctx->model = malloc((size_t)ctx->size * ctx->win_bytes);
    ctx->dyn_base = calloc(ctx->size, sizeof(MPI_Aint));
    plan.scratch_need = calloc(ctx->size, sizeof(size_t));
    if (0 == ctx->rank) {
        printf("osc_stress: seed=%" PRIu64 " ranks=%d epochs=%d phases=%d chunks=%d groups=%d "
               "window=%zu bytes (put area %zu in %zu chunks, %zu atomic cells)\n",
               ctx->opt.seed, ctx->size, ctx->opt.epochs, ctx->opt.phases, ctx->opt.chunks,
               ctx->opt.groups, ctx->win_bytes, ctx->opt.put_area, ctx->nchunks, ctx->ncells);
    }
    for (ctx->flavor = 0; ctx->flavor < FLAVOR_COUNT; ++ctx->flavor) {
        ofi_pvars_t before, after;
        unsigned long d[OFI_PVAR_COUNT], live;
        double t0;
        long bad;

        if (!ctx->opt.flavor_on[ctx->flavor]) {
            continue;
        }
        ctx->ops_issued = 0;
        ofi_pvars_read(&before);
        t0 = harness_now();
        bad = run_flavor(ctx, &plan, modes, nmodes);
        ofi_pvars_read(&after);
        ofi_pvars_delta(&before, &after, d);
        harness_sum_ul_n(d, OFI_PVAR_COUNT);
        live = harness_sum_ul(after.value[OFI_PVAR_REGISTRATIONS_LIVE]);
        ops_total = harness_sum_ul(ctx->ops_issued);
        present = harness_min_int(after.present);
        bad_phases += bad;
        /* allocate windows on one node go through shared memory, not the BTL */
        if (FLAVOR_ALLOCATE != ctx->flavor && (!present || 0 == d[OFI_PVAR_PUTS] ||
                                               0 == d[OFI_PVAR_GETS] || 0 == d[OFI_PVAR_ATOMICS])) {
            not_ours = 1;
        }
        leak |= present && live != 0;
        cq_err_total += d[OFI_PVAR_CQ_ERRORS];
        if (0 == ctx->rank) {
            printf("flavor %-8s %s  %lu ops in %.2fs | btl_ofi puts=%lu gets=%lu atomics=%lu "
                   "emulated=%lu cq_entries=%lu cq_errors=%lu flushes=%lu refused=%lu "
                   "registrations_live after Win_free=%lu local_puts=%lu stripes=%lu%s\n",
                   flavor_names[ctx->flavor], bad ? "MISMATCH" : "exact   ", ops_total,
                   harness_now() - t0, d[OFI_PVAR_PUTS], d[OFI_PVAR_GETS], d[OFI_PVAR_ATOMICS],
                   d[OFI_PVAR_ATOMICS_EMULATED], d[OFI_PVAR_CQ_ENTRIES], d[OFI_PVAR_CQ_ERRORS],
                   d[OFI_PVAR_FLUSHES], d[OFI_PVAR_REFUSED], live, d[OFI_PVAR_LOCAL_PUTS],
                   d[OFI_PVAR_STRIPES],
                   present ? "" : " (btl_ofi counters ABSENT)");
        }
        if (bad && !ctx->opt.report_only) {
            break;
        }
    }
    ofi_pvars_read(&end);
    eagain = harness_sum_ul(end.value[OFI_PVAR_INJECTED]);
    mpi_errors = harness_sum_long(ctx->mpi_errors);
    total_mismatches = harness_sum_long(ctx->mismatches);
    if (0 == ctx->rank) {
        if (leak) {
            printf("LEAK: btl_ofi_registrations_live is not 0 after MPI_Win_free\n");
        }
        if (not_ours) {
            printf("NOT CARRIED BY btl-ofi: its put/get/atomic counters did not all move\n");
        }
        printf("RESULT %s seed=%" PRIu64 " mismatches=%ld bad_phases=%ld mpi_errors=%ld "
               "cq_errors=%lu injected=%lu report_only=%d\n",
               (bad_phases || leak) ? (ctx->opt.report_only && !leak ? "REPORTED" : "FAILED")
               : not_ours           ? "WRONG_PATH"
                                    : "PASSED",
               ctx->opt.seed, total_mismatches, bad_phases, mpi_errors, cq_err_total, eagain,
               ctx->opt.report_only);
    }
    free(plan.ops);
    free(plan.groups);
    free(plan.scratch_need);
    free(ctx->model);
    free(ctx->dyn_base);
    free(ctx->scratch);
    free(ctx->rec_local);
    free(ctx->rec_all);
    free(ctx->chunk_off);
    free(ctx->chunk_len);
    if (leak || ((bad_phases || mpi_errors) && !ctx->opt.report_only)) {
        return HARNESS_EXIT_FAIL;
    }
    return not_ours ? HARNESS_EXIT_NOT_OURS : HARNESS_EXIT_PASS;
}

int main(int argc, char **argv)
{
    stress_ctx_t ctx = {0};
    int rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &ctx.size, parse_args,
                          &ctx.opt, usage, HARNESS_EXIT_USAGE);

    if (rc) {
        return rc;
    }
    /* every rank must replay the same plan: rank 0's seed wins */
    MPI_Bcast(&ctx.opt.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return harness_run(run, &ctx);
}
