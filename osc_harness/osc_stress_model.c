/* osc_stress: the model, element arithmetic and window contents (see osc_stress_shared.h). */
#include "osc_stress_shared.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const flavor_names[FLAVOR_COUNT] = {"create", "dynamic", "allocate"};
const char *const sync_names[SYNC_COUNT] = {"fence", "lock_excl", "lock_shared", "lock_all"};
const char *const dt_names[DT_COUNT] = {"int64", "int32", "double"};
const size_t dt_sizes[DT_COUNT] = {8, 4, 8};
const char *const mop_names[MOP_COUNT] = {"SUM", "BXOR", "BOR",     "BAND",
                                          "MAX", "MIN",  "REPLACE", "NO_OP"};
const char *const kind_names[] = {"put",
                                  "get",
                                  "put(vector type)",
                                  "accumulate",
                                  "get_accumulate",
                                  "fetch_and_op",
                                  "compare_and_swap"};
const char *const group_names[] = {"chunk", "commute", "vector", "chain", "owner", "claim", "read"};

MPI_Datatype dt_handle(int dt)
{
    return DT_I64 == dt ? MPI_INT64_T : (DT_I32 == dt ? MPI_INT32_T : MPI_DOUBLE);
}

MPI_Op mop_handle(int mop)
{
    const MPI_Op ops[MOP_COUNT] = {MPI_SUM, MPI_BXOR, MPI_BOR,     MPI_BAND,
                                   MPI_MAX, MPI_MIN,  MPI_REPLACE, MPI_NO_OP};
    return ops[mop];
}

int64_t load_elem(const void *p, int dt)
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

void store_elem(void *p, int dt, int64_t v)
{
    int32_t v32 = (int32_t)v;

    memcpy(p, DT_I32 == dt ? (void *)&v32 : (void *)&v, dt_sizes[dt]);
}

int64_t f64_bits(double d)
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

int64_t apply_op(int dt, int mop, int64_t cur, int64_t x)
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

void format_elem(char *out, size_t n, int dt, int64_t v)
{
    if (DT_F64 == dt) {
        snprintf(out, n, "%.17g", bits_f64(v));
    } else {
        snprintf(out, n, "%" PRId64 " (0x%" PRIx64 ")", v,
                 DT_I32 == dt ? (uint64_t)(uint32_t)v : (uint64_t)v);
    }
}

static uint64_t phase_tag(const stress_ctx_t *ctx)
{
    return ((uint64_t)ctx->flavor << 56) ^ ((uint64_t)ctx->epoch << 36) ^
           ((uint64_t)ctx->phase << 28);
}

unsigned char *model_of(stress_ctx_t *ctx, int target)
{
    return ctx->model + (size_t)target * ctx->win_bytes;
}

void put_content(const stress_ctx_t *ctx, const stress_op_t *op, void *buf, size_t len)
{
    stress_fill(buf, len, ctx->opt.seed, phase_tag(ctx) ^ op->tag);
}

int64_t vector_operand(const stress_ctx_t *ctx, const stress_op_t *op, int i)
{
    uint64_t v;

    stress_fill(&v, sizeof(v), ctx->opt.seed, phase_tag(ctx) ^ (op->tag << 8) ^ (uint64_t)i);
    return MOP_SUM == op->mop ? (int64_t)(v >> 24) - (INT64_C(1) << 39) : (int64_t)v;
}

void initial_content(stress_ctx_t *ctx, int target, unsigned char *buf)
{
    stress_fill(buf, ctx->win_bytes, ctx->opt.seed, 0xc0ffee00ULL + (uint64_t)target);
    for (size_t c = ctx->nint_cells; c < ctx->ncells; ++c) { /* double cells hold integers */
        double d = (double)((int64_t)(buf[ctx->atom_off + c * CELL] * 1000) - 128000);
        memcpy(buf + ctx->atom_off + c * CELL, &d, 8);
    }
}

/* Sizes of the put area's chunks: from 1 byte to 64 KiB+3, odd ones included. */
void layout(stress_ctx_t *ctx)
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
