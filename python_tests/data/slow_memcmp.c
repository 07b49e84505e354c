/*
 * A test device, LD_PRELOADed into ranks by test_lone_rank_cas.py: an 8-byte memcmp waits
 * 20 us before it compares. Open MPI's osc/rdma does a compare-and-swap in memory it treats
 * as its own as memcpy (load), memcmp (compare) and memcpy (store); the wait holds the load
 * and the store apart, so that an atomic a provider applies in between, without this
 * process's calls, shows as a lost update in a few thousand rounds rather than in billions.
 * Nothing else about the comparison changes.
 */
#include <stddef.h>
#include <time.h>

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;

    if (8 == n) {
        struct timespec start, now;

        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
                 20000);
    }
    for (size_t i = 0; i < n; ++i) {
        if (x[i] != y[i]) {
            return x[i] - y[i];
        }
    }
    return 0;
}
