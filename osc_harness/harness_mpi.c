/* The harness programs' shared core, the MPI part (see harness_core.h). */
#include <mpi.h>

#include "harness_core.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ofi_pvars.h"

/* ---- MPI programs ------------------------------------------------------ */

static MPI_Comm harness_comm = MPI_COMM_WORLD;

void harness_set_comm(MPI_Comm comm)
{
    harness_comm = comm;
}

int harness_init(int *argc, char ***argv, int level, int *provided, int *rank, int *size,
                 int (*parse)(int argc, char **argv, void *opts), void *opts,
                 void (*usage)(const void *opts), int usage_exit)
{
    int got = MPI_THREAD_SINGLE;

    if (HARNESS_MPI_INIT == level) {
        MPI_Init(argc, argv);
    } else {
        MPI_Init_thread(argc, argv, level, &got);
    }
    if (provided) {
        *provided = got;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (parse && parse(*argc, *argv, opts)) {
        if (0 == *rank) {
            usage(opts);
        }
        MPI_Finalize();
        return usage_exit;
    }
    return 0;
}

int harness_skip(int rank, const char *fmt, ...)
{
    va_list ap;

    if (0 == rank) {
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    MPI_Finalize();
    return HARNESS_EXIT_SKIP;
}

int harness_run(int (*run)(void *ctx), void *ctx)
{
    int rc;

    ofi_pvars_open();
    rc = run(ctx);
    ofi_pvars_close();
    MPI_Finalize();
    return rc;
}

void harness_out_of_memory(const char *prog)
{
    fprintf(stderr, "%s: out of memory\n", prog);
    MPI_Abort(MPI_COMM_WORLD, 3);
    abort(); /* MPI_Abort does not return */
}

void *harness_realloc(const char *prog, void *p, size_t bytes)
{
    void *q = realloc(p, bytes);

    if (NULL == q) {
        harness_out_of_memory(prog);
    }
    return q;
}

/* A collective reduction of one value: name(value) returns the result on every rank. */
#define HARNESS_REDUCTION(name, type, mpi_type, mpi_op)                                            \
    type name(type value)                                                                          \
    {                                                                                              \
        MPI_Allreduce(MPI_IN_PLACE, &value, 1, mpi_type, mpi_op, harness_comm);                    \
        return value;                                                                              \
    }

HARNESS_REDUCTION(harness_sum_ul, unsigned long, MPI_UNSIGNED_LONG, MPI_SUM)
HARNESS_REDUCTION(harness_sum_long, long, MPI_LONG, MPI_SUM)
HARNESS_REDUCTION(harness_min_ul, unsigned long, MPI_UNSIGNED_LONG, MPI_MIN)
HARNESS_REDUCTION(harness_max_int, int, MPI_INT, MPI_MAX)
HARNESS_REDUCTION(harness_min_int, int, MPI_INT, MPI_MIN)

void harness_sum_ul_n(unsigned long *values, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_UNSIGNED_LONG, MPI_SUM, harness_comm);
}
