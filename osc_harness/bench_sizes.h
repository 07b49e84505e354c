/*
 * Message sizes and iteration counts, shared by the MPI benchmarks and the
 * raw libfabric reference so that both sweep the same points the same way.
 */
#ifndef OSC_HARNESS_BENCH_SIZES_H
#define OSC_HARNESS_BENCH_SIZES_H

#include <stddef.h>

#define BENCH_MAX_SIZES 64
#define BENCH_DEFAULT_MAX_ITERS 10000
#define BENCH_DEFAULT_MIN_ITERS 10
#define BENCH_DEFAULT_BUDGET (256UL << 20)
#define BENCH_DEFAULT_WINDOW 64

/** "4096", "64K", "4M" -> bytes. @retval 0 ok, -1 malformed or zero. */
int bench_parse_size(const char *text, size_t *out);
/** Comma-separated sizes (list is modified), sorted ascending. @retval count, -1 malformed. */
int bench_parse_size_list(char *list, size_t *sizes, int max);
/** The default sizes within [min, max]: powers of two and a few that are not. */
int bench_default_sizes(size_t min, size_t max, size_t *sizes, int max_count);
/**
 * Iterations for bytes_per_iter: max_iters, lowered so that no more than budget bytes move,
 * never below min_iters. Warm-up: warmup if >= 0, else a tenth (2 to 100).
 */
void bench_scale_iterations(size_t bytes_per_iter, int max_iters, int min_iters, size_t budget,
                            int warmup, int *iters_out, int *warmup_out);

#endif
