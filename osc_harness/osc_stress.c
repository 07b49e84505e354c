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

#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_pvars.h"
#include "stress_common.h"

#define GUARD_BYTES 64
#define CELL 8
#define MAX_REPORTS 10

enum flavor { FLAVOR_CREATE, FLAVOR_DYNAMIC, FLAVOR_ALLOCATE, FLAVOR_COUNT };
static const char *const flavor_names[FLAVOR_COUNT] = {"create", "dynamic", "allocate"};

enum sync_mode { SYNC_FENCE, SYNC_LOCK_EXCL, SYNC_LOCK_SHARED, SYNC_LOCK_ALL, SYNC_COUNT };
static const char *const sync_names[SYNC_COUNT] = {"fence", "lock_excl", "lock_shared", "lock_all"};

enum dtype { DT_I64, DT_I32, DT_F64, DT_COUNT };
static const char *const dt_names[DT_COUNT] = {"int64", "int32", "double"};
static const size_t dt_sizes[DT_COUNT] = {8, 4, 8};

enum mop {
    MOP_SUM,
    MOP_BXOR,
    MOP_BOR,
    MOP_BAND,
    MOP_MAX,
    MOP_MIN,
    MOP_REPLACE,
    MOP_NO_OP,
    MOP_COUNT
};
static const char *const mop_names[MOP_COUNT] = {"SUM", "BXOR", "BOR",     "BAND",
                                                 "MAX", "MIN",  "REPLACE", "NO_OP"};

enum op_kind { OP_PUT, OP_GET, OP_PUT_VEC, OP_ACC, OP_GACC, OP_FOP, OP_CAS };
static const char *const kind_names[] = {"put",
                                         "get",
                                         "put(vector type)",
                                         "accumulate",
                                         "get_accumulate",
                                         "fetch_and_op",
                                         "compare_and_swap"};

enum check { CHECK_NONE, CHECK_EXACT, CHECK_RECORD };

enum group_mode { G_CHUNK, G_COMMUTE, G_VECTOR, G_CHAIN, G_OWNER, G_CLAIM, G_READ };
static const char *const group_names[] = {"chunk", "commute", "vector", "chain",
                                          "owner", "claim",   "read"};

typedef struct stress_op {
    int kind, dt, mop, use_req, check, rec, group;
    int origin, target, count; /* count: elements (atomics) or 8-byte blocks (put vector) */
    size_t off, len;           /* target offset and bytes covered (vector: span) */
    size_t src, res;           /* origin scratch offsets: operand/source, result/get buffer */
    uint64_t tag;              /* content of puts and vector operands */
    int64_t operand, compare, expect;
} stress_op_t;

typedef struct stress_group {
    int mode, target, dt, first_op, nops;
    size_t off;
    int64_t start;
} stress_group_t;

typedef struct stress_plan {
    stress_op_t *ops;
    size_t nops, cap_ops;
    stress_group_t *groups;
    size_t ngroups, cap_groups;
    size_t *scratch_need; /* per origin */
    int nrec;
} stress_plan_t;

typedef struct stress_opts {
    uint64_t seed;
    int epochs, phases, chunks, groups;
    size_t put_area;
    bool flavor_on[FLAVOR_COUNT], sync_on[SYNC_COUNT], report_only, verbose;
} stress_opts_t;

typedef struct stress_ctx {
    stress_opts_t opt;
    int rank, size, flavor, epoch, phase, sync;
    size_t win_bytes, atom_off, ncells, nint_cells, *chunk_off, *chunk_len, nchunks;
    unsigned char *local; /* this rank's window memory */
    unsigned char *model; /* size * win_bytes: what every window must hold */
    MPI_Aint *dyn_base;   /* dynamic windows: every rank's attach address */
    MPI_Win win;
    unsigned char *scratch;
    size_t scratch_cap;
    int64_t *rec_local, *rec_all;
    int rec_cap;
    long mismatches, reports;
    unsigned long ops_issued;
    const struct stress_plan *cur_plan; /* for naming an op's group in reports */
    stress_pvar_t eagain_pvar;          /* btl_ofi_injected_faults: proof that injection fired */
    long mpi_errors;                    /* report-only: MPI calls that returned an error */
} stress_ctx_t;

