/*
 * core_rtt: the round trip of one cache line between the two ranks that measure (-c of the
 * benchmarks), beside each row. It measures the machine, not MPI: a page both processes
 * map (POSIX shared memory), rank 0 writes a number, rank 1 answers with the next, and no
 * MPI or libfabric call runs in between. A shared-memory benchmark's latency follows it:
 * on a VM whose two cores move between a fast and a slow placement, the slow rows of every
 * configuration are the rows whose round trip was slow (osc_harness/PERFORMANCE.md).
 */
#ifndef OSC_HARNESS_CORE_RTT_H
#define OSC_HARNESS_CORE_RTT_H

#include <mpi.h>
#include <stdatomic.h>

typedef struct core_rtt {
    _Atomic long *word; /* the shared line, NULL when the two ranks share no memory */
    int rank;           /* in the communicator the two ranks measure in (0 or 1) */
} core_rtt_t;

/**
 * Collective over comm (ranks 0 and 1, nothing else): map a page both can reach. Ranks on
 * different machines cannot, and then every measurement gives -1.
 */
void core_rtt_open(core_rtt_t *rtt, MPI_Comm comm, int rank);

/**
 * Collective over comm: nanoseconds per round trip on rank 0 (a few milliseconds at most:
 * it stops after CORE_RTT_BUDGET_NS), 0 on rank 1; -1 at once, with no collective call,
 * where the page is not shared or rtt was never opened (zeroed).
 */
double core_rtt_measure(core_rtt_t *rtt, MPI_Comm comm);

void core_rtt_close(core_rtt_t *rtt);

#endif
