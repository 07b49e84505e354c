"""An epoch per operation through btl-ofi (osc_harness/osc_latency -s lock / lock_excl):
MPI_Win_lock (shared or exclusive) on the peer, one put, get, fetch-and-op or
compare-and-swap on a MPI_Win_create window, MPI_Win_unlock, again and again, as some
one-sided libraries do (PERFORMANCE.md, "An epoch per operation"), under either of
osc/rdma's lock protocols (osc_rdma_locking_mode two_level or on_demand). Every row must be
exact and carried by btl-ofi (-r: exit 2 when its counters did not move), and the
program must say which epoch it timed.
"""

import json

import pytest

import launcher
import matrix

pytestmark = pytest.mark.reliability


def pytest_generate_tests(metafunc):
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


# two_level, osc/rdma's default, also takes a lock on rank 0 for an exclusive one (README,
# "Atomics across nodes: round trips")
@pytest.mark.parametrize("locking", ["two_level", "on_demand"])
@pytest.mark.parametrize("sync", ["lock", "lock_excl"])
def test_epoch_per_operation(provider, sync, locking, launches, harness_program, tmp_path):
    env = launcher.mpi_env()
    program = harness_program(provider, "osc_latency")
    argv = launcher.mpirun_argv(2, provider, program=program, native=True,
                                mca={"osc_rdma_locking_mode": locking},
                                program_args=["-s", sync, "-o", "put,get,fop,cas", "-S", "8",
                                              "-i", "200", "-j", "-r"])
    run = launcher.run_argv(argv, 120 * launches.scale, env, tmp_path)
    records = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert not run.timed_out and run.returncode == 0, \
        f"{provider} -s {sync}, {locking}: exit {run.returncode}" \
        f"{' (timeout)' if run.timed_out else ''}\n{' '.join(argv)}\n" \
        f"{run.stdout[-800:]}\n{run.stderr[-800:]}"
    meta = next(r for r in records if r.get("meta"))
    rows = [r for r in records if not r.get("meta")]
    assert meta["sync"] == sync and "epoch" in meta["what"], meta
    assert sorted(r["op"] for r in rows) == ["cas", "fop", "get", "put"], rows
    for row in rows:
        assert row["valid"] == "yes" and row["carried_by"] == "btl_ofi", f"{provider} -s {sync}: {row}"
