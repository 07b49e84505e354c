/*
 * Message sizes and iteration counts, shared by the MPI benchmarks and the
 * raw libfabric reference so that both sweep the same points the same way.
 */
#ifndef OSC_HARNESS_BENCH_SIZES_H
#define OSC_HARNESS_BENCH_SIZES_H

#include <stddef.h>

#include "harness_core.h"

#define BENCH_MAX_SIZES 64
#define BENCH_DEFAULT_MAX_ITERS 10000
#define BENCH_DEFAULT_WINDOW 64

/** The sweep options the MPI benchmarks and ofi_rma_ref share: -o -S -m -M -i -x -B -W -j. */
typedef struct bench_sweep {
    harness_list_t ops;            /* -o: operations asked for; empty: program default */
    size_t sizes[BENCH_MAX_SIZES]; /* ascending */
    int nsizes;
    size_t min, max;    /* -m, -M: bounds of the default size list */
    int explicit_sizes; /* -S given */
    int max_iters;      /* -i: iterations for the smallest messages */
    int min_iters;      /* floor after scaling down for large messages */
    int warmup;         /* -x: untimed iterations (-1: derived from iterations) */
    size_t budget;      /* -B: bytes moved per size before iterations are lowered */
    int window;         /* -W: operations per synchronization */
    int json;           /* -j */
    int default_sizes;  /* neither -S nor -M given: programs may trim the list */
} bench_sweep_t;

/** HARNESS_OPT_FN parser of -S: comma-separated sizes (K, M suffixes), sorted ascending. */
int bench_sweep_sizes(const char *arg, void *sweep);

/* The harness_getopt table entries of the sweep options, filling *(s). */
#define BENCH_SWEEP_OPTS(s)                                                                        \
    HARNESS_CUSTOM('o', &(s)->ops, harness_list_parse),                                            \
        HARNESS_CUSTOM('S', (s), bench_sweep_sizes),                                               \
        HARNESS_ARG('m', HARNESS_OPT_SIZE, &(s)->min),                                             \
        HARNESS_ARG('M', HARNESS_OPT_SIZE, &(s)->max),                                             \
        HARNESS_ARG('i', HARNESS_OPT_POS, &(s)->max_iters),                                        \
        HARNESS_ARG('x', HARNESS_OPT_INT, &(s)->warmup),                                           \
        HARNESS_ARG('B', HARNESS_OPT_SIZE, &(s)->budget),                                          \
        HARNESS_ARG('W', HARNESS_OPT_POS, &(s)->window), HARNESS_FLAG('j', &(s)->json, 1)

/**
 * Iterations for bytes_per_iter: -i, lowered so that no more than -B bytes move, never below
 * 10 (or -i). Warm-up: -x if given, else a tenth (2 to 100).
 */
void bench_sweep_iterations(const bench_sweep_t *s, size_t bytes_per_iter, int *iters, int *warmup);
/** Distinct slots for a whole window (-W) of the largest size, within 64 MiB; at least floor. */
size_t bench_sweep_window_bytes(const bench_sweep_t *s, size_t floor);

/** The defaults, before the options are parsed. */
void bench_sweep_init(bench_sweep_t *s);
/** After parsing: the default size list unless -S was given. @retval 0, -1 without sizes. */
int bench_sweep_done(bench_sweep_t *s);

#endif