/* ---- datatypes and operations: the model's arithmetic ---------------------------------- */

static MPI_Datatype dt_handle(int dt)
{
    return DT_I64 == dt ? MPI_INT64_T : (DT_I32 == dt ? MPI_INT32_T : MPI_DOUBLE);
}

static MPI_Op mop_handle(int mop)
{
    const MPI_Op ops[MOP_COUNT] = {MPI_SUM, MPI_BXOR, MPI_BOR,     MPI_BAND,
                                   MPI_MAX, MPI_MIN,  MPI_REPLACE, MPI_NO_OP};
    return ops[mop];
}

/* Element values travel as int64 raw bits (int32 sign-extended, double bit pattern). */
static int64_t load_elem(const void *p, int dt)
{
    int64_t v64;
    int32_t v32;

    if (DT_I32 == dt) {
        memcpy(&v32, p, 4);
        return v32;
    }
    memcpy(&v64, p, 8);
    return v64;
}

static void store_elem(void *p, int dt, int64_t v)
{
    int32_t v32 = (int32_t)v;

    memcpy(p, DT_I32 == dt ? (void *)&v32 : (void *)&v, dt_sizes[dt]);
}

static int64_t f64_bits(double d)
{
    int64_t v;
    memcpy(&v, &d, 8);
    return v;
}

