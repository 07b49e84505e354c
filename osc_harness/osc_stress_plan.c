/* osc_stress: the generators of a phase's plan (see osc_stress_shared.h). */
#include "osc_stress_shared.h"

#include <stdlib.h>
#include <string.h>

/* An array with room for one more element than n: twice the capacity (first at first). */
static void *grow(void *array, size_t n, size_t *cap, size_t first, size_t elem)
{
    if (n < *cap) {
        return array;
    }
    *cap = *cap ? 2 * *cap : first;
    return harness_realloc("osc_stress", array, *cap * elem);
}

static stress_op_t *plan_add_op(stress_plan_t *plan, int kind, int origin, int target)
{
    stress_op_t *op;

    plan->ops = grow(plan->ops, plan->nops, &plan->cap_ops, 256, sizeof(*plan->ops));
    op = &plan->ops[plan->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->origin = origin;
    op->target = target;
    op->rec = -1;
    op->group = (int)plan->ngroups - 1;
    op->tag = plan->nops;
    plan->groups[plan->ngroups - 1].nops++;
    return op;
}

static stress_group_t *plan_add_group(stress_plan_t *plan, int mode, int target, size_t off, int dt)
{
    stress_group_t *g;

    plan->groups = grow(plan->groups, plan->ngroups, &plan->cap_groups, 64, sizeof(*plan->groups));
    g = &plan->groups[plan->ngroups++];
    *g = (stress_group_t){
        .mode = mode, .target = target, .off = off, .dt = dt, .first_op = (int)plan->nops};
    return g;
}

/* Scratch space at the origin, 8-byte aligned: every rank computes every origin's layout. */
static size_t scratch_take(stress_plan_t *plan, int origin, size_t bytes)
{
    size_t at = plan->scratch_need[origin];

    plan->scratch_need[origin] += (bytes + 7) & ~(size_t)7;
    return at;
}

static int64_t random_operand(stress_rng_t *rng, int dt, int mop)
{
    uint64_t r = stress_rng_next(rng);

    if (DT_F64 == dt) {
        return f64_bits((double)((int64_t)(r % 2000001) - 1000000));
    }
    switch (mop) {
    case MOP_SUM:
        return DT_I32 == dt ? (int64_t)(r % 2000001) - 1000000
                            : (int64_t)(r >> 23) - (INT64_C(1) << 40);
    case MOP_MAX:
    case MOP_MIN:
        return DT_I32 == dt ? (int64_t)(int32_t)r : (int64_t)(r >> 16) - (INT64_C(1) << 47);
    default:
        return DT_I32 == dt ? (int64_t)(int32_t)r : (int64_t)r;
    }
}

static int pick_origin(stress_rng_t *rng, const stress_ctx_t *ctx)
{
    return (int)stress_rng_below(rng, ctx->size);
}

static bool passive(const stress_ctx_t *ctx)
{
    return SYNC_FENCE != ctx->sync;
}

/* One put-area chunk: one owner writes disjoint pieces and reads what nobody writes. */
static void plan_chunk(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, int target,
                       size_t chunk)
{
    size_t off = ctx->chunk_off[chunk], len = ctx->chunk_len[chunk];
    int owner = pick_origin(rng, ctx), action = (int)stress_rng_below(rng, 5);
    unsigned char *model = model_of(ctx, target);
    stress_op_t *op;

    plan_add_group(plan, G_CHUNK, target, off, DT_I64);
    if (0 == action || len < 2) { /* one put of the whole chunk */
        op = plan_add_op(plan, OP_PUT, owner, target);
        op->off = off;
        op->len = len;
    } else if (1 == action) { /* split into pieces, each its own put */
        size_t pieces = 2 + stress_rng_below(rng, 7), at = off, end = off + len;
        for (size_t p = 0; p < pieces && at < end; ++p) {
            size_t n = (p + 1 == pieces) ? end - at : 1 + stress_rng_below(rng, end - at);
            op = plan_add_op(plan, OP_PUT, owner, target);
            op->off = at;
            op->len = n;
            at += n;
        }
    } else if (2 == action) { /* put the tail, get the head */
        size_t cut = 1 + stress_rng_below(rng, len - 1);
        op = plan_add_op(plan, OP_PUT, owner, target);
        op->off = off + cut;
        op->len = len - cut;
        op = plan_add_op(plan, OP_GET, owner, target);
        op->off = off;
        op->len = cut;
    } else if (3 == action) { /* several readers, nobody writes */
        int readers = 1 + (int)stress_rng_below(rng, 3);
        for (int r = 0; r < readers; ++r) {
            op = plan_add_op(plan, OP_GET, r ? pick_origin(rng, ctx) : owner, target);
            op->off = off;
            op->len = len;
        }
    } else { /* strided target: 8-byte blocks every 16 bytes */
        size_t blocks = (len + 8) / 16;
        if (0 == blocks) {
            blocks = 1;
        }
        if ((blocks - 1) * 16 + 8 > len) {
            blocks = 0;
        }
        op = plan_add_op(plan, blocks ? OP_PUT_VEC : OP_PUT, owner, target);
        op->off = off;
        op->count = (int)blocks;
        op->len = blocks ? (blocks - 1) * 16 + 8 : len;
    }
    for (int i = plan->groups[plan->ngroups - 1].first_op; i < (int)plan->nops; ++i) {
        op = &plan->ops[i];
        op->use_req = passive(ctx) && stress_rng_below(rng, 3) == 0;
        if (OP_GET == op->kind) {
            op->res = scratch_take(plan, op->origin, op->len);
            op->check = CHECK_EXACT;
        } else if (OP_PUT == op->kind) {
            op->src = scratch_take(plan, op->origin, op->len);
            put_content(ctx, op, model + op->off, op->len);
        } else {
            unsigned char *packed = malloc((size_t)op->count * 8);
            op->src = scratch_take(plan, op->origin, (size_t)op->count * 8);
            put_content(ctx, op, packed, (size_t)op->count * 8);
            for (int b = 0; b < op->count; ++b) {
                memcpy(model + op->off + (size_t)b * 16, packed + (size_t)b * 8, 8);
            }
            free(packed);
            op->use_req = 0; /* the vector put has a derived target type; keep it blocking-free */
        }
    }
}

/* A single-element atomic op on a cell, its operand/result scratch reserved at the origin. */
static stress_op_t *atomic_op(stress_plan_t *plan, int kind, int origin, const stress_group_t *g,
                              int mop, int64_t operand)
{
    stress_op_t *op = plan_add_op(plan, kind, origin, g->target);

    op->dt = g->dt;
    op->mop = mop;
    op->count = 1;
    op->off = g->off;
    op->len = dt_sizes[g->dt];
    op->operand = operand;
    op->src = scratch_take(plan, origin, 16); /* operand, compare */
    op->res = scratch_take(plan, origin, 8);
    return op;
}

static void plan_commute(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng,
                         stress_group_t *g, unsigned char *cell)
{
    static const int int_ops[] = {MOP_SUM, MOP_BXOR, MOP_BOR, MOP_BAND, MOP_MAX, MOP_MIN};
    static const int f64_ops[] = {MOP_SUM, MOP_MAX, MOP_MIN};
    int mop =
        DT_F64 == g->dt ? f64_ops[stress_rng_below(rng, 3)] : int_ops[stress_rng_below(rng, 6)];
    int n = 2 + (int)stress_rng_below(rng, 6);
    int64_t v = load_elem(cell, g->dt);

    for (int i = 0; i < n; ++i) {
        int kind = stress_rng_below(rng, 4) ? OP_ACC : OP_GACC;
        stress_op_t *op =
            atomic_op(plan, kind, pick_origin(rng, ctx), g, mop, random_operand(rng, g->dt, mop));
        op->use_req = passive(ctx) && stress_rng_below(rng, 3) == 0;
        v = apply_op(g->dt, mop, v, op->operand);
    }
    store_elem(cell, g->dt, v);
}

static void plan_vector(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng,
                        stress_group_t *g, int cells, unsigned char *base)
{
    int mop = stress_rng_below(rng, 2) ? MOP_SUM : MOP_BXOR, n = 2 + (int)stress_rng_below(rng, 3);

    for (int i = 0; i < n; ++i) {
        stress_op_t *op = plan_add_op(plan, OP_ACC, pick_origin(rng, ctx), g->target);
        op->dt = DT_I64;
        op->mop = mop;
        op->count = cells;
        op->off = g->off;
        op->len = (size_t)cells * CELL;
        op->src = scratch_take(plan, op->origin, op->len);
        op->use_req = passive(ctx) && stress_rng_below(rng, 3) == 0;
        for (int c = 0; c < cells; ++c) {
            unsigned char *p = base + (size_t)c * CELL;
            store_elem(p, DT_I64,
                       apply_op(DT_I64, mop, load_elem(p, DT_I64), vector_operand(ctx, op, c)));
        }
    }
}

static void plan_chain(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, stress_group_t *g,
                       unsigned char *cell)
{
    int n = 2 + (int)stress_rng_below(rng, 7);
    int64_t v = g->start;

    for (int i = 0; i < n; ++i) {
        int kind = stress_rng_below(rng, 3) ? OP_FOP : OP_GACC;
        stress_op_t *op = atomic_op(plan, kind, pick_origin(rng, ctx), g, MOP_SUM,
                                    1 + (int64_t)stress_rng_below(rng, 1000));
        op->use_req = OP_GACC == kind && passive(ctx) && stress_rng_below(rng, 2) == 0;
        op->check = CHECK_RECORD;
        op->rec = plan->nrec++;
        v = apply_op(g->dt, MOP_SUM, v, op->operand);
    }
    store_elem(cell, g->dt, v);
}

/* One origin, a sequence whose every fetched value is known: MPI orders accumulates per origin. */
static void plan_owner(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, stress_group_t *g,
                       unsigned char *cell)
{
    int owner = pick_origin(rng, ctx), n = 2 + (int)stress_rng_below(rng, 6);
    int64_t v = g->start;

    for (int i = 0; i < n; ++i) {
        int pick = (int)stress_rng_below(rng, DT_F64 == g->dt ? 6 : 8);
        int kind = (pick < 3) ? OP_FOP : (pick < 4 ? OP_GACC : (pick < 6 ? OP_ACC : OP_CAS));
        int mop = (0 == pick || 3 == pick || 4 == pick)
                      ? MOP_SUM
                      : (1 == pick || 5 == pick ? MOP_REPLACE : MOP_NO_OP);
        stress_op_t *op = atomic_op(plan, kind, owner, g, mop, random_operand(rng, g->dt, MOP_SUM));

        if (OP_CAS == kind) {
            /* pick 6 hits (compare == current), pick 7 misses (compare != current) */
            op->compare =
                6 == pick ? v : apply_op(g->dt, MOP_SUM, v, 1 + (int64_t)stress_rng_below(rng, 99));
            op->expect = v;
            if (op->compare == v) {
                v = op->operand;
            }
        } else {
            op->expect = v;
            v = apply_op(g->dt, mop, v, op->operand);
        }
        op->check = OP_ACC == kind ? CHECK_NONE : CHECK_EXACT;
        op->use_req =
            (OP_ACC == kind || OP_GACC == kind) && passive(ctx) && stress_rng_below(rng, 3) == 0;
    }
    store_elem(cell, g->dt, v);
}

static void plan_claim(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, stress_group_t *g)
{
    int first = pick_origin(rng, ctx), n = 2 + (int)stress_rng_below(rng, ctx->size);

    if (n > ctx->size) {
        n = ctx->size;
    }
    for (int i = 0; i < n; ++i) { /* distinct origins */
        int origin = (first + i) % ctx->size;
        stress_op_t *op = atomic_op(plan, OP_CAS, origin, g, MOP_REPLACE,
                                    apply_op(g->dt, MOP_SUM, g->start, 1 + origin));
        op->compare = g->start;
        op->check = CHECK_RECORD;
        op->rec = plan->nrec++;
    }
    /* the model's cell is set once the winner is known (apply_claims) */
}

static void plan_read(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, stress_group_t *g)
{
    int n = 1 + (int)stress_rng_below(rng, 3);

    for (int i = 0; i < n; ++i) {
        stress_op_t *op = plan_add_op(plan, OP_GET, pick_origin(rng, ctx), g->target);
        op->off = g->off;
        op->len = CELL;
        op->res = scratch_take(plan, op->origin, CELL);
        op->check = CHECK_EXACT;
        op->use_req = passive(ctx) && stress_rng_below(rng, 3) == 0;
    }
}

/* Finds `cells` free consecutive cells in [lo, hi); -1 if a few random tries fail. */
static long find_cells(stress_rng_t *rng, unsigned char *used, size_t lo, size_t hi, int cells)
{
    if (hi - lo < (size_t)cells) {
        return -1;
    }
    for (int tries = 0; tries < 8; ++tries) {
        size_t at = lo + stress_rng_below(rng, hi - lo - (size_t)cells + 1);
        bool free_run = true;
        for (int c = 0; c < cells; ++c) {
            free_run = free_run && !used[at + (size_t)c];
        }
        if (free_run) {
            memset(used + at, 1, (size_t)cells);
            return (long)at;
        }
    }
    return -1;
}

static void plan_atomics(stress_ctx_t *ctx, stress_plan_t *plan, stress_rng_t *rng, int target,
                         unsigned char *used)
{
    unsigned char *model = model_of(ctx, target);

    for (int i = 0; i < ctx->opt.groups; ++i) {
        int r = (int)stress_rng_below(rng, 100), mode, cells = 1, dt;
        bool dbl;
        long cell;
        stress_group_t *g;

        mode = r < 28   ? G_COMMUTE
               : r < 38 ? G_VECTOR
               : r < 58 ? G_CHAIN
               : r < 83 ? G_OWNER
               : r < 93 ? G_CLAIM
                        : G_READ;
        dbl = (G_COMMUTE == mode || G_OWNER == mode || G_READ == mode) &&
              stress_rng_below(rng, 4) == 0;
        if (G_VECTOR == mode) {
            cells = 2 + (int)stress_rng_below(rng, 7);
        }
        cell = dbl ? find_cells(rng, used, ctx->nint_cells, ctx->ncells, 1)
                   : find_cells(rng, used, 0, ctx->nint_cells, cells);
        if (cell < 0) {
            continue;
        }
        dt = dbl ? DT_F64
                 : ((G_VECTOR == mode || G_CLAIM == mode || stress_rng_below(rng, 3)) ? DT_I64
                                                                                      : DT_I32);
        g = plan_add_group(plan, mode, target, ctx->atom_off + (size_t)cell * CELL, dt);
        g->start = load_elem(model + g->off, dt);
        switch (mode) {
        case G_COMMUTE:
            plan_commute(ctx, plan, rng, g, model + g->off);
            break;
        case G_VECTOR:
            plan_vector(ctx, plan, rng, g, cells, model + g->off);
            break;
        case G_CHAIN:
            plan_chain(ctx, plan, rng, g, model + g->off);
            break;
        case G_OWNER:
            plan_owner(ctx, plan, rng, g, model + g->off);
            break;
        case G_CLAIM:
            plan_claim(ctx, plan, rng, g);
            break;
        default:
            plan_read(ctx, plan, rng, g);
            break;
        }
    }
}

void plan_phase(stress_ctx_t *ctx, stress_plan_t *plan)
{
    stress_rng_t rng;
    unsigned char *used = malloc(ctx->nchunks > ctx->ncells ? ctx->nchunks : ctx->ncells);

    plan->nops = plan->ngroups = 0;
    plan->nrec = 0;
    memset(plan->scratch_need, 0, ctx->size * sizeof(size_t));
    stress_rng_seed(&rng, ctx->opt.seed, ctx->flavor, ctx->epoch, ctx->phase);
    for (int t = 0; t < ctx->size; ++t) {
        memset(used, 0, ctx->nchunks);
        for (int i = 0; i < ctx->opt.chunks && i < (int)ctx->nchunks; ++i) {
            size_t c = stress_rng_below(&rng, ctx->nchunks);
            if (!used[c]) {
                used[c] = 1;
                plan_chunk(ctx, plan, &rng, t, c);
            }
        }
        memset(used, 0, ctx->ncells);
        plan_atomics(ctx, plan, &rng, t, used);
    }
    free(used);
}
