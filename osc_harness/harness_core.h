/*
 * The core every harness program shares (the way fabtests' common/shared.c
 * serves its tests): exit codes, a table-driven option parser, comma lists and
 * the clock (harness_core.c, no MPI: ofi_rma_ref uses it too), and for the MPI
 * programs the start (MPI_Init, options, usage), the end (btl-ofi counters
 * closed, MPI_Finalize) and the reductions their reports use (harness_mpi.c).
 */
#ifndef OSC_HARNESS_CORE_H
#define OSC_HARNESS_CORE_H

#include <stdbool.h>
#include <stddef.h>

/* Exit codes every harness program uses; runners map 77 to "skipped". */
#define HARNESS_EXIT_PASS 0
#define HARNESS_EXIT_FAIL 1     /* wrong result or failure */
#define HARNESS_EXIT_NOT_OURS 2 /* btl-ofi's counters show it did not carry the traffic */
#define HARNESS_EXIT_USAGE 3
#define HARNESS_EXIT_SKIP 77

/* ---- options ----------------------------------------------------------- */

typedef enum {
    HARNESS_OPT_INT,    /* int: atoi */
    HARNESS_OPT_POS,    /* int: atoi, below 1: error */
    HARNESS_OPT_LLONG,  /* long long: atoll */
    HARNESS_OPT_U64,    /* uint64_t: strtoull, any base */
    HARNESS_OPT_KIB,    /* size_t: atol KiB, in bytes */
    HARNESS_OPT_SIZE,   /* size_t: harness_parse_size; malformed: error */
    HARNESS_OPT_STR,    /* const char *: the argument itself */
    HARNESS_OPT_SET,    /* int: set to .n, takes no argument */
    HARNESS_OPT_CHOICE, /* int: the index of the argument among .names[.n] */
    HARNESS_OPT_PICK,   /* bool[.n]: on for each name of a comma list (harness_list_t) of .names[.n]
                         */
    HARNESS_OPT_FN,     /* custom: fn(argument, value) returns 0, or -1 for an error */
} harness_opt_type_t;

/** One command-line option; a table ends with {0}. */
typedef struct harness_opt {
    char flag;
    harness_opt_type_t type;
    void *value;
    int n;                                   /* SET: the value; CHOICE, PICK: how many names */
    int (*fn)(const char *arg, void *value); /* FN */
    const char *const *names;                /* CHOICE, PICK */
} harness_opt_t;

/* Table entries: an option with an argument, a flag, a custom parser, a name or names. */
#define HARNESS_ARG(f, t, v)                                                                       \
    {                                                                                              \
        .flag = (f), .type = (t), .value = (v)                                                     \
    }
#define HARNESS_FLAG(f, v, x)                                                                      \
    {                                                                                              \
        .flag = (f), .type = HARNESS_OPT_SET, .value = (v), .n = (x)                               \
    }
#define HARNESS_CUSTOM(f, v, parse)                                                                \
    {                                                                                              \
        .flag = (f), .type = HARNESS_OPT_FN, .value = (v), .fn = (parse)                           \
    }
#define HARNESS_NAMED(f, t, v, list, count)                                                        \
    {                                                                                              \
        .flag = (f), .type = (t), .value = (v), .n = (count), .names = (list)                      \
    }

/** "4096", "64K", "4M" -> bytes. @retval 0 ok, -1 malformed or zero. */
int harness_parse_size(const char *text, size_t *out);

/**
 * getopt over a table: every option fills its value. An option not in the
 * table, or -h, is an error (for the caller's usage message).
 * @retval 0, or -1 on a usage error.
 */
int harness_getopt(int argc, char **argv, const harness_opt_t *table);

#define HARNESS_MAX_LIST 8

/** A comma-separated list of names (-o put,get), pointing into its own copy. */
typedef struct harness_list {
    const char *item[HARNESS_MAX_LIST];
    int n;
    char storage[256];
} harness_list_t;

/** HARNESS_OPT_FN parser of a harness_list_t. More than HARNESS_MAX_LIST items: -1. */
int harness_list_parse(const char *arg, void *list);
/** True if name is in the list, or the list is empty and dflt is true. */
bool harness_listed(const harness_list_t *list, const char *name, bool dflt);

/** Monotonic seconds. */
double harness_now(void);

/* ---- MPI programs ------------------------------------------------------ */

/* harness_init's thread level for MPI_Init itself (it honours OMPI_MPI_THREAD_LEVEL). */
#define HARNESS_MPI_INIT (-1)

/**
 * MPI_Init (level HARNESS_MPI_INIT) or MPI_Init_thread, this rank and the job
 * size, then parse(argc, argv, opts) unless parse is NULL. On a usage error
 * rank 0 calls usage(opts), MPI is finalized and the program exits with usage_exit.
 * @param provided (OUT) the thread level MPI provides (may be NULL)
 * @retval 0 to go on, else the exit code
 */
int harness_init(int *argc, char ***argv, int level, int *provided, int *rank, int *size,
                 int (*parse)(int argc, char **argv, void *opts), void *opts,
                 void (*usage)(const void *opts), int usage_exit);

/**
 * Not supported here: rank 0 prints the message (printf format) on standard
 * error, MPI is finalized. @retval HARNESS_EXIT_SKIP
 */
int harness_skip(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Open btl-ofi's counters, run(ctx), close them, MPI_Finalize: run's exit code. */
int harness_run(int (*run)(void *ctx), void *ctx);

/** realloc, or the job ends (MPI_Abort, exit code 3) with "<prog>: out of memory". */
void *harness_realloc(const char *prog, void *p, size_t bytes);
/** The job ends (MPI_Abort, exit code 3) with "<prog>: out of memory". */
void harness_out_of_memory(const char *prog) __attribute__((noreturn));

#ifdef MPI_VERSION
/** The ranks the reductions below run over: MPI_COMM_WORLD unless a program that leaves
 *  some ranks idle narrows them (bench_main's pair). */
void harness_set_comm(MPI_Comm comm);
#endif

/* Collective reductions over MPI_COMM_WORLD (or harness_set_comm's) of one value, or of n in
 * place. */
unsigned long harness_sum_ul(unsigned long value);
void harness_sum_ul_n(unsigned long *values, int n);
long harness_sum_long(long value);
unsigned long harness_min_ul(unsigned long value);
int harness_max_int(int value);
int harness_min_int(int value);

#endif
