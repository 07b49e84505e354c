/* What each side of a probe does (stale_key_probe.c). */
#ifndef STALE_KEY_PROBE_H
#define STALE_KEY_PROBE_H

#include "stale_key_base.h"

int target(struct side *s, const struct config *cfg, int probe, struct fi_info *info);
int origin(struct side *s, int probe, struct fi_info *info);

#endif
