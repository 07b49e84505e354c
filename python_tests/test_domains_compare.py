"""domains_compare.py's verdicts (osc_harness; PERFORMANCE.md "40 rounds with intervals").

The benchmark judges a target by each row's paired median (a's value / b's, round by round,
rounds in one of this machine's modes) and that median's 90% bootstrap interval: met where
every row's interval lies within the bound, NOT met where one lies wholly beyond it,
undecided where the noise cannot tell, or where a row has too few rounds in one mode.
Synthetic rounds with known ratios: each verdict must come out, so a target the numbers
cannot support is never printed as met. No MPI here.
"""

import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "osc_harness"))
import domains_compare as dc  # noqa: E402

ROW = ("lat_us", "cas", 8)


def _mode(most=1.1, least=None):
    """One target of a / b on lat_us, all sizes: at most `most`, or at least `least`."""
    return {"targets": [("a", "b", "lat_us", None, most, least)]}


def _rounds(ratios, base=1.0):
    """by_round for configurations a and b: b at base, a at base x each ratio."""
    return {"a": {ROW: {r: base * x for r, x in enumerate(ratios)}},
            "b": {ROW: {r: base for r in range(len(ratios))}}}


def _noisy(center, spread, n=40, seed=1):
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def _verdict(by_round, mode=None):
    (line,) = dc.interval_targets(mode or _mode(), by_round)
    return line


def _word(line):
    """The verdict of a target's line: met, NOT met or undecided."""
    found = re.search(r"(?:\) |: )(met|NOT met|undecided)(?:;|,|$)", line)
    assert found, line
    return found[1]


@pytest.mark.parametrize("ratios, verdict", [
    (_noisy(1.00, 0.03), "met"),        # every round near 1.0: interval well under 1.1
    (_noisy(1.30, 0.03), "NOT met"),    # every round near 1.3: interval wholly beyond
    ([1.0, 1.2] * 20, "undecided"),     # half the rounds each side of the bound
], ids=["met", "not-met", "undecided"])
def test_verdicts(ratios, verdict):
    line = _verdict(_rounds(ratios))
    assert _word(line) == verdict, line
    if verdict == "NOT met":
        assert "beyond: cas/8" in line, line
    if verdict == "undecided":
        assert "undecided: cas/8" in line, line


def test_interval_contains_median_and_narrows_with_rounds():
    wide = dc.median_interval(_noisy(1.0, 0.2, n=10))
    narrow = dc.median_interval(_noisy(1.0, 0.2, n=200))
    for med, low, high in (wide, narrow):
        assert low <= med <= high
    assert narrow[2] - narrow[1] < wide[2] - wide[1], (wide, narrow)


def test_too_few_rounds_is_undecided():
    line = _verdict(_rounds([1.0] * (dc.BOOT_MIN_ROUNDS - 1)))
    assert _word(line) == "undecided", line
    assert _word(_verdict(_rounds([1.0] * dc.BOOT_MIN_ROUNDS))) == "met"


def test_rounds_in_two_modes_left_out():
    """Rounds whose two values are 2-3x apart (one configuration ran in the slow mode, the
    other in the fast one) do not count; with more than half such, the row is undecided
    however good the rest."""
    kept = [1.0] * 20 + [2.5] * 8 + [0.4] * 7
    assert dc.same_mode_ratios(_rounds(kept), "a", "b")[ROW] == [1.0] * 20
    assert _word(_verdict(_rounds(kept))) == "met"
    lost = [1.0] * 15 + [2.5] * 10 + [0.4] * 10
    assert ROW not in dc.same_mode_ratios(_rounds(lost), "a", "b")
    assert _word(_verdict(_rounds(lost))) == "undecided"


def test_gain_target_not_judged_by_pairs():
    """A target that wants a gain (striping's bandwidth, 1.5x and more) is not judged by the
    paired ratios, whose mode window is for configurations that differ by far less: it
    says so rather than printing a verdict from rounds it had to leave out."""
    line = _verdict(_rounds(_noisy(1.9, 0.03)), _mode(most=None, least=1.5))
    assert "not judged" in line and not re.search(r"\b(met|undecided)\b", line), line


