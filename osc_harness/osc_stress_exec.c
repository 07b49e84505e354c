/* osc_stress: issuing this rank's part of a phase's plan (see osc_stress_shared.h). */
#include "osc_stress_shared.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report-only runs set MPI_ERRORS_RETURN on the window: an RMA error is counted, not fatal. */
static void mpi_rc(stress_ctx_t *ctx, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_SUCCESS == rc) {
        return;
    }
    if (ctx->mpi_errors++ < MAX_REPORTS) {
        MPI_Error_string(rc, text, &len);
        fprintf(stderr,
                "MPI ERROR seed=%" PRIu64 " flavor=%s epoch=%d phase=%d sync=%s: rank %d %s "
                "returned %d (%s)\n",
                ctx->opt.seed, flavor_names[ctx->flavor], ctx->epoch, ctx->phase,
                sync_names[ctx->sync], ctx->rank, call, rc, text);
    }
}

static MPI_Aint target_disp(const stress_ctx_t *ctx, int target, size_t off)
{
    return FLAVOR_DYNAMIC == ctx->flavor ? ctx->dyn_base[target] + (MPI_Aint)off : (MPI_Aint)off;
}

/* One op of the plan: with a request (MPI_Rput, ...) when the plan says so, else without. */
static void issue(stress_ctx_t *ctx, const stress_op_t *op, MPI_Request *reqs, int *nreq)
{
    unsigned char *src = ctx->scratch + op->src, *res = ctx->scratch + op->res;
    const MPI_Aint disp = target_disp(ctx, op->target, op->off);
    const MPI_Datatype dt = dt_handle(op->dt);
    const MPI_Op mop = mop_handle(op->mop);
    const int len = (int)op->len, t = op->target, n = op->count;
    MPI_Request *req = op->use_req ? &reqs[(*nreq)++] : NULL;
    MPI_Win win = ctx->win;

    ++ctx->ops_issued;
    switch (op->kind) {
    case OP_PUT:
        put_content(ctx, op, src, op->len);
        mpi_rc(ctx, req ? "MPI_Rput" : "MPI_Put",
               req ? MPI_Rput(src, len, MPI_BYTE, t, disp, len, MPI_BYTE, win, req)
                   : MPI_Put(src, len, MPI_BYTE, t, disp, len, MPI_BYTE, win));
        break;
    case OP_GET:
        memset(res, 0xa5, op->len);
        mpi_rc(ctx, req ? "MPI_Rget" : "MPI_Get",
               req ? MPI_Rget(res, len, MPI_BYTE, t, disp, len, MPI_BYTE, win, req)
                   : MPI_Get(res, len, MPI_BYTE, t, disp, len, MPI_BYTE, win));
        break;
    case OP_PUT_VEC: {
        MPI_Datatype vec;
        put_content(ctx, op, src, (size_t)n * 8);
        MPI_Type_vector(n, 8, 16, MPI_BYTE, &vec);
        MPI_Type_commit(&vec);
        mpi_rc(ctx, "MPI_Put", MPI_Put(src, n * 8, MPI_BYTE, t, disp, 1, vec, win));
        MPI_Type_free(&vec);
        break;
    }
    case OP_ACC:
        if (n > 1) {
            for (int c = 0; c < n; ++c) {
                store_elem(src + (size_t)c * 8, DT_I64, vector_operand(ctx, op, c));
            }
        } else {
            store_elem(src, op->dt, op->operand);
        }
        mpi_rc(ctx, req ? "MPI_Raccumulate" : "MPI_Accumulate",
               req ? MPI_Raccumulate(src, n, dt, t, disp, n, dt, mop, win, req)
                   : MPI_Accumulate(src, n, dt, t, disp, n, dt, mop, win));
        break;
    case OP_GACC:
        store_elem(src, op->dt, op->operand);
        mpi_rc(ctx, req ? "MPI_Rget_accumulate" : "MPI_Get_accumulate",
               req ? MPI_Rget_accumulate(src, 1, dt, res, 1, dt, t, disp, 1, dt, mop, win, req)
                   : MPI_Get_accumulate(src, 1, dt, res, 1, dt, t, disp, 1, dt, mop, win));
        break;
    case OP_FOP:
        store_elem(src, op->dt, op->operand);
        mpi_rc(ctx, "MPI_Fetch_and_op", MPI_Fetch_and_op(src, res, dt, t, disp, mop, win));
        break;
    default:
        store_elem(src, op->dt, op->operand);
        store_elem(src + 8, op->dt, op->compare);
        mpi_rc(ctx, "MPI_Compare_and_swap",
               MPI_Compare_and_swap(src, src + 8, res, dt, t, disp, win));
        break;
    }
}

