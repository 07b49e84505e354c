/*
 * osc_stress (see osc_stress.c): what its files share. The program is split
 * by concern:
 *   osc_stress_model.c  the model: element arithmetic and window contents
 *   osc_stress_plan.c   the generators: a phase's plan, applied to the model
 *   osc_stress_exec.c   this rank's part of the plan, issued in an epoch
 *   osc_stress_check.c  the checker: windows and fetched values against the model
 *   osc_stress.c        windows, epochs and flavors, options, the report, main
 */
#ifndef OSC_HARNESS_OSC_STRESS_SHARED_H
#define OSC_HARNESS_OSC_STRESS_SHARED_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stress_common.h"

#define GUARD_BYTES 64
#define CELL 8
#define MAX_REPORTS 10

enum flavor { FLAVOR_CREATE, FLAVOR_DYNAMIC, FLAVOR_ALLOCATE, FLAVOR_COUNT };

enum sync_mode { SYNC_FENCE, SYNC_LOCK_EXCL, SYNC_LOCK_SHARED, SYNC_LOCK_ALL, SYNC_COUNT };

enum dtype { DT_I64, DT_I32, DT_F64, DT_COUNT };

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

enum op_kind { OP_PUT, OP_GET, OP_PUT_VEC, OP_ACC, OP_GACC, OP_FOP, OP_CAS };

enum check { CHECK_NONE, CHECK_EXACT, CHECK_RECORD };

enum group_mode { G_CHUNK, G_COMMUTE, G_VECTOR, G_CHAIN, G_OWNER, G_CLAIM, G_READ };

extern const char *const flavor_names[FLAVOR_COUNT];
extern const char *const sync_names[SYNC_COUNT];
extern const char *const dt_names[DT_COUNT];
extern const size_t dt_sizes[DT_COUNT];
extern const char *const mop_names[MOP_COUNT];
extern const char *const kind_names[];
extern const char *const group_names[];

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
    bool flavor_on[FLAVOR_COUNT], sync_on[SYNC_COUNT];
    int report_only, verbose;
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
    long mpi_errors;                    /* report-only: MPI calls that returned an error */
} stress_ctx_t;

/* ---- the model (osc_stress_model.c) ---- */
MPI_Datatype dt_handle(int dt);
MPI_Op mop_handle(int mop);
/* Element values travel as int64 raw bits (int32 sign-extended, double bit pattern). */
int64_t load_elem(const void *p, int dt);
void store_elem(void *p, int dt, int64_t v);
int64_t f64_bits(double d);
int64_t apply_op(int dt, int mop, int64_t cur, int64_t x);
void format_elem(char *out, size_t n, int dt, int64_t v);
/* What every window must hold: the model of target's window. */
unsigned char *model_of(stress_ctx_t *ctx, int target);
/* Content of a put (or of a vector put's packed source): replayable from the op alone. */
void put_content(const stress_ctx_t *ctx, const stress_op_t *op, void *buf, size_t len);
int64_t vector_operand(const stress_ctx_t *ctx, const stress_op_t *op, int i);
void initial_content(stress_ctx_t *ctx, int target, unsigned char *buf);
/* Fixed chunk boundaries of the put area and the window layout. */
void layout(stress_ctx_t *ctx);

/* ---- the generators (osc_stress_plan.c) ---- */
/* Builds this phase's plan and applies every deterministic effect to the model. */
void plan_phase(stress_ctx_t *ctx, stress_plan_t *plan);

/* ---- execution (osc_stress_exec.c) ---- */
/* Issues this rank's operations of the plan and ends the phase's synchronization. */
void run_phase(stress_ctx_t *ctx, const stress_plan_t *plan, bool last_phase);

/* ---- the checker (osc_stress_check.c) ---- */
/* Checks fetched values, claims, chains and this rank's window against the model. */
void verify_phase(stress_ctx_t *ctx, const stress_plan_t *plan);

#endif
