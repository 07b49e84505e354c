"""A shared-memory region left in /dev/shm under this process's id (NOTES.txt section 8).

libfabric's shm (1.17 and 2.x) names an endpoint's region after the process id unless the
endpoint is given a name ("<pid>:<uid>:<n>" in /dev/shm). A process killed with SIGKILL, or
one that exits with its fabric still open, leaves that file behind, and the next process
the kernel hands the same pid cannot open a shm endpoint: fi_enable fails with EBUSY (the
region names a live process: this one). btl-ofi then declined on that rank ("could not set
up its libfabric resources ... fi_enable ... Device or resource busy"), and Open MPI went on
without it. Seen in CI on 2026-11-27 after crash experiments had left about 590 such files.

Each rank here puts such files under its own pid for its first endpoints before MPI starts
(rank_prog.py's plan "stale_shm_regions"): btl-ofi must still be selected on every rank,
carry the traffic and get exact results, because it names its shm endpoints itself. The
files planted are removed afterwards."""

import pytest

import check_sets
import launcher
import matrix
import outcome
import shm_files

pytestmark = pytest.mark.reliability

PLAN = {"checks": [check_sets.op_check("put", "create_du8", "fence", "int64", 8),
                   check_sets.op_check("fop", "create_du8", "lock_all", "int64", 1, mpi_op="SUM")],
        "stale_shm_regions": 4}


def _groups():
    efa = matrix.STRICT_SETS["efa-like"]
    return {"shm": matrix.Group("shm", "default", 2, "base"),
            # through ofi_strictmr, which must pass the endpoint's name down to shm
            "strictmr-shm": matrix.Group("shm;ofi_strictmr", "default", 2, "base",
                                         matrix.mr_label(set(efa)), ("efa-like", 2))}


@pytest.mark.parametrize("name", sorted(_groups()))
def test_region_left_under_own_pid(name, tmp_path):
    group = _groups()[name]
    if group.strict and not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    launch = launcher.run_mpi(2, PLAN, 120, provider=group.provider, workdir=tmp_path,
                              env_overrides=group.env(tmp_path))
    if group.strict:
        launch.strict_report = tmp_path / "strictmr.jsonl"
    try:
        outcome.judge_group(launch, group, [c["id"] for c in PLAN["checks"]]).apply()
        for spec in PLAN["checks"]:
            outcome.judge_check(launch, group, spec).apply()
        assert "Device or resource busy" not in launch.stderr, launch.tail()
    finally:
        shm_files.remove_shm_files(launch.rank_pids())
