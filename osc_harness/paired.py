"""Paired ratios of two configurations measured in interleaved rounds, and the bootstrap
interval of their median: the statistics compare.py and domains_compare.py judge by.

This machine runs in a fast and a slow mode 2-3x apart, for seconds to minutes at a time (its
two cores' own placement: osc_latency -c times a cache line between them, compare_stats.
machine_modes counts the rows beside a slow one); configurations run back to back mostly share
one, so the ratio within a round is the steadiest measure, and rounds whose two values fall in
different modes are left out.

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


# A value counts as the fast mode's when within this factor of the fastest value of the two
# configurations: on tcp between host namespaces the modes are about 1.25x apart, inside
# SAME_MODE, so the paired ratios mix them when the two configurations fell into different
# modes in different rounds; medians per mode do not.
MODE_SPLIT = 1.15


def mode_medians(a_values, b_values, split=MODE_SPLIT):
    """{"fast"|"slow": (n of a, median of a, n of b, median of b)} for two configurations'
    values of one row, each mode holding values below / at least split x the least of all."""
    cut = split * min(a_values + b_values)
    out = {}
    for mode, keep in (("fast", lambda v: v < cut), ("slow", lambda v: v >= cut)):
        a, b = [v for v in a_values if keep(v)], [v for v in b_values if keep(v)]
        out[mode] = (len(a), statistics.median(a) if a else None,
                     len(b), statistics.median(b) if b else None)
    return out


def main(argv=None):
    """paired.py RESULTS.json A B: compare.py's results, row by row, as A / B: the paired
    median with its interval and rounds, then each mode's medians (MODE_SPLIT)."""
    import argparse
    import json

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("results", help="results.json of compare.py")
    p.add_argument("a", help="configuration, e.g. 'ours[tcp;ofi_rxm]'")
    p.add_argument("b", help="configuration to divide by")
    args = p.parse_args(argv)
    with open(args.results, encoding="utf-8") as fh:
        stats = json.load(fh)["stats"]
    values = {(s["config"], (s["metric"], s["op"], s["size"])): s["values"] for s in stats}
    by_round = {}
    for (config, row), vals in values.items():
        by_round.setdefault(config, {})[row] = dict(enumerate(vals))
    for row, ((med, low, high), n) in sorted(pair_intervals(by_round, args.a, args.b).items()):
        line = f"{row[0]} {row[1]} {row[2]}: {med:.3f} ({low:.3f}-{high:.3f}; {n})"
        for mode, (na, ma, nb, mb) in mode_medians(values[(args.a, row)],
                                                   values[(args.b, row)]).items():
            ratio = f"{ma / mb:.3f}" if ma and mb else "-"
            line += f"; {mode} {ratio} ({na} / {nb})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
