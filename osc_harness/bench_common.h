/*
 * The one-sided benchmarks (osc_latency, osc_bw, osc_msgrate, osc_atomic_rate)
 * are one program here, told apart by a bench_prog_t: options, the size list,
 * iteration scaling, windows, the operations, the timed loop, the values
 * checked, the proof-of-path probe over btl-ofi's counters, and the header
 * printed as a fixed-width table or JSON lines. Each program keeps its own
 * operations and result row.
 */
#ifndef OSC_HARNESS_BENCH_COMMON_H
#define OSC_HARNESS_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_output.h"
#include "core_rtt.h"
#include "harness_core.h"
#include "bench_sizes.h"
#include "ofi_pvars.h"

typedef enum { BENCH_WIN_CREATE, BENCH_WIN_DYNAMIC, BENCH_WIN_ALLOCATE } bench_flavor_t;
/* flush: one lock_all epoch, MPI_Win_flush per synchronization; fence; lock / lock_excl:
 * MPI_Win_lock (shared / exclusive) on the peer, the operations, MPI_Win_unlock, each time */
typedef enum { BENCH_SYNC_FLUSH, BENCH_SYNC_FENCE, BENCH_SYNC_LOCK, BENCH_SYNC_LOCK_EXCL } bench_sync_t;

/* Counter masks: the btl-ofi counters an operation must move. */
#define BENCH_CNT(id) (1u << (id))
#define BENCH_CNT_RMA (BENCH_CNT(OFI_PVAR_PUTS) | BENCH_CNT(OFI_PVAR_GETS))
#define BENCH_CNT_ATOMIC BENCH_CNT(OFI_PVAR_ATOMICS)
/* Compare-and-swap: a BTL atomic, or within one node on Open MPI 5 a get (and a
 * put when it swaps) under osc/rdma's accumulate lock. */
#define BENCH_CNT_CAS (BENCH_CNT(OFI_PVAR_ATOMICS) | BENCH_CNT(OFI_PVAR_GETS))

/* put, get: MPI_BYTE; the others: MPI_INT64_T with MPI_SUM (cas: compare 0, swap in 1). */
typedef enum { BENCH_PUT, BENCH_GET, BENCH_ACC, BENCH_GET_ACC, BENCH_FOP, BENCH_CAS } bench_kind_t;

typedef struct bench_op {
    const char *name;
    bench_kind_t kind; /* fetch_and_op and compare_and_swap: one element (8 bytes) */
    unsigned also;     /* BENCH_CNT bits that prove the path too, beyond the kind's own */
} bench_op_t;

/* Who posts, how often they synchronize, and whether the values are checked. */
typedef enum {
    BENCH_LATENCY,  /* rank 0: one operation + MPI_Win_flush, lock_all epoch, posts not timed */
    BENCH_ATOMICS,  /* rank 0: -W one-element atomics per -s synchronization */
    BENCH_DIRECTED, /* rank 0 (and 1 with -d bi): -W per -s synchronization; data not checked */
} bench_mode_t;

/** What one measured (op, size) gave; a program's row prints it. */
typedef struct bench_run {
    const bench_op_t *op;
    size_t size;
    int iters, warmup;   /* timed and untimed iterations */
    double elapsed;      /* seconds for the timed iterations (max over active ranks) */
    double post;         /* of which in the posting calls (the rest is synchronization) */
    unsigned long delta; /* sum over ranks of the counters that prove the op's path */
    const char *carried; /* "btl_ofi" if they moved, else "not btl-ofi" */
    int valid;           /* the values were right on both ranks (unless BENCH_DIRECTED) */
    double rtt_ns[2];    /* -c: core_rtt before and after the row (rank 0; -1: not shared) */
} bench_run_t;

struct bench_ctx;

/*
 * A benchmark program. Its rows are op, size, iters (of the widths given), what row adds, then
 * valid (unless BENCH_DIRECTED), carried_by and ofi_ops.
 */
typedef struct bench_prog {
    const char *name;     /* program name, the "bench" key of every record */
    const char *ops_help; /* the -o line's list of operations */
    const char *metric;   /* first words of the header ("bandwidth", ...) */
    bench_mode_t mode;
    size_t default_max;    /* without -S or -M, no size above this (0: the whole list) */
    int widths[3];         /* of the op, size and iters columns */
    const bench_op_t *ops; /* in the order of the rows, up to one with a NULL name */
    void (*row)(const struct bench_ctx *ctx, const bench_run_t *run);
} bench_prog_t;

typedef struct bench_opts {
    bench_sweep_t sweep; /* -o -S -m -M -i -x -B -W -j (bench_sizes.h) */
    bench_flavor_t flavor;
    bench_sync_t sync;
    int bidir;
    int require_ofi;
    int bystanders; /* -y: ranks beyond 2 stay idle */
    int gap_us;     /* -g: latency, untimed pause before each operation */
    int core_rtt;   /* -c: the ranks' core-to-core round trip beside each row (core_rtt.h) */
} bench_opts_t;

typedef struct bench_ctx {
    const bench_prog_t *prog;
    int rank, peer, columns; /* columns: bench_row prints the column names */
    MPI_Comm comm;           /* ranks 0 and 1 (MPI_COMM_WORLD when the job has no others) */
    bench_opts_t opt;
    MPI_Win win;
    char *win_buf; /* local window memory (page aligned) */
    void *win_mem; /* MPI_Win_allocate's memory (flavor allocate) */
    size_t win_len;
    MPI_Aint peer_base;   /* displacement of the peer's window memory (0 unless dynamic) */
    char *origin;         /* source / destination buffer, win_len bytes; cas: desired, compare */
    int64_t *result;      /* fetched values */
    char btl_ofi_so[512]; /* which mca_btl_ofi.so this process mapped, "" if none */
    int pair_one_node;    /* ranks 0 and 1 share a node (MPI_COMM_TYPE_SHARED) */
    core_rtt_t rtt;       /* -c */
} bench_ctx_t;

/**
 * A benchmark's whole main: MPI_Init, options (usage and exit 1 on an error),
 * the 2-rank check (77; more ranks than 2 with --bystanders, which leaves
 * ranks 2.. idle until MPI_Finalize), btl-ofi's counters, every wanted op at every size
 * (one row each), MPI_Finalize.
 * @retval 0 done, 1 wrong values, 2 not carried by btl-ofi (-r), 77 not supported
 */
int bench_main(int argc, char **argv, const bench_prog_t *prog);

/** put and get: the operations of osc_bw and osc_msgrate. */
extern const bench_op_t bench_rma_ops[3];

/** One result row (rank 0 only) with the program's fields, or the column names for the header. */
void bench_row(const bench_ctx_t *ctx, const bench_run_t *run, const bench_field_t *fields, int n);

#endif
