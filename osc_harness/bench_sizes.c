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

int bench_sweep_sizes(const char *arg, void *sweep)
{
    bench_sweep_t *s = sweep;
    char *list = strdup(arg), *save = NULL;
    int rc = list ? 0 : -1;

    s->nsizes = 0;
    s->explicit_sizes = 1;
    for (char *tok = list ? strtok_r(list, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (s->nsizes == BENCH_MAX_SIZES || harness_parse_size(tok, &s->sizes[s->nsizes++])) {
            rc = -1;
            break;
        }
    }
    free(list);
    qsort(s->sizes, (size_t)s->nsizes, sizeof(size_t), cmp_size);
    return rc || 0 == s->nsizes ? -1 : 0;
}

void bench_sweep_init(bench_sweep_t *s)
{
    *s = (bench_sweep_t){.min = 1,
                         .max = 4UL << 20,
                         .max_iters = BENCH_DEFAULT_MAX_ITERS,
                         .min_iters = 10,
                         .warmup = -1,
                         .budget = 256UL << 20,
                         .window = BENCH_DEFAULT_WINDOW};
}

int bench_sweep_done(bench_sweep_t *s)
{
    s->min_iters = s->max_iters < s->min_iters ? s->max_iters : s->min_iters;
    if (!s->explicit_sizes) {
        s->default_sizes = (4UL << 20) == s->max;
        for (size_t i = 0; i < sizeof(default_sizes) / sizeof(default_sizes[0]); ++i) {
            if (default_sizes[i] >= s->min && default_sizes[i] <= s->max) {
                s->sizes[s->nsizes++] = default_sizes[i];
            }
        }
    }
    return s->nsizes > 0 ? 0 : -1;
}

void bench_sweep_iterations(const bench_sweep_t *s, size_t bytes_per_iter, int *iters, int *warmup)
{
    size_t n = (size_t)s->max_iters;

    if (bytes_per_iter * n > s->budget) {
        n = s->budget / bytes_per_iter;
    }
    if (n < (size_t)s->min_iters) {
        n = (size_t)s->min_iters;
    }
    *iters = (int)n;
    *warmup = s->warmup >= 0 ? s->warmup : (int)(n / 10 > 100 ? 100 : (n / 10 < 2 ? 2 : n / 10));
}

size_t bench_sweep_window_bytes(const bench_sweep_t *s, size_t floor)
{
    size_t max = s->sizes[s->nsizes - 1], want = max * (size_t)s->window;
    const size_t cap = 64UL << 20;

    max = max < floor ? floor : max;
    return want > cap ? (max > cap ? max : cap) : (want < floor ? floor : want);
}
