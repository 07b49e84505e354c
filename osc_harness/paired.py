"""Paired ratios of two configurations measured in interleaved rounds, and the bootstrap
interval of their median: the statistics compare.py and domains_compare.py judge by.

This machine runs in a fast and a slow mode 2-3x apart, for seconds to minutes at a time;
configurations run back to back mostly share one, so the ratio within a round is the
steadiest measure, and rounds whose two values fall in different modes are left out.

by_round: {configuration: {row: {round: value}}}, a row being (metric, op, bytes).
"""

import random
import statistics


# A round's two values count as one mode's when a / b lies within these (the modes are
# 2-3x apart; configurations compared here differ by far less).
SAME_MODE = (2 / 3, 3 / 2)


def same_mode_ratios(by_round, a, b):
    """{row: [a's value / b's, each round where both ran in the same of this machine's
    modes]}, rows where that is at least half the rounds."""
    out = {}
    for key, mine in by_round.get(a, {}).items():
        theirs = by_round.get(b, {}).get(key, {})
        each = [mine[r] / theirs[r] for r in mine if theirs.get(r)]
        same = [x for x in each if SAME_MODE[0] < x < SAME_MODE[1]]
        if same and 2 * len(same) >= len(each):
            out[key] = same
    return out


def paired_ratios(by_round):
    """(a, b) -> {row: the median over the rounds of a's value / b's that round}, of the
    rounds where both ran in the same of this machine's modes (same_mode_ratios)."""
    return lambda a, b: {k: statistics.median(v)
                         for k, v in same_mode_ratios(by_round, a, b).items()}


# The bootstrap of the paired ratios' median: resamples, the interval's coverage, a fixed
# seed (the same rounds give the same interval).
BOOT_RESAMPLES, BOOT_LEVEL, BOOT_SEED = 2000, 0.90, 26
# Rows with fewer paired rounds than this are undecided: too few for an interval to mean much.
BOOT_MIN_ROUNDS = 8


def median_interval(values):
    """(median, low, high): values' median and its BOOT_LEVEL percentile bootstrap
    interval."""
    rng = random.Random(BOOT_SEED)
    meds = sorted(statistics.median(rng.choices(values, k=len(values)))
                  for _ in range(BOOT_RESAMPLES))
    tail = (1 - BOOT_LEVEL) / 2
    return (statistics.median(values), meds[int(tail * BOOT_RESAMPLES)],
            meds[min(int((1 - tail) * BOOT_RESAMPLES), BOOT_RESAMPLES - 1)])


def pair_intervals(by_round, a, b):
    """{row: (median_interval of a's paired ratios to b, the rounds in one mode)}."""
    return {k: (median_interval(v), len(v)) for k, v in same_mode_ratios(by_round, a, b).items()}
