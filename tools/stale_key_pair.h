/* A probe's process pair (stale_key_pair.c). */
#ifndef STALE_KEY_PAIR_H
#define STALE_KEY_PAIR_H

#include "stale_key_base.h"

/* 0, or 2 on a pipe/fork failure */
int run_probe(const struct config *cfg, int probe, struct probe_run *pr);

#endif
