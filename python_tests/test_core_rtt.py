"""osc_latency -c (osc_harness/core_rtt.c): a cache line's round trip between the two ranks'
cores, timed before and after every row through a page both map, with no MPI call in
between. compare.py reads it to tell the machine's slow mode from a configuration's own
(PERFORMANCE.md, its opening). Per provider, on one node: every row still exact and carried by
btl-ofi (-r), each round trip a time above zero and below a millisecond; without -c the rows
carry no round trip.
"""

import json

import pytest

import launcher
import matrix

pytestmark = pytest.mark.reliability


def pytest_generate_tests(metafunc):
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


def _rows(provider, launches, harness_program, tmp_path, extra):
    program = harness_program(provider, "osc_latency")
    argv = launcher.mpirun_argv(2, provider, program=program, native=True,
                                program_args=extra + ["-o", "put,fop", "-S", "8", "-i", "200",
                                                      "-j", "-r"])
    run = launcher.run_argv(argv, 120 * launches.scale, launcher.mpi_env(), tmp_path)
    assert not run.timed_out and run.returncode == 0, \
        f"{provider}: exit {run.returncode}{' (timeout)' if run.timed_out else ''}\n" \
        f"{' '.join(map(str, argv))}\n{run.stdout[-800:]}\n{run.stderr[-800:]}"
    records = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    meta = next(r for r in records if r.get("meta"))
    assert meta["pair_one_node"], meta
    rows = [r for r in records if not r.get("meta")]
    assert sorted(r["op"] for r in rows) == ["fop", "put"], rows
    for row in rows:
        assert row["valid"] == "yes" and row["carried_by"] == "btl_ofi", f"{provider}: {row}"
    return rows


def test_round_trip_beside_every_row(provider, launches, harness_program, tmp_path):
    for row in _rows(provider, launches, harness_program, tmp_path, ["-c"]):
        for key in ("rtt_before_ns", "rtt_after_ns"):
            assert 0 < row[key] < 1e6, f"{provider}: {key} {row[key]} ns per round trip: {row}"


def test_no_round_trip_without_c(provider, launches, harness_program, tmp_path):
    for row in _rows(provider, launches, harness_program, tmp_path, []):
        assert "rtt_before_ns" not in row and "rtt_after_ns" not in row, row
