/* Message sizes and iteration counts (see bench_sizes.h). */
#include "bench_sizes.h"

#include <stdlib.h>
#include <string.h>

/* Powers of two from 1 B to 4 MiB, and sizes that are not: odd, decimal, unaligned. */
static const size_t default_sizes[] = {
    1,     2,      3,      4,      8,      16,      32,      64,      100,     128,
    256,   512,    1000,   1024,   2048,   4096,    8192,    12000,   16384,   32768,
    65536, 100000, 131072, 262144, 524288, 1000000, 1048576, 2097152, 3000000, 4194304,
};

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

int bench_parse_size_list(char *list, size_t *sizes, int max)
{
    int n = 0;
    char *save = NULL;

    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max || harness_parse_size(tok, &sizes[n])) {
            return -1;
        }
        ++n;
    }
    qsort(sizes, (size_t)n, sizeof(size_t), cmp_size);
    return n ? n : -1;
}

int bench_default_sizes(size_t min, size_t max, size_t *sizes, int max_count)
{
    int n = 0;

    for (size_t i = 0; i < sizeof(default_sizes) / sizeof(default_sizes[0]) && n < max_count; ++i) {
        if (default_sizes[i] >= min && default_sizes[i] <= max) {
            sizes[n++] = default_sizes[i];
        }
    }
    return n;
}

void bench_scale_iterations(size_t bytes_per_iter, int max_iters, int min_iters, size_t budget,
                            int warmup, int *iters_out, int *warmup_out)
{
    size_t n = (size_t)max_iters;

    if (bytes_per_iter * n > budget) {
        n = budget / bytes_per_iter;
    }
    if (n < (size_t)min_iters) {
        n = (size_t)min_iters;
    }
    *iters_out = (int)n;
    if (warmup >= 0) {
        *warmup_out = warmup;
    } else {
        *warmup_out = (int)(n / 10 > 100 ? 100 : (n / 10 < 2 ? 2 : n / 10));
    }
}

int bench_sweep_sizes(const char *arg, void *sweep)
{
    bench_sweep_t *s = sweep;
    char *list = strdup(arg);

    s->nsizes = list ? bench_parse_size_list(list, s->sizes, BENCH_MAX_SIZES) : -1;
    s->explicit_sizes = 1;
    free(list);
    return s->nsizes < 0 ? -1 : 0;
}

int bench_sweep_iters(const char *arg, void *sweep)
{
    bench_sweep_t *s = sweep;

    s->max_iters = atoi(arg);
    if (s->max_iters < 1) {
        return -1;
    }
    s->min_iters = s->max_iters < s->min_iters ? s->max_iters : s->min_iters;
    return 0;
}

int bench_sweep_window(const char *arg, void *window)
{
    *(int *)window = atoi(arg);
    return *(int *)window < 1 ? -1 : 0;
}

void bench_sweep_init(bench_sweep_t *s)
{
    memset(s, 0, sizeof(*s));
    s->min = 1;
    s->max = 4UL << 20;
    s->max_iters = BENCH_DEFAULT_MAX_ITERS;
    s->min_iters = BENCH_DEFAULT_MIN_ITERS;
    s->warmup = -1;
    s->budget = BENCH_DEFAULT_BUDGET;
    s->window = BENCH_DEFAULT_WINDOW;
}

int bench_sweep_done(bench_sweep_t *s)
{
    if (!s->explicit_sizes) {
        s->default_sizes = (4UL << 20) == s->max;
        s->nsizes = bench_default_sizes(s->min, s->max, s->sizes, BENCH_MAX_SIZES);
    }
    return s->nsizes > 0 ? 0 : -1;
}

void bench_sweep_iterations(const bench_sweep_t *s, size_t bytes_per_iter, int *iters, int *warmup)
{
    bench_scale_iterations(bytes_per_iter, s->max_iters, s->min_iters, s->budget, s->warmup, iters,
                           warmup);
}

size_t bench_sweep_window_bytes(const bench_sweep_t *s, size_t floor)
{
    size_t max = s->sizes[s->nsizes - 1], want = max * (size_t)s->window;
    const size_t cap = 64UL << 20;

    max = max < floor ? floor : max;
    return want > cap ? (max > cap ? max : cap) : (want < floor ? floor : want);
}
