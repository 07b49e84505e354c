/* Shared pieces of the reliability programs (see stress_common.h). */
#include "stress_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void stress_rng_seed(stress_rng_t *rng, uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = seed;

    x ^= splitmix64(&x) + a;
    x ^= splitmix64(&x) + b;
    x ^= splitmix64(&x) + c;
    for (int i = 0; i < 4; ++i) {
        rng->s[i] = splitmix64(&x);
    }
}

uint64_t stress_rng_next(stress_rng_t *rng)
{
    uint64_t *s = rng->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t stress_rng_below(stress_rng_t *rng, uint64_t n)
{
    return stress_rng_next(rng) % n; /* the bias is irrelevant for test plans */
}

void stress_fill(void *buf, size_t len, uint64_t seed, uint64_t tag)
{
    uint64_t x = seed ^ (tag * 0xd6e8feb86659fd93ULL);
    unsigned char *p = buf;

    while (len) {
        const uint64_t v = splitmix64(&x);
        const size_t n = len < 8 ? len : 8;
        memcpy(p, &v, n);
        p += n;
        len -= n;
    }
}

uint64_t stress_default_seed(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
}

int stress_verdict(int print, long wrong_total, unsigned long live, int not_ours)
{
    if (print) {
        printf("RESULT %s mismatches=%ld registrations_live=%lu\n",
               (wrong_total || live) ? "FAILED"
               : not_ours            ? "WRONG_PATH"
                                     : "PASSED",
               wrong_total, live);
    }
    if (wrong_total || live) {
        return HARNESS_EXIT_FAIL;
    }
    return not_ours ? HARNESS_EXIT_NOT_OURS : HARNESS_EXIT_PASS;
}
