/*
 * Shared pieces of the one-sided benchmarks (osc_latency, osc_bw, osc_msgrate,
 * osc_atomic_rate): options, the size list, iteration scaling, windows, the
 * proof-of-path probe over btl-ofi's counters, and one output routine that
 * prints either a fixed-width table or JSON lines.
 */
#ifndef OSC_HARNESS_BENCH_COMMON_H
#define OSC_HARNESS_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_output.h"
#include "harness_core.h"
#include "bench_sizes.h"
#include "ofi_pvars.h"

typedef enum { BENCH_WIN_CREATE, BENCH_WIN_DYNAMIC } bench_flavor_t;
typedef enum { BENCH_SYNC_FLUSH, BENCH_SYNC_FENCE } bench_sync_t;

typedef struct bench_opts {
    bench_sweep_t sweep; /* -o -S -m -M -i -x -B -W -j (bench_sizes.h) */
    bench_flavor_t flavor;
    bench_sync_t sync;
    int bidir;
    int require_ofi;
} bench_opts_t;

typedef struct bench_ctx {
    const char *name;                  /* program name, the "bench" key of every record */
    const char *usage_extra;           /* the -o line's list of operations */
    int (*run)(struct bench_ctx *ctx); /* the program's measurements */
    int rank, peer;
    bench_opts_t opt;
    MPI_Win win;
    char *win_buf; /* local window memory (page aligned) */
    size_t win_len;
    MPI_Aint peer_base;   /* displacement of the peer's window memory (0 unless dynamic) */
    char *origin;         /* local source / destination buffer, win_len bytes */
    char btl_ofi_so[512]; /* which mca_btl_ofi.so this process mapped, "" if none */
} bench_ctx_t;

/** Counter snapshot taken before a measured block. */
typedef struct bench_probe {
    ofi_pvars_t before;
} bench_probe_t;

/** What the probe proved about a measured block (same on every rank). */
typedef struct bench_path {
    unsigned long delta; /* sum over ranks of the counters in the mask */
    int ours;            /* 1 if btl-ofi's counters moved */
    const char *label;   /* "btl_ofi" or "not btl-ofi" */
} bench_path_t;

/* Counter masks for bench_probe_end(). */
#define BENCH_CNT(id) (1u << (id))
#define BENCH_CNT_RMA (BENCH_CNT(OFI_PVAR_PUTS) | BENCH_CNT(OFI_PVAR_GETS))
#define BENCH_CNT_ANY (BENCH_CNT_RMA | BENCH_CNT(OFI_PVAR_ATOMICS))
/* Compare-and-swap: a BTL atomic, or within one node on Open MPI 5 a get (and a
 * put when it swaps) under osc/rdma's accumulate lock. */
#define BENCH_CNT_CAS (BENCH_CNT(OFI_PVAR_ATOMICS) | BENCH_CNT(OFI_PVAR_GETS))

/**
 * A benchmark's whole main: MPI_Init, options (usage and exit 1 on an error),
 * the 2-rank check (77), btl-ofi's counters, run(ctx), the window closed,
 * MPI_Finalize. ctx may be the first member of the program's own context.
 * @retval the exit code
 */
int bench_main(int argc, char **argv, const char *name, const char *usage_extra, bench_ctx_t *ctx,
               int (*run)(bench_ctx_t *ctx));

/** True if the op was asked for with -o (or -o was not given and dflt is true). */
int bench_op_wanted(const bench_ctx_t *ctx, const char *op, int dflt);

/** Iterations and warm-up for one message size (the budget lowers them for large sizes). */
void bench_iterations(const bench_ctx_t *ctx, size_t size, int *iters, int *warmup);

/**
 * Create the window (Win_create or dynamic + attach) over len bytes, plus an origin buffer
 * of the same length. @retval 0 on success, HARNESS_EXIT_SKIP if the window cannot be created.
 */
int bench_window_open(bench_ctx_t *ctx, size_t len);
void bench_window_close(bench_ctx_t *ctx);

/** Target displacement of byte offset off in the peer's window. */
static inline MPI_Aint bench_disp(const bench_ctx_t *ctx, size_t off)
{
    return ctx->peer_base + (MPI_Aint)off;
}

/* Probe: local snapshot, then a collective that sums the counters that moved. */
void bench_probe_begin(bench_probe_t *probe);
bench_path_t bench_probe_end(const bench_ctx_t *ctx, const bench_probe_t *probe, unsigned mask);

/** Header comment lines and column names (rank 0 only; JSON mode prints a meta record). */
void bench_header(const bench_ctx_t *ctx, const char *what, const bench_field_t *cols, int n);
/** One result row (rank 0 only); flushed at once so a later crash keeps it. */
void bench_row(const bench_ctx_t *ctx, const bench_field_t *fields, int n);

/** Wall-clock seconds (MPI_Wtime). */
static inline double bench_now(void)
{
    return MPI_Wtime();
}

/** Posts the j-th operation of a window of operations of one size. */
typedef void (*bench_issue_fn)(void *arg, size_t size, int j);

typedef struct bench_times {
    double elapsed; /* seconds for the timed iterations (max over active ranks) */
    double post;    /* of which in the posting calls (the rest is synchronization) */
} bench_times_t;

/**
 * The windowed loop shared by bandwidth and rate programs: per iteration, each active rank
 * posts opt.window operations then synchronizes (MPI_Win_flush to the peer inside one
 * lock_all epoch, or MPI_Win_fence on both ranks). Collective; warm-up excluded from timing.
 */
bench_times_t bench_windowed(bench_ctx_t *ctx, int active, bench_issue_fn fn, void *arg,
                             size_t size, int iters, int warmup);

/** One measured (op, size) of a windowed benchmark. */
typedef struct bench_run {
    int iters, warmup; /* timed and untimed iterations, each of opt.sweep.window operations */
    bench_times_t t;
    bench_path_t path; /* whether btl-ofi carried it */
} bench_run_t;

/**
 * bench_windowed over the iterations the sweep gives size * window bytes, between
 * two probes of btl-ofi's counters (the counters mask): what bench_run_t holds. Collective.
 */
void bench_measure(bench_ctx_t *ctx, int active, bench_issue_fn fn, void *arg, size_t size,
                   unsigned counters, bench_run_t *run);

/** Byte offset of the j-th operation of a window: distinct slots while they fit. */
size_t bench_slot(const bench_ctx_t *ctx, size_t size, int j);

/** A contiguous put or get of one window slot: the op tables of osc_bw and osc_msgrate. */
typedef struct bench_rma_op {
    const char *name;
    unsigned counters; /* BENCH_CNT bits this op must move */
    bench_issue_fn issue;
} bench_rma_op_t;

/** put and get, in that order. */
extern const bench_rma_op_t bench_rma_ops[2];

/** Prints the result row of one measured (op, size). */
typedef void (*bench_rma_row_fn)(bench_ctx_t *ctx, const bench_rma_op_t *op, size_t size,
                                 const bench_run_t *run);

/**
 * The windowed put/get benchmarks: opens a window of window_bytes (origin filled with fill),
 * prints the header titled "<direction> <metric>, <window> operations per <sync>", measures
 * every wanted op and size (bench_measure, active on rank 0 or, -d bi, on both), prints each
 * with row(), returns the exit code.
 */
int bench_rma_sweep(bench_ctx_t *ctx, const char *metric, size_t window_bytes, int fill,
                    const bench_field_t *columns, int ncols, bench_rma_row_fn row);

/** The exit code for the whole run given failures and whether every row was ours. */
int bench_exit_code(const bench_ctx_t *ctx, int failures, int rows_not_ours);

#endif
