/* stale_key's output (stale_key_output.c): one row per configuration, a table line or JSON. */
#ifndef STALE_KEY_OUTPUT_H
#define STALE_KEY_OUTPUT_H

#include "stale_key_base.h"

void print_row(const struct config *cfg, int selected, const struct probe_run *runs);

#endif
