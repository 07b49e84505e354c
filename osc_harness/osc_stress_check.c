/* osc_stress: the checker, windows and fetched values against the model (osc_stress_shared.h). */
#include "osc_stress_shared.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(stress_ctx_t *ctx, int target, size_t off, const stress_op_t *op,
                   const char *what, const char *expected, const char *got)
{
    ctx->mismatches++;
    if (ctx->reports++ >= MAX_REPORTS) {
        return;
    }
    fprintf(stderr,
            "MISMATCH seed=%" PRIu64 " flavor=%s epoch=%d phase=%d sync=%s: rank %d target %d "
            "offset %zu op %s%s%s%s%s%s%s origin %d group %s: %s: expected %s got %s\n",
            ctx->opt.seed, flavor_names[ctx->flavor], ctx->epoch, ctx->phase, sync_names[ctx->sync],
            ctx->rank, target, off, op ? (op->use_req ? "r" : "") : "",
            op ? kind_names[op->kind] : "none", op && op->kind >= OP_ACC ? "(" : "",
            op && op->kind >= OP_ACC ? mop_names[op->mop] : "", op && op->kind >= OP_ACC ? "," : "",
            op && op->kind >= OP_ACC ? dt_names[op->dt] : "", op && op->kind >= OP_ACC ? ")" : "",
            op ? op->origin : -1,
            op && ctx->cur_plan ? group_names[ctx->cur_plan->groups[op->group].mode] : "-", what,
            expected, got);
}

static void hex_bytes(char *out, size_t n, const unsigned char *p, size_t len)
{
    size_t w = 0;

    for (size_t i = 0; i < len && w + 3 < n; ++i) {
        w += (size_t)snprintf(out + w, n - w, "%02x", p[i]);
    }
}

/* The op of this phase that wrote `off` of `target`'s window, if any. */
static const stress_op_t *writer_of(const stress_plan_t *plan, int target, size_t off)
{
    for (size_t i = 0; i < plan->nops; ++i) {
        const stress_op_t *op = &plan->ops[i];
        if (op->target == target && OP_GET != op->kind && off >= op->off &&
            off < op->off + op->len) {
            return op;
        }
    }
    return NULL;
}

static void verify_bytes(stress_ctx_t *ctx, const stress_plan_t *plan, int target,
                         const unsigned char *expect, const unsigned char *got, size_t base,
                         size_t len, const stress_op_t *reader)
{
    char e[40], g[40];
    size_t i, n;

    if (0 == memcmp(expect, got, len)) {
        return;
    }
    for (i = 0; i < len && expect[i] == got[i]; ++i) {
    }
    n = len - i < 8 ? len - i : 8;
    hex_bytes(e, sizeof(e), expect + i, n);
    hex_bytes(g, sizeof(g), got + i, n);
    if (reader) {
        report(ctx, target, base + i, reader, "fetched bytes", e, g);
    } else {
        const stress_op_t *w = writer_of(plan, target, base + i);
        report(ctx, target, base + i, w,
               base + i >= ctx->win_bytes - GUARD_BYTES ? "guard zone (nobody writes it)"
               : w                                      ? "window bytes after the phase"
                                                        : "window bytes not written in this phase",
               e, g);
    }
}