/*
 * This rank's ops in a random interleaving of its groups; within a group the plan
 * order is kept (owner sequences depend on it).
 */
static size_t exec_order(stress_ctx_t *ctx, const stress_plan_t *plan, size_t *order)
{
    stress_rng_t rng;
    size_t n = 0, ngroups = 0, *cursor = malloc(plan->ngroups * sizeof(size_t)),
           *gid = malloc(plan->ngroups * sizeof(size_t));

    stress_rng_seed(&rng, ctx->opt.seed, ctx->flavor, (uint64_t)ctx->epoch * 1000 + ctx->phase,
                    1000 + ctx->rank);
    for (size_t g = 0; g < plan->ngroups; ++g) {
        gid[ngroups] = g;
        cursor[ngroups] = plan->groups[g].first_op;
        ngroups++;
    }
    while (ngroups) {
        size_t k = stress_rng_below(&rng, ngroups), g = gid[k];
        size_t end = plan->groups[g].first_op + plan->groups[g].nops;
        while (cursor[k] < end && plan->ops[cursor[k]].origin != ctx->rank) {
            cursor[k]++;
        }
        if (cursor[k] < end) {
            order[n++] = cursor[k]++;
        } else {
            gid[k] = gid[--ngroups];
            cursor[k] = cursor[ngroups];
        }
    }
    free(cursor);
    free(gid);
    return n;
}

static void shuffle_ints(stress_rng_t *rng, int *v, int n)
{
    for (int i = n - 1; i > 0; --i) {
        int j = (int)stress_rng_below(rng, (uint64_t)i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

void run_phase(stress_ctx_t *ctx, const stress_plan_t *plan, bool last_phase)
{
    size_t *order = malloc((plan->nops + 1) * sizeof(size_t)), n = exec_order(ctx, plan, order);
    MPI_Request *reqs = malloc((n + 1) * sizeof(MPI_Request));
    int nreq = 0, *targets = malloc(ctx->size * sizeof(int));
    stress_rng_t rng;

    stress_rng_seed(&rng, ctx->opt.seed ^ 0x5eed, ctx->flavor,
                    (uint64_t)ctx->epoch * 1000 + ctx->phase, ctx->rank);
    if (SYNC_FENCE == ctx->sync) {
        for (size_t i = 0; i < n; ++i) {
            issue(ctx, &plan->ops[order[i]], reqs, &nreq);
        }
        mpi_rc(ctx, "MPI_Win_fence", MPI_Win_fence(last_phase ? MPI_MODE_NOSUCCEED : 0, ctx->win));
    } else if (SYNC_LOCK_ALL == ctx->sync) {
        for (size_t i = 0; i < n; ++i) {
            const stress_op_t *op = &plan->ops[order[i]];
            issue(ctx, op, reqs, &nreq);
            if (0 == stress_rng_below(&rng, 50)) { /* an extra flush mid-phase */
                mpi_rc(ctx, "MPI_Win_flush", MPI_Win_flush(op->target, ctx->win));
            }
        }
        mpi_rc(ctx, "MPI_Waitall", MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        if (stress_rng_below(&rng, 2)) {
            mpi_rc(ctx, "MPI_Win_flush_all", MPI_Win_flush_all(ctx->win));
        } else {
            for (int t = 0; t < ctx->size; ++t) {
                mpi_rc(ctx, "MPI_Win_flush", MPI_Win_flush(t, ctx->win));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        int lock = SYNC_LOCK_EXCL == ctx->sync ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
        for (int t = 0; t < ctx->size; ++t) {
            targets[t] = t;
        }
        shuffle_ints(&rng, targets, ctx->size);
        for (int k = 0; k < ctx->size; ++k) {
            int t = targets[k];
            mpi_rc(ctx, "MPI_Win_lock", MPI_Win_lock(lock, t, 0, ctx->win));
            for (size_t i = 0; i < n; ++i) {
                if (plan->ops[order[i]].target == t) {
                    issue(ctx, &plan->ops[order[i]], reqs, &nreq);
                    if (0 == stress_rng_below(&rng, 50)) {
                        mpi_rc(ctx, "MPI_Win_flush", MPI_Win_flush(t, ctx->win));
                    }
                }
            }
            mpi_rc(ctx, "MPI_Waitall", MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
            nreq = 0;
            mpi_rc(ctx, "MPI_Win_unlock", MPI_Win_unlock(t, ctx->win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(order);
    free(reqs);
    free(targets);
}