def test_interval_table_shows_what_the_verdict_judged():
    """The table of the targets' pairs gives, row by row, the paired median, its interval and
    the rounds in one mode that the verdict of the same pair was drawn from; a row with too
    few rounds in one mode says so, and a gain target has no column."""
    second = ("lat_us", "put", 8)
    by_round = _rounds(_noisy(1.30, 0.03))
    by_round["a"][second] = {r: 2.5 for r in range(40)}   # every round out of the mode window
    by_round["b"][second] = {r: 1.0 for r in range(40)}
    mode = {"targets": [("a", "b", "lat_us", None, 1.1, None),
                        ("a", "b", "bw_MBps", None, None, 1.5)]}
    lines = dc.interval_table(mode, by_round).splitlines()
    assert lines[0] == "| metric | op | bytes | a / b |", lines
    med, low, high = dc.median_interval(dc.same_mode_ratios(by_round, "a", "b")[ROW])
    assert f"| lat_us | cas | 8 | {med:.2f} ({low:.2f}-{high:.2f}; 40) |" in lines, lines
    assert "| lat_us | put | 8 | (under half) |" in lines, lines
    verdict = dc.interval_targets(mode, by_round)[0]
    assert f"{med:.2f}x ({dc.BOOT_LEVEL:.0%} interval {low:.2f}-{high:.2f}) NOT met" in verdict, \
        verdict


def test_interval_table_rows_of_the_targets_only():
    """A pair's column holds the rows its targets judge (striping's latency target: 8 bytes),
    not the rest of what both ran."""
    big = ("lat_us", "put", 4194304)
    by_round = _rounds(_noisy(1.0, 0.03))
    by_round["a"][big] = by_round["b"][big] = {r: 1.0 for r in range(40)}
    mode = {"targets": [("a", "b", "lat_us", (8,), 1.1, None)]}
    lines = dc.interval_table(mode, by_round).splitlines()
    assert len(lines) == 3 and lines[2].startswith("| lat_us | cas | 8 | "), lines


def test_compare_paired_table_from_runs():
    """compare.py's paired latency table: the repetitions' own ratios, one mode only.

    Repetition by repetition ours is 1.05x stock; two repetitions ran stock in the slow mode
    (3x): left out, so the median stays 1.050 however the medians of all runs fall."""
    import compare_report
    import compare_stats

    runs = []
    for rep in range(10):
        slow = 3.0 if rep in (2, 7) else 1.0
        for cfg, value in (("ours[shm]", 1.05), ("stock[shm]", 1.0 * slow)):
            runs.append({"config": cfg, "rep": rep, "rows": [
                {"metric": "lat_us", "op": "put", "size": 8, "value": value, "valid": True}]})
    lines = compare_report.paired_lines(compare_stats.by_round(runs), "ours[shm]",
                                        ["ours[shm]", "stock[shm]"])
    row = next(line for line in lines if line.startswith("| lat_us | put | 8 |"))
    assert row.startswith("| lat_us | put | 8 | 1.050 (1.050-1.050; 8) |"), row


def test_mode_medians_split_what_the_paired_window_mixes():
    """Modes 1.25x apart fall inside the paired window (2/3-3/2): a 0.95x configuration whose
    runs fell in the slow mode where the other's fell in the fast one has a paired median
    above 1, while paired.py's split by mode (MODE_SPLIT x the fastest value) gives 0.95 in
    each mode, with the count of each."""
    import statistics

    import paired

    a = [9.5] * 2 + [12.5 * 0.95] * 8       # 2 fast runs, 8 slow
    b = [10.0] * 8 + [12.5] * 2             # 8 fast, 2 slow
    assert statistics.median(x / y for x, y in zip(a, b)) > 1.0
    split = paired.mode_medians(a, b)
    assert (split["fast"][0], split["fast"][2], split["slow"][0], split["slow"][2]) == \
        (2, 8, 8, 2)
    for mode in ("fast", "slow"):
        _, med_a, _, med_b = split[mode]
        assert med_a / med_b == pytest.approx(0.95)