static void verify_origin(stress_ctx_t *ctx, const stress_plan_t *plan)
{
    for (size_t i = 0; i < plan->nops; ++i) {
        const stress_op_t *op = &plan->ops[i];
        const unsigned char *res = ctx->scratch + op->res;

        if (op->origin != ctx->rank) {
            continue;
        }
        if (CHECK_RECORD == op->check) {
            ctx->rec_local[op->rec] = load_elem(res, op->dt);
        } else if (CHECK_EXACT == op->check && OP_GET == op->kind) {
            verify_bytes(ctx, plan, op->target, model_of(ctx, op->target) + op->off, res, op->off,
                         op->len, op);
        } else if (CHECK_EXACT == op->check && load_elem(res, op->dt) != op->expect) {
            char e[64], g[64];
            format_elem(e, sizeof(e), op->dt, op->expect);
            format_elem(g, sizeof(g), op->dt, load_elem(res, op->dt));
            report(ctx, op->target, op->off, op, "fetched value", e, g);
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Fetch-add chain: (fetched - start) sorted must be 0, inc0, inc0+inc1, ... in fetch order. */
static void verify_chain(stress_ctx_t *ctx, const stress_plan_t *plan, const stress_group_t *g)
{
    uint64_t mask = DT_I32 == g->dt ? 0xffffffffULL : ~0ULL, (*pairs)[2] = calloc(g->nops, 16),
             expect = 0;
    char e[64], gbuf[64];

    for (int i = 0; i < g->nops; ++i) {
        const stress_op_t *op = &plan->ops[g->first_op + i];
        pairs[i][0] = ((uint64_t)ctx->rec_all[op->rec] - (uint64_t)g->start) & mask;
        pairs[i][1] = (uint64_t)op->operand;
    }
    qsort(pairs, g->nops, 16, cmp_u64);
    for (int i = 0; i < g->nops; ++i) {
        if (pairs[i][0] != expect) {
            format_elem(e, sizeof(e), g->dt, (int64_t)((uint64_t)g->start + expect));
            format_elem(gbuf, sizeof(gbuf), g->dt, (int64_t)((uint64_t)g->start + pairs[i][0]));
            report(ctx, g->target, g->off, &plan->ops[g->first_op],
                   "fetch-add chain (sorted fetched values)", e, gbuf);
            break;
        }
        expect += pairs[i][1];
    }
    free(pairs);
}

/* CAS claim: exactly one origin saw the start value; every other one saw the winner's value. */
static int claim_winner(stress_ctx_t *ctx, const stress_plan_t *plan, const stress_group_t *g,
                        bool report_it)
{
    int winner = -1, winners = 0;
    char e[64], gbuf[64];

    for (int i = 0; i < g->nops; ++i) {
        if (ctx->rec_all[plan->ops[g->first_op + i].rec] == g->start) {
            winner = g->first_op + i;
            winners++;
        }
    }
    if (1 != winners) {
        if (report_it) {
            snprintf(e, sizeof(e), "1 winner");
            snprintf(gbuf, sizeof(gbuf), "%d winners", winners);
            report(ctx, g->target, g->off, &plan->ops[g->first_op], "compare_and_swap claim", e,
                   gbuf);
        }
        return -1;
    }
    for (int i = 0; i < g->nops && report_it; ++i) {
        const stress_op_t *op = &plan->ops[g->first_op + i];
        if (g->first_op + i != winner && ctx->rec_all[op->rec] != plan->ops[winner].operand) {
            format_elem(e, sizeof(e), g->dt, plan->ops[winner].operand);
            format_elem(gbuf, sizeof(gbuf), g->dt, ctx->rec_all[op->rec]);
            report(ctx, g->target, g->off, op, "losing compare_and_swap fetched", e, gbuf);
            break;
        }
    }
    return winner;
}

void verify_phase(stress_ctx_t *ctx, const stress_plan_t *plan)
{
    if (plan->nrec > ctx->rec_cap) {
        ctx->rec_cap = plan->nrec;
        ctx->rec_local = realloc(ctx->rec_local, ctx->rec_cap * sizeof(int64_t));
        ctx->rec_all = realloc(ctx->rec_all, ctx->rec_cap * sizeof(int64_t));
    }
    memset(ctx->rec_local, 0, plan->nrec * sizeof(int64_t));
    ctx->cur_plan = plan;
    verify_origin(ctx, plan);
    if (plan->nrec) {
        MPI_Allreduce(ctx->rec_local, ctx->rec_all, plan->nrec, MPI_INT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
    }
    for (size_t i = 0; i < plan->ngroups; ++i) {
        const stress_group_t *g = &plan->groups[i];
        bool mine = g->target == ctx->rank;

        if (G_CHAIN == g->mode && mine) {
            verify_chain(ctx, plan, g);
        } else if (G_CLAIM == g->mode) {
            int winner = claim_winner(ctx, plan, g, mine);
            if (winner >= 0) { /* every rank learns the winner: the model follows it */
                store_elem(model_of(ctx, g->target) + g->off, g->dt, plan->ops[winner].operand);
            }
        }
    }
    verify_bytes(ctx, plan, ctx->rank, model_of(ctx, ctx->rank), ctx->local, 0, ctx->win_bytes,
                 NULL);
}
