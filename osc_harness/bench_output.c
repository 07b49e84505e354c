/* Table or JSON-lines output (see bench_output.h). */
#include "bench_output.h"

#include <stdio.h>

void bench_print_columns(const bench_field_t *cols, int n)
{
    for (int i = 0; i < n; ++i) {
        printf("%*s", cols[i].width, cols[i].key);
    }
    printf("\n");
    fflush(stdout);
}

static void print_json(const char *name, const bench_field_t *f, int n)
{
    printf("{\"bench\": \"%s\"", name);
    for (int i = 0; i < n; ++i) {
        switch (f[i].type) {
        case BENCH_F_STR:
            printf(", \"%s\": \"%s\"", f[i].key, f[i].s);
            break;
        case BENCH_F_INT:
            printf(", \"%s\": %lld", f[i].key, f[i].i);
            break;
        case BENCH_F_DBL:
            printf(", \"%s\": %.*f", f[i].key, f[i].prec + 3, f[i].d);
            break;
        }
    }
    printf("}\n");
}

static void print_table(const bench_field_t *f, int n)
{
    for (int i = 0; i < n; ++i) {
        switch (f[i].type) {
        case BENCH_F_STR:
            printf("%*s", f[i].width, f[i].s);
            break;
        case BENCH_F_INT:
            printf("%*lld", f[i].width, f[i].i);
            break;
        case BENCH_F_DBL:
            printf("%*.*f", f[i].width, f[i].prec, f[i].d);
            break;
        }
    }
    printf("\n");
}

void bench_print_row(const char *name, int json, const bench_field_t *f, int n)
{
    if (json) {
        print_json(name, f, n);
    } else {
        print_table(f, n);
    }
    fflush(stdout);
}
