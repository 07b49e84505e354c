/* The harness programs' shared core without MPI: options, lists, the clock (see harness_core.h). */
#include "harness_core.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- options ----------------------------------------------------------- */

static const harness_opt_t *harness_find(const harness_opt_t *table, int flag)
{
    for (; table->flag; ++table) {
        if (table->flag == flag) {
            return table;
        }
    }
    return NULL;
}

static void harness_optstring(const harness_opt_t *table, char *out, size_t len)
{
    size_t w = 0;

    for (; table->flag && w + 4 < len; ++table) {
        out[w++] = table->flag;
        if (HARNESS_OPT_SET != table->type) {
            out[w++] = ':';
        }
    }
    out[w++] = 'h'; /* known to getopt, so that -h prints the usage alone */
    out[w] = '\0';
}

int harness_parse_size(const char *text, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);

    if (end == text) {
        return -1;
    }
    if ('K' == *end || 'k' == *end) {
        v <<= 10, ++end;
    } else if ('M' == *end || 'm' == *end) {
        v <<= 20, ++end;
    }
    if ('\0' != *end || 0 == v) {
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

static int harness_index(const char *name, const char *const *names, int n)
{
    int i;

    for (i = 0; i < n && strcmp(name, names[i]); ++i) {
    }
    return i < n ? i : -1;
}

/* Each name of a comma list switches on[i] of names[i], the others off; an unknown name: -1. */
static int harness_pick(const char *arg, const char *const *names, int n, bool *on)
{
    harness_list_t list;
    int rc = harness_list_parse(arg, &list);

    memset(on, 0, n * sizeof(bool));
    for (int k = 0; k < list.n; ++k) {
        const int i = harness_index(list.item[k], names, n);
        if (i < 0) {
            rc = -1;
        } else {
            on[i] = true;
        }
    }
    return rc;
}

static int harness_set(const harness_opt_t *opt, const char *arg)
{
    switch (opt->type) {
    case HARNESS_OPT_INT:
    case HARNESS_OPT_POS:
        *(int *)opt->value = atoi(arg);
        return HARNESS_OPT_POS == opt->type && *(int *)opt->value < 1 ? -1 : 0;
    case HARNESS_OPT_LLONG:
        *(long long *)opt->value = atoll(arg);
        return 0;
    case HARNESS_OPT_U64:
        *(uint64_t *)opt->value = strtoull(arg, NULL, 0);
        return 0;
    case HARNESS_OPT_KIB:
        *(size_t *)opt->value = (size_t)atol(arg) * 1024;
        return 0;
    case HARNESS_OPT_SIZE:
        return harness_parse_size(arg, (size_t *)opt->value);
    case HARNESS_OPT_STR:
        *(const char **)opt->value = arg;
        return 0;
    case HARNESS_OPT_SET:
        *(int *)opt->value = opt->n;
        return 0;
    case HARNESS_OPT_CHOICE:
        *(int *)opt->value = harness_index(arg, opt->names, opt->n);
        return *(int *)opt->value < 0 ? -1 : 0;
    case HARNESS_OPT_PICK:
        return harness_pick(arg, opt->names, opt->n, opt->value);
    default:
        return opt->fn(arg, opt->value);
    }
}

int harness_getopt(int argc, char **argv, const harness_opt_t *table)
{
    char optstring[128];
    int c;

    harness_optstring(table, optstring, sizeof(optstring));
    while (-1 != (c = getopt(argc, argv, optstring))) {
        const harness_opt_t *opt = harness_find(table, c);
        if (NULL == opt || 0 != harness_set(opt, optarg)) {
            return -1;
        }
    }
    return 0;
}

int harness_list_parse(const char *arg, void *value)
{
    harness_list_t *list = value;
    char *save = NULL;

    snprintf(list->storage, sizeof(list->storage), "%s", arg);
    list->n = 0;
    for (char *tok = strtok_r(list->storage, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (list->n == HARNESS_MAX_LIST) {
            return -1;
        }
        list->item[list->n++] = tok;
    }
    return 0;
}

bool harness_listed(const harness_list_t *list, const char *name, bool dflt)
{
    return 0 == list->n ? dflt : harness_index(name, list->item, list->n) >= 0;
}

double harness_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
