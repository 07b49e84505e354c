/*
 * Shared pieces of the reliability programs (osc_stress, osc_soak, osc_threads):
 * a seeded generator every rank can replay, timing, and reading any btl_ofi
 * MPI_T counter by name (ofi_pvars.h covers the common ones; the fault
 * injection counters are read here). Exit codes: harness_core.h.
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
double stress_now(void);

/** One btl_ofi MPI_T variable watched by name (its own session). */
typedef struct stress_pvar {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int found;
} stress_pvar_t;

/**
 * Start watching the component's counter btl_<component>_SUFFIX (after
 * MPI_Init). A COUNTER-class variable reads as the count since this call (Open
 * MPI starts continuous handles at allocation).
 * @retval 0 found; -1 not registered (component not loaded): reads give 0.
 */
int stress_pvar_start(stress_pvar_t *pv, const char *suffix);
unsigned long stress_pvar_value(stress_pvar_t *pv);
void stress_pvar_stop(stress_pvar_t *pv);

/**
 * The RESULT line of osc_soak and osc_threads (printed when print is set) and
 * their exit code: wrong data or registrations left live fail, then a run not
 * carried by btl-ofi, else pass.
 */
int stress_verdict(int print, long wrong_total, unsigned long live, int not_ours);

#endif
