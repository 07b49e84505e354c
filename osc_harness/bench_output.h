/*
 * Output of every harness benchmark, MPI or not: one list of fields prints
 * either a fixed-width table row or one JSON object per line.
 */
#ifndef OSC_HARNESS_BENCH_OUTPUT_H
#define OSC_HARNESS_BENCH_OUTPUT_H

/* One output field: the same list prints a table row and a JSON record. */
typedef enum { BENCH_F_STR, BENCH_F_INT, BENCH_F_DBL } bench_ftype_t;
typedef struct bench_field {
    const char *key;
    int width;
    int prec; /* digits after the point for BENCH_F_DBL */
    bench_ftype_t type;
    const char *s;
    long long i;
    double d;
} bench_field_t;

#define BENCH_STR(k, w, v)                                                                         \
    {                                                                                              \
        .key = (k), .width = (w), .type = BENCH_F_STR, .s = (v)                                    \
    }
#define BENCH_INT(k, w, v)                                                                         \
    {                                                                                              \
        .key = (k), .width = (w), .type = BENCH_F_INT, .i = (long long)(v)                         \
    }
#define BENCH_DBL(k, w, p, v)                                                                      \
    {                                                                                              \
        .key = (k), .width = (w), .prec = (p), .type = BENCH_F_DBL, .d = (double)(v)               \
    }

/**
 * One record: a table row, or (json) one JSON object that starts with "bench": name; with
 * columns set the table's column names instead, right-aligned to each field's width (nothing
 * in JSON mode). Flushed at once, so that a later crash keeps it.
 */
void bench_print_row(const char *name, int json, int columns, const bench_field_t *f, int n);

#endif
