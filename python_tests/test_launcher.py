"""The launcher's own behaviour (no MPI): MCA parameters for every mpirun
(--mca / BTL_OFI_TEST_MCA), the output cap of run_argv, a job ended with the run that an
interruption ends, and the removal of the /dev/shm files an aborted job leaves."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import launcher
import shm_files


def mca_pairs(argv):
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--mca"]


def test_extra_mca_reaches_every_mpirun(monkeypatch):
    monkeypatch.setenv("BTL_OFI_TEST_MCA", "osc_rdma_acc_single_intrinsic=true mpi_leave_pinned=0")
    pairs = mca_pairs(launcher.mpirun_argv(2, program="x", native=True))
    assert ("osc_rdma_acc_single_intrinsic", "true") in pairs
    assert ("mpi_leave_pinned", "0") in pairs


def test_a_tests_own_value_wins(monkeypatch):
    monkeypatch.setenv("BTL_OFI_TEST_MCA", "mpi_yield_when_idle=0")
    pairs = mca_pairs(launcher.mpirun_argv(2, mca={"mpi_yield_when_idle": 1}, program="x",
                                           native=True))
    assert [v for k, v in pairs if k == "mpi_yield_when_idle"] == ["1"]


@pytest.mark.parametrize("bad", ["novalue", "=true", "a-b=1"])
def test_malformed_extra_mca_is_refused(monkeypatch, bad):
    monkeypatch.setenv("BTL_OFI_TEST_MCA", bad)
    with pytest.raises(RuntimeError, match="not NAME=VALUE"):
        launcher.mpirun_argv(2, program="x", native=True)


def test_flood_is_stopped_and_its_ends_kept(tmp_path):
    prog = "import sys\nfor i in range(10**7): sys.stdout.write(f'line {i}\\n')\nprint('end')"
    run = launcher.run_argv([sys.executable, "-c", prog], 60, None, str(tmp_path),
                            take_lock=False, max_output=1 << 20)
    assert run.flooded and not run.timed_out and run.returncode is None
    assert run.stdout.startswith("line 0\n")
    assert "bytes left out ..." in run.stdout
    assert len(run.stdout) < 1 << 20
    assert run.seconds < 30


def test_quiet_run_is_kept_whole(tmp_path):
    run = launcher.run_argv([sys.executable, "-c", "print('a'); import sys; sys.exit(3)"], 60,
                            None, str(tmp_path), take_lock=False, max_output=1 << 20)
    assert (run.returncode, run.stdout, run.flooded) == (3, "a\n", False)


def _alive(pid):
    """Whether pid runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("capped", [False, True], ids=["whole", "capped"])
def test_a_terminated_run_ends_its_job(tmp_path, capped):
    """SIGTERM to the process that waits (a CI job's timeout) ends the job too: it runs in a
    session of its own, which the signal does not reach."""
    pidfile = tmp_path / "job.pid"
    job = ["bash", "-c", f"sleep 300 & echo $! > {pidfile}; wait"]
    prog = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import launcher\n"
            f"launcher.end_jobs_on_sigterm()\n"
            f"launcher.run_argv({job!r}, 600, None, {str(tmp_path)!r}, take_lock=False, "
            f"max_output={1 << 20 if capped else None})")
    waiter = subprocess.Popen([sys.executable, "-c", prog], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert waiter.poll() is None and time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    sleeper = int(pidfile.read_text())
    try:
        waiter.send_signal(signal.SIGTERM)
        assert waiter.wait(timeout=30) != 0
        deadline = time.monotonic() + 10
        while _alive(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(sleeper), "the job outlived the run that started it"
    finally:
        if _alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)


def test_files_of_ended_processes_are_removed_and_live_ones_kept():
    before = shm_files.shm_names()
    child = subprocess.Popen(["true"])
    child.wait()
    dead = Path(f"/dev/shm/btl-ofi.{child.pid}.0:0:0")
    live = Path(f"/dev/shm/btl-ofi.{os.getpid()}.0:0:0")
    try:
        dead.write_bytes(b"")
        live.write_bytes(b"")
        removed = shm_files.remove_shm_files_since(before, wait=0.2)
        assert dead.name in removed and not dead.exists()
        assert live.exists() and live.name not in removed
    finally:
        dead.unlink(missing_ok=True)
        live.unlink(missing_ok=True)