static double bits_f64(int64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static int64_t apply_int(int mop, int64_t cur, int64_t x, bool narrow)
{
    uint64_t r;

    switch (mop) {
    case MOP_SUM:
        r = (uint64_t)cur + (uint64_t)x;
        break;
    case MOP_BXOR:
        r = (uint64_t)(cur ^ x);
        break;
    case MOP_BOR:
        r = (uint64_t)(cur | x);
        break;
    case MOP_BAND:
        r = (uint64_t)(cur & x);
        break;
    case MOP_MAX:
        r = (uint64_t)(cur > x ? cur : x);
        break;
    case MOP_MIN:
        r = (uint64_t)(cur < x ? cur : x);
        break;
    case MOP_REPLACE:
        r = (uint64_t)x;
        break;
    default:
        r = (uint64_t)cur;
        break;
    }
    return narrow ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
}

static int64_t apply_op(int dt, int mop, int64_t cur, int64_t x)
{
    if (DT_F64 == dt) {
        double c = bits_f64(cur), v = bits_f64(x);
        switch (mop) {
        case MOP_SUM:
            return f64_bits(c + v);
        case MOP_MAX:
            return f64_bits(c > v ? c : v);
        case MOP_MIN:
            return f64_bits(c < v ? c : v);
        case MOP_REPLACE:
            return x;
        default:
            return cur;
        }
    }
    return apply_int(mop, cur, x, DT_I32 == dt);
}

static void format_elem(char *out, size_t n, int dt, int64_t v)
{
    if (DT_F64 == dt) {
        snprintf(out, n, "%.17g", bits_f64(v));
    } else {
        snprintf(out, n, "%" PRId64 " (0x%" PRIx64 ")", v,
                 DT_I32 == dt ? (uint64_t)(uint32_t)v : (uint64_t)v);
    }
}

/* ---- the plan ----------------------------------------------------------------------------- */

static stress_op_t *plan_add_op(stress_plan_t *plan, int kind, int origin, int target)
{
    stress_op_t *op;

    if (plan->nops == plan->cap_ops) {
        plan->cap_ops = plan->cap_ops ? 2 * plan->cap_ops : 256;
        plan->ops = realloc(plan->ops, plan->cap_ops * sizeof(*plan->ops));
        if (!plan->ops) {
            fprintf(stderr, "osc_stress: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
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

    if (plan->ngroups == plan->cap_groups) {
        plan->cap_groups = plan->cap_groups ? 2 * plan->cap_groups : 64;
        plan->groups = realloc(plan->groups, plan->cap_groups * sizeof(*plan->groups));
        if (!plan->groups) {
            fprintf(stderr, "osc_stress: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
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

static uint64_t phase_tag(const stress_ctx_t *ctx)
{
    return ((uint64_t)ctx->flavor << 56) ^ ((uint64_t)ctx->epoch << 36) ^
           ((uint64_t)ctx->phase << 28);
}

static unsigned char *model_of(stress_ctx_t *ctx, int target)
{
    return ctx->model + (size_t)target * ctx->win_bytes;
}

/* Content of a put (or of a vector put's packed source): replayable from the op alone. */
static void put_content(const stress_ctx_t *ctx, const stress_op_t *op, void *buf, size_t len)
{
    stress_fill(buf, len, ctx->opt.seed, phase_tag(ctx) ^ op->tag);
}

static int64_t vector_operand(const stress_ctx_t *ctx, const stress_op_t *op, int i)
{
    uint64_t v;

    stress_fill(&v, sizeof(v), ctx->opt.seed, phase_tag(ctx) ^ (op->tag << 8) ^ (uint64_t)i);
    return MOP_SUM == op->mop ? (int64_t)(v >> 24) - (INT64_C(1) << 39) : (int64_t)v;
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

/* Builds this phase's plan and applies every deterministic effect to the model. */
static void plan_phase(stress_ctx_t *ctx, stress_plan_t *plan)
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

/* ---- execution ---------------------------------------------------------------------------- */

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

static void issue(stress_ctx_t *ctx, const stress_op_t *op, MPI_Request *reqs, int *nreq)
{
    unsigned char *src = ctx->scratch + op->src, *res = ctx->scratch + op->res;
    MPI_Aint disp = target_disp(ctx, op->target, op->off);
    MPI_Datatype dt = dt_handle(op->dt);
    MPI_Request *req = op->use_req ? &reqs[(*nreq)++] : NULL;
    MPI_Win win = ctx->win;

    ++ctx->ops_issued;
    switch (op->kind) {
    case OP_PUT:
        put_content(ctx, op, src, op->len);
        if (req) {
            mpi_rc(ctx, "MPI_Rput",
                   MPI_Rput(src, (int)op->len, MPI_BYTE, op->target, disp, (int)op->len, MPI_BYTE,
                            win, req));
        } else {
            mpi_rc(ctx, "MPI_Put",
                   MPI_Put(src, (int)op->len, MPI_BYTE, op->target, disp, (int)op->len, MPI_BYTE,
                           win));
        }
        break;
    case OP_GET:
        memset(res, 0xa5, op->len);
        if (req) {
            mpi_rc(ctx, "MPI_Rget",
                   MPI_Rget(res, (int)op->len, MPI_BYTE, op->target, disp, (int)op->len, MPI_BYTE,
                            win, req));
        } else {
            mpi_rc(ctx, "MPI_Get",
                   MPI_Get(res, (int)op->len, MPI_BYTE, op->target, disp, (int)op->len, MPI_BYTE,
                           win));
        }
        break;
    case OP_PUT_VEC: {
        MPI_Datatype vec;
        put_content(ctx, op, src, (size_t)op->count * 8);
        MPI_Type_vector(op->count, 8, 16, MPI_BYTE, &vec);
        MPI_Type_commit(&vec);
        mpi_rc(ctx, "MPI_Put",
               MPI_Put(src, op->count * 8, MPI_BYTE, op->target, disp, 1, vec, win));
        MPI_Type_free(&vec);
        break;
    }
    case OP_ACC:
        if (op->count > 1) {
            for (int c = 0; c < op->count; ++c) {
                store_elem(src + (size_t)c * 8, DT_I64, vector_operand(ctx, op, c));
            }
        } else {
            store_elem(src, op->dt, op->operand);
        }
        if (req) {
            mpi_rc(ctx, "MPI_Raccumulate",
                   MPI_Raccumulate(src, op->count, dt, op->target, disp, op->count, dt,
                                   mop_handle(op->mop), win, req));
        } else {
            mpi_rc(ctx, "MPI_Accumulate",
                   MPI_Accumulate(src, op->count, dt, op->target, disp, op->count, dt,
                                  mop_handle(op->mop), win));
        }
        break;
    case OP_GACC:
        store_elem(src, op->dt, op->operand);
        if (req) {
            mpi_rc(ctx, "MPI_Rget_accumulate",
                   MPI_Rget_accumulate(src, 1, dt, res, 1, dt, op->target, disp, 1, dt,
                                       mop_handle(op->mop), win, req));
        } else {
            mpi_rc(ctx, "MPI_Get_accumulate",
                   MPI_Get_accumulate(src, 1, dt, res, 1, dt, op->target, disp, 1, dt,
                                      mop_handle(op->mop), win));
        }
        break;
    case OP_FOP:
        store_elem(src, op->dt, op->operand);
        mpi_rc(ctx, "MPI_Fetch_and_op",
               MPI_Fetch_and_op(src, res, dt, op->target, disp, mop_handle(op->mop), win));
        break;
    default:
        store_elem(src, op->dt, op->operand);
        store_elem(src + 8, op->dt, op->compare);
        mpi_rc(ctx, "MPI_Compare_and_swap",
               MPI_Compare_and_swap(src, src + 8, res, dt, op->target, disp, win));
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

static void run_phase(stress_ctx_t *ctx, const stress_plan_t *plan, bool last_phase)
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

/* ---- verification ------------------------------------------------------------------------- */

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

static void verify_phase(stress_ctx_t *ctx, const stress_plan_t *plan)
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

/* ---- windows, epochs, flavors ------------------------------------------------------------- */

static void initial_content(stress_ctx_t *ctx, int target, unsigned char *buf)
{
    stress_fill(buf, ctx->win_bytes, ctx->opt.seed, 0xc0ffee00ULL + (uint64_t)target);
    for (size_t c = ctx->nint_cells; c < ctx->ncells; ++c) { /* double cells hold integers */
        double d = (double)((int64_t)(buf[ctx->atom_off + c * CELL] * 1000) - 128000);
        memcpy(buf + ctx->atom_off + c * CELL, &d, 8);
    }
}

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
            fprintf(stderr, "osc_stress: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
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
                /* report-only: the windows are the truth from here on */
                MPI_Allgather(ctx->local, (int)ctx->win_bytes, MPI_BYTE, ctx->model,
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

/* Fixed chunk boundaries of the put area: sizes from 1 byte to 64 KiB+3, odd ones included. */
static void layout(stress_ctx_t *ctx)
{
    static const size_t sizes[] = {1,    3,    8,    13,   64,   100,   255,  512,
                                   1000, 1024, 4093, 4096, 8192, 16381, 65539};
    stress_rng_t rng;
    size_t at = 0, cap = 64;

    stress_rng_seed(&rng, ctx->opt.seed, 0xa11, 0, 0);
    ctx->chunk_off = malloc(cap * sizeof(size_t));
    ctx->chunk_len = malloc(cap * sizeof(size_t));
    ctx->nchunks = 0;
    while (at < ctx->opt.put_area) {
        size_t len = sizes[stress_rng_below(&rng, sizeof(sizes) / sizeof(sizes[0]))];
        if (len > ctx->opt.put_area - at) {
            len = ctx->opt.put_area - at;
        }
        if (ctx->nchunks == cap) {
            cap *= 2;
            ctx->chunk_off = realloc(ctx->chunk_off, cap * sizeof(size_t));
            ctx->chunk_len = realloc(ctx->chunk_len, cap * sizeof(size_t));
        }
        ctx->chunk_off[ctx->nchunks] = at;
        ctx->chunk_len[ctx->nchunks++] = len;
        at += len;
    }
    ctx->atom_off = (at + 7) & ~(size_t)7;
    ctx->ncells = 256;
    ctx->nint_cells = 224;
    ctx->win_bytes = ctx->atom_off + ctx->ncells * CELL + GUARD_BYTES;
}

static void usage(void)
{
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

static bool parse_list(const char *arg, const char *const *names, int n, bool *on)
{
    char *copy = strdup(arg), *save = NULL;
    bool ok = true;

    memset(on, 0, n * sizeof(bool));
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i;
        for (i = 0; i < n && strcmp(tok, names[i]); ++i) {
        }
        if (i == n) {
            ok = false;
        } else {
            on[i] = true;
        }
    }
    free(copy);
    return ok;
}

static int parse_args(int argc, char **argv, stress_opts_t *o)
{
    int c;

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
    while (-1 != (c = getopt(argc, argv, "s:e:p:c:a:w:f:m:rvh"))) {
        switch (c) {
        case 's':
            o->seed = strtoull(optarg, NULL, 0);
            break;
        case 'e':
            o->epochs = atoi(optarg);
            break;
        case 'p':
            o->phases = atoi(optarg);
            break;
        case 'c':
            o->chunks = atoi(optarg);
            break;
        case 'a':
            o->groups = atoi(optarg);
            break;
        case 'w':
            o->put_area = (size_t)atol(optarg) * 1024;
            break;
        case 'f':
            if (!parse_list(optarg, flavor_names, FLAVOR_COUNT, o->flavor_on))
                return -1;
            break;
        case 'm':
            if (!parse_list(optarg, sync_names, SYNC_COUNT, o->sync_on))
                return -1;
            break;
        case 'r':
            o->report_only = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        default:
            return -1;
        }
    }
    if (o->epochs < 1 || o->phases < 1 || o->chunks < 0 || o->groups < 0 || o->put_area < 1) {
        return -1;
    }
    return 0;
}

static void counter_deltas(const ofi_pvars_t *a, const ofi_pvars_t *b, unsigned long *d)
{
    for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
        d[i] = b->value[i] - a->value[i];
    }
    MPI_Allreduce(MPI_IN_PLACE, d, OFI_PVAR_COUNT, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
}

static int run(stress_ctx_t *ctx)
{
    stress_plan_t plan = {0};
    int modes[SYNC_COUNT], nmodes = 0, not_ours = 0, leak = 0, present;
    long bad_phases = 0, total_mismatches, mpi_errors;
    unsigned long ops_total;
    unsigned long eagain = 0, cq_err_total = 0;

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
        t0 = stress_now();
        bad = run_flavor(ctx, &plan, modes, nmodes);
        ofi_pvars_read(&after);
        counter_deltas(&before, &after, d);
        live = after.value[OFI_PVAR_REGISTRATIONS_LIVE];
        MPI_Allreduce(MPI_IN_PLACE, &live, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
        ops_total = ctx->ops_issued;
        MPI_Allreduce(MPI_IN_PLACE, &ops_total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
        present = after.present;
        MPI_Allreduce(MPI_IN_PLACE, &present, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
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
                   "registrations_live after Win_free=%lu%s\n",
                   flavor_names[ctx->flavor], bad ? "MISMATCH" : "exact   ", ops_total,
                   stress_now() - t0, d[OFI_PVAR_PUTS], d[OFI_PVAR_GETS], d[OFI_PVAR_ATOMICS],
                   d[OFI_PVAR_ATOMICS_EMULATED], d[OFI_PVAR_CQ_ENTRIES], d[OFI_PVAR_CQ_ERRORS],
                   d[OFI_PVAR_FLUSHES], d[OFI_PVAR_REFUSED], live,
                   present ? "" : " (btl_ofi counters ABSENT)");
        }
        if (bad && !ctx->opt.report_only) {
            break;
        }
    }
    eagain = stress_pvar_value(&ctx->eagain_pvar);
    MPI_Allreduce(MPI_IN_PLACE, &eagain, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    total_mismatches = ctx->mismatches;
    mpi_errors = ctx->mpi_errors;
    MPI_Allreduce(MPI_IN_PLACE, &mpi_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &total_mismatches, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
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
        return STRESS_EXIT_WRONG;
    }
    return not_ours ? STRESS_EXIT_NOT_OURS : STRESS_EXIT_PASS;
}

int main(int argc, char **argv)
{
    stress_ctx_t ctx = {0};
    int rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    if (parse_args(argc, argv, &ctx.opt)) {
        if (0 == ctx.rank) {
            usage();
        }
        MPI_Finalize();
        return STRESS_EXIT_USAGE;
    }
    /* every rank must replay the same plan: rank 0's seed wins */
    MPI_Bcast(&ctx.opt.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    ofi_pvars_open();
    stress_pvar_start(&ctx.eagain_pvar, "injected_faults");
    rc = run(&ctx);
    stress_pvar_stop(&ctx.eagain_pvar);
    ofi_pvars_close();
    MPI_Finalize();
    return rc;
}