def test_machine_modes_count_the_slow_round_trips():
    """compare.py's machine-mode lines: a row beside a core round trip of at least SLOW_RTT x
    the least one ran in the slow mode, an outlier is OUTLIER x its configuration's median.
    ours has two slow runs, both beside slow round trips; stock one outlier beside a fast one;
    rows without a round trip (raw, hydra, across machines) and invalid rows are not counted."""
    import compare_report
    import compare_stats

    def row(value, rtt, valid=True, metric="lat_us"):
        return {"metric": metric, "op": "put", "size": 8, "value": value, "valid": valid,
                "rtt_ns": rtt}

    runs = [{"config": "ours[shm]", "rows": [row(0.6, 70)]} for _ in range(8)]
    runs += [{"config": "ours[shm]", "rows": [row(1.8, 330)]} for _ in range(2)]
    runs += [{"config": "stock[shm]", "rows": [row(0.6, 80)]} for _ in range(9)]
    runs += [{"config": "stock[shm]", "rows": [row(1.5, 90), row(9.0, 400, valid=False)]}]
    runs += [{"config": "raw[shm]", "rows": [row(0.5, None)]}]
    modes = compare_stats.machine_modes(runs)
    assert modes == {
        "ours[shm]": {"rows": 10, "slow": 2, "outliers": 2, "outliers_slow": 2},
        "stock[shm]": {"rows": 10, "slow": 0, "outliers": 1, "outliers_slow": 0}}, modes
    lines = compare_report.mode_lines(modes, ["ours[shm]", "stock[shm]", "raw[shm]"])
    assert lines[1:3] == [
        "- **ours[shm]**: 2 of 10 rows in the slow mode; 2 outliers, 2 of them in the slow mode",
        "- **stock[shm]**: 0 of 10 rows in the slow mode; 1 outliers, 0 of them in the slow "
        "mode"], lines
    assert compare_stats.machine_modes([{"config": "raw[shm]", "rows": [row(0.5, None)]}]) == {}
    assert compare_report.mode_lines({}, ["raw[shm]"]) == []


def test_compare_drops_the_page_cache_before_every_run(tmp_path, monkeypatch):
    """compare.py --drop-caches: the page cache is dropped (1 written to drop_caches) before
    each run, not once per comparison; without it nothing is written; where it cannot be
    written the option is refused with the reason. The report says it was dropped."""
    import argparse

    import compare_configs
    import compare_report
    import compare_runs

    target = tmp_path / "drop_caches"
    target.write_text("")
    monkeypatch.setattr(compare_runs, "DROP_CACHES", str(target))
    events = []
    real_drop = compare_runs.drop_page_cache

    def drop():
        real_drop()
        events.append(("drop", target.read_text()))

    def run(cmd, env, timeout):
        events.append(("run", Path(cmd[0]).name))
        return 0, "", "", 0.0

    monkeypatch.setattr(compare_runs, "drop_page_cache", drop)
    monkeypatch.setattr(compare_runs, "locked_run", run)
    cfg = compare_configs.Config("raw", "shm", "raw")
    mode = {"lat_sizes": "8", "bw_sizes": None, "lat_iters": "10", "bw_iters": "10",
            "rate_iters": "10", "budget": "1M"}
    paths = {"BTL_OFI_COMPONENT": "ofirma"}
    for drop_caches in (True, False):
        args = argparse.Namespace(drop_caches=drop_caches, bin_dir=str(tmp_path), timeout=5)
        for _ in range(2):
            compare_runs.run_one(cfg, "latency", mode, args, paths, {})
    assert events == [("drop", "1\n"), ("run", "ofi_rma_ref")] * 2 + \
        [("run", "ofi_rma_ref")] * 2, events

    monkeypatch.setattr(compare_runs, "drop_page_cache", real_drop)
    assert compare_runs.drop_caches_refused() is None
    monkeypatch.setattr(compare_runs, "DROP_CACHES", str(tmp_path / "no" / "such"))
    why = compare_runs.drop_caches_refused()
    assert why.startswith("--drop-caches: cannot write ") and why.endswith("it takes root"), why

    report = {"mode": "quick", "date": "d", "machine": "m", "command": "c", "reps": 2,
              "load": "l", "osc_ucx": "u", "providers": [], "targets": [], "stats_by_key": {}}
    line = "- the page cache dropped before every run (--drop-caches)"
    assert line not in compare_report.markdown(report, [])
    assert line in compare_report.markdown(dict(report, drop_caches=True), []).splitlines()
