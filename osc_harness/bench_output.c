/* Table or JSON-lines output (see bench_output.h). */
#include "bench_output.h"

#include <stdio.h>

/* One field: JSON ("key": value) or a table cell of the field's width. */
static void print_field(const bench_field_t *f, int json)
{
    const int w = json ? 0 : f->width;

    if (json) {
        printf(", \"%s\": ", f->key);
    }
    switch (f->type) {
    case BENCH_F_STR:
        if (json) {
            printf("\"%s\"", f->s);
        } else {
            printf("%*s", w, f->s);
        }
        break;
    case BENCH_F_INT:
        printf("%*lld", w, f->i);
        break;
    case BENCH_F_DBL:
        printf("%*.*f", w, json ? f->prec + 3 : f->prec, f->d);
        break;
    }
}

void bench_print_row(const char *name, int json, int columns, const bench_field_t *f, int n)
{
    if (json && columns) {
        return;
    }
    if (json) {
        printf("{\"bench\": \"%s\"", name);
    }
    for (int i = 0; i < n; ++i) {
        if (columns) {
            printf("%*s", f[i].width, f[i].key);
        } else {
            print_field(&f[i], json);
        }
    }
    printf(json ? "}\n" : "\n");
    fflush(stdout);
}
