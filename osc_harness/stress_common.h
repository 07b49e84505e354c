/*
 * Shared pieces of the reliability programs (osc_stress, osc_soak, osc_threads):
 * a seeded generator every rank can replay, and the RESULT line. Exit codes and
 * the clock: harness_core.h; btl-ofi's counters: ofi_pvars.h.
 */
#ifndef OSC_HARNESS_STRESS_COMMON_H
#define OSC_HARNESS_STRESS_COMMON_H

#include <mpi.h>
#include <stdint.h>

#include "harness_core.h"

/** xoshiro256** state; seeded through splitmix64 so any 64-bit seed is usable. */
typedef struct stress_rng {
    uint64_t s[4];
} stress_rng_t;

/** Seed from a base seed and up to three stream numbers (epoch, phase, ...). */
void stress_rng_seed(stress_rng_t *rng, uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
uint64_t stress_rng_next(stress_rng_t *rng);
/** Uniform in [0, n); n > 0. */
uint64_t stress_rng_below(stress_rng_t *rng, uint64_t n);
/** Deterministic bytes for a (seed, tag) pair: what a put carries, replayable anywhere. */
void stress_fill(void *buf, size_t len, uint64_t seed, uint64_t tag);

/** A seed from the clock when the user gave none (printed, so it can be replayed). */
uint64_t stress_default_seed(void);

/**
 * The RESULT line of osc_soak and osc_threads (printed when print is set) and
 * their exit code: wrong data or registrations left live fail, then a run not
 * carried by btl-ofi, else pass.
 */
int stress_verdict(int print, long wrong_total, unsigned long live, int not_ours);

#endif
