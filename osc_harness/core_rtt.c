/*
 * core_rtt: a cache line's round trip between the two measuring ranks (core_rtt.h).
 */
#include "core_rtt.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Round trips per measurement, and the time after which it stops sooner: 20000 take 1.5 ms
 * on a fast placement, 7 ms on a slow one; oversubscribed cores end it at the budget. */
#define CORE_RTT_TRIPS 20000
#define CORE_RTT_BUDGET_NS 5000000.0
/* Polls of the line before a waiting rank yields its core (two ranks on one core). */
#define CORE_RTT_SPINS 4096
/* Rank 0's last word: rank 1 stops answering. */
#define CORE_RTT_STOP (-1L)
#define CORE_RTT_PAGE 4096

static double core_rtt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

static _Atomic long *core_rtt_map(const char *name, int flags)
{
    int fd = shm_open(name, flags, 0600);
    void *page;

    if (fd < 0) {
        return NULL;
    }
    if ((flags & O_CREAT) && 0 != ftruncate(fd, CORE_RTT_PAGE)) {
        close(fd);
        return NULL;
    }
    page = mmap(NULL, CORE_RTT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return MAP_FAILED == page ? NULL : page;
}

void core_rtt_open(core_rtt_t *rtt, MPI_Comm comm, int rank)
{
    char name[64] = "";
    int mapped, both;

    rtt->rank = rank;
    rtt->word = NULL;
    if (0 == rank) {
        snprintf(name, sizeof(name), "/osc-core-rtt.%ld.%ld", (long)getpid(),
                 (long)core_rtt_now_ns());
        rtt->word = core_rtt_map(name, O_CREAT | O_EXCL | O_RDWR);
        if (NULL == rtt->word) {
            fprintf(stderr, "core_rtt: %s: %s (no round trips measured)\n", name, strerror(errno));
            shm_unlink(name);
            name[0] = '\0';
        }
    }
    MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm);
    if (1 == rank && '\0' != name[0]) {
        rtt->word = core_rtt_map(name, O_RDWR); /* fails on another machine */
    }
    mapped = NULL != rtt->word;
    MPI_Allreduce(&mapped, &both, 1, MPI_INT, MPI_MIN, comm);
    if (0 == rank && '\0' != name[0]) {
        shm_unlink(name); /* both mapped it, or never will */
    }
    if (!both) {
        core_rtt_close(rtt);
    }
}

/* Wait until the line holds want (or, on rank 1, the stop word); @return what it held. */
static long core_rtt_wait(_Atomic long *word, long want)
{
    for (unsigned spins = 1;; ++spins) {
        const long now = atomic_load_explicit(word, memory_order_acquire);

        if (want == now || CORE_RTT_STOP == now) {
            return now;
        }
        if (0 == spins % CORE_RTT_SPINS) {
            sched_yield(); /* the other rank may be waiting for this core */
        }
    }
}

double core_rtt_measure(core_rtt_t *rtt, MPI_Comm comm)
{
    double t0, elapsed;
    long trips = 0;

    if (NULL == rtt->word) {
        return -1;
    }
    if (0 == rtt->rank) {
        atomic_store(rtt->word, 0);
    }
    MPI_Barrier(comm);
    if (1 == rtt->rank) {
        for (long want = 1; CORE_RTT_STOP != core_rtt_wait(rtt->word, want); want += 2) {
            atomic_store_explicit(rtt->word, want + 1, memory_order_release);
        }
        MPI_Barrier(comm);
        return 0;
    }
    t0 = core_rtt_now_ns();
    do {
        atomic_store_explicit(rtt->word, 2 * trips + 1, memory_order_release);
        (void)core_rtt_wait(rtt->word, 2 * trips + 2);
        ++trips;
        elapsed = 0 == trips % 64 ? core_rtt_now_ns() - t0 : 0; /* the clock once in 64 */
    } while (trips < CORE_RTT_TRIPS && elapsed <= CORE_RTT_BUDGET_NS);
    elapsed = core_rtt_now_ns() - t0;
    atomic_store_explicit(rtt->word, CORE_RTT_STOP, memory_order_release);
    MPI_Barrier(comm);
    return elapsed / (double)trips;
}

void core_rtt_close(core_rtt_t *rtt)
{
    if (NULL != rtt->word) {
        munmap((void *)rtt->word, CORE_RTT_PAGE);
        rtt->word = NULL;
    }
}
