"""Reliability checks of btl-ofi beyond single operations, per provider:

- flush means "visible at the target" in every safe completion mode
  (osc_flush_visibility; btl_ofi_completion=local is the unsafe control and is
  only reported, since whether a race shows up in a given run is chance);
- the fast set of scripts/check-stress.sh: seeded random RMA/atomic mixes
  checked against a model, fault injection, forced atomic emulation, soak,
  MPI_THREAD_MULTIPLE, 10 consecutive jobs;
- osc/rdma's accumulate lock under contention in every completion mode
  (osc/rdma releases that lock from a put's completion callback, so a put
  callback that fires before the data landed loses updates);
- endurance (opt-in, -m endurance): N consecutive 2-rank jobs, N from
  --endurance-jobs (50 by default, as the BTL issue asks).

Every program here checks that btl-ofi's own counters moved: a run carried by
another component fails.
"""

import re
from pathlib import Path

import pytest

import check_sets
import launcher
import matrix

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.reliability


def pytest_generate_tests(metafunc):
    """One case per provider under test (conftest: --provider, discovery)."""
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


def _served(launches, provider):
    state, reason = launches.provider_status(provider)
    if state == "declined":
        pytest.skip(f"btl-ofi does not serve {provider}: {reason}")


def _libexec(env):
    path = env.get("BTL_OFI_LIBEXECDIR")
    if not path or not Path(path, "osc_flush_visibility").exists():
        pytest.fail(f"osc_flush_visibility not installed in {path!r}: run 'make install'",
                    pytrace=False)
    return path


def _visibility(provider, completion, tmp_path, size, rounds, timeout):
    env = launcher.mpi_env()
    program = Path(_libexec(env), "osc_flush_visibility")
    argv = launcher.mpirun_argv(2, provider, ours={"completion": completion},
                                program=program, program_args=[str(size), str(rounds)],
                                native=True)
    return launcher.run_argv(argv, timeout, env, tmp_path)


@pytest.mark.parametrize("completion", ["auto", "read_proof"])
def test_flush_means_visible(provider, launches, completion, tmp_path):
    _served(launches, provider)
    run = _visibility(provider, completion, tmp_path, 16 << 20, 30, 180)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("size=")), "")
    assert not run.timed_out and run.returncode == 0 and " stale=0 " in f" {line} ", \
        f"{provider} completion={completion}: exit {run.returncode}" \
        f"{' (timeout)' if run.timed_out else ''}: {line or run.stderr[-600:]}"


def test_unsafe_control_is_reported(provider, launches, tmp_path, capsys):
    """completion=local (debug) waits for local completion only: stale rounds
    may show on a provider without delivery-complete semantics. Reported, not
    asserted (a race does not have to show in a given run); on Open MPI 4.1 the
    run must still exit normally and be carried by btl-ofi. Open MPI 5's
    osc/rdma uses a BTL directly only if it claims remote completion, which
    this mode does not: there the control must NOT be carried by btl-ofi (it
    runs exactly over osc/rdma's active-message path instead)."""
    _served(launches, provider)
    run = _visibility(provider, "local", tmp_path, 16 << 20, 30, 180)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("size=")), "")
    if launcher.ompi_major() >= 5:
        assert not run.timed_out and run.returncode == 2 and "NOT CARRIED" in line \
            and " stale=0 " in f" {line} ", \
            f"{provider}: Open MPI 5 used a BTL claiming no remote completion, or the " \
            f"fallback was not exact: exit {run.returncode}: {line or run.stderr[-600:]}"
    else:
        assert not run.timed_out and run.returncode in (0, 1), \
            f"{provider}: control run failed: exit {run.returncode}: {run.stderr[-600:]}"
        assert line and "NOT CARRIED" not in line, f"{provider}: {line or run.stderr[-600:]}"
    with capsys.disabled():
        print(f"\nunsafe completion=local control, {provider}: {line}")


def test_stress_fast(provider, launches, tmp_path):
    """scripts/check-stress.sh (fast set) on this provider."""
    _served(launches, provider)
    env = launcher.mpi_env()
    env["BTL_OFI_ENV_FILE"] = launcher.env_file_path()
    argv = ["bash", str(REPO / "scripts" / "check-stress.sh"), "--log-dir", str(tmp_path),
            provider]
    # the driver takes the MPI lock for each of its own mpiruns
    run = launcher.run_argv(argv, 600, env, tmp_path, take_lock=False)
    summary = run.stdout[run.stdout.rfind("== check-stress summary"):]
    assert not run.timed_out and run.returncode == 0, \
        f"check-stress failed (exit {run.returncode}):\n{summary or run.stdout[-3000:]}\n" \
        f"{run.stderr[-2000:]}"
    assert "check-stress: all passed" in run.stdout, summary


CONTENTION_ROUNDS = 3
CONTENTION_REPEAT = 2000


@pytest.mark.parametrize("completion", ["auto", "read_proof"])
def test_accumulate_lock_contention(provider, launches, completion, tmp_path):
    """3 ranks each Accumulate(SUM) 64 int32 into the same elements of rank 0,
    2000 times per round, 3 rounds: osc/rdma does get + op + put under its
    accumulate lock and releases the lock when the put's completion callback
    runs (on one node the lock word sits in a shared segment, so the release
    is visible at once). Before btl-ofi held put callbacks back until a read proved the put
    landed (read_proof mode), 3 of 6 such rounds on shm lost between 1 and
    1999 updates per element; with delivery-complete (auto) none did."""
    _served(launches, provider)
    checks = [dict(check_sets.make_check("acc_atomic", "fast", flavor_name="create_du8",
                                         dtype="int32", count=64, repeat=CONTENTION_REPEAT),
                   id=f"acc_contention/round{r}") for r in range(CONTENTION_ROUNDS)]
    run = launcher.run_mpi(3, {"checks": checks}, 120 * launches.scale, provider=provider,
                           ours={"completion": completion}, workdir=tmp_path)
    results = [r for r in run.records if r.get("type") == "check"]
    assert not run.timed_out and run.returncode == 0 and len(results) == CONTENTION_ROUNDS, \
        f"{provider} completion={completion}: exit {run.returncode}" \
        f"{' (timeout)' if run.timed_out else ''}, {len(results)} rounds reported\n" \
        f"{run.command_line()}\n{run.tail()}"
    for rec in results:
        assert rec["n_errors"] == 0, \
            f"{provider} completion={completion} {rec['id']}: updates lost: {rec['errors'][:3]}"
        deltas = rec["deltas"]
        # the data moves with BTL get + put (on one node osc/rdma keeps its lock
        # words in a shared segment and takes them with CPU atomics)
        assert deltas.get("get_count", 0) > 0 and deltas.get("put_count", 0) > 0, \
            f"{provider} {rec['id']}: not carried by btl-ofi (counters {deltas})"


@pytest.mark.endurance
def test_endurance(provider, launches, tmp_path, request):
    _served(launches, provider)
    jobs = request.config.getoption("--endurance-jobs")
    env = launcher.mpi_env()
    env["BTL_OFI_ENV_FILE"] = launcher.env_file_path()
    argv = ["bash", str(REPO / "scripts" / "endurance.sh"), str(jobs), provider]
    run = launcher.run_argv(argv, 60 + 30 * jobs, env, tmp_path, take_lock=False)
    assert not run.timed_out and run.returncode == 0, \
        f"endurance failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    assert re.search(rf"^{re.escape(provider)}\s+{jobs} jobs\s+0 failed", run.stdout, re.M), \
        run.stdout


def _ref(tmp_path, *args):
    env = launcher.mpi_env()
    program = Path(_libexec(env), "ofi_rma_ref")
    return launcher.run_argv([str(program), "-p", "shm", "-t", "atomic_rate", "-o", "acc,fop",
                              "-W", "8", "-i", "1000", "-T", "120", *args], 150, env, tmp_path)


def test_shm_nonfetching_atomics_posted_as_fetching(launches, tmp_path):
    """shm with delivery-complete (libfabric 1.17 and 2.1) releases the inject
    buffer of a non-fetching atomic twice, once at the target after applying it
    and once at the origin on the delivery response, so two later operations to
    that target can get the same buffer (NOTES.txt section 8). Shown without
    MPI by ofi_rma_ref: an acc row with fi_atomic (-A) and then a fop row with 8
    in flight leaves a wrong count. btl-ofi, and the reference by default, post
    non-fetching atomics there as fetching ones, which are released once: both
    rows are exact. The component says so on shm."""
    _served(launches, "shm")
    bug = _ref(tmp_path, "-A")
    assert not bug.timed_out and bug.returncode == 1 and "in the target word" in bug.stderr, \
        "shm's fi_atomic with delivery-complete no longer corrupts the next fetch-and-op " \
        f"(exit {bug.returncode}): this libfabric may be fixed, and btl-ofi's rule " \
        f"(btl_ofi_atomics.c, mca_btl_ofi_nofetch_needs_fetch) could be narrowed:\n{bug.stderr[-600:]}"
    fixed = _ref(tmp_path)
    rows = [ln.split() for ln in fixed.stdout.splitlines() if ln.strip().startswith("atomic_rate")]
    assert not fixed.timed_out and fixed.returncode == 0 and len(rows) == 2 and \
        all("yes" in r and "fi_fetch_atomic" in r for r in rows), \
        f"acc as fi_fetch_atomic on shm: exit {fixed.returncode}\n{fixed.stdout}{fixed.stderr[-600:]}"

    env = launcher.mpi_env()
    argv = launcher.mpirun_argv(2, "shm", program=Path(_libexec(env), "osc_demo"), native=True)
    run = launcher.run_argv(argv, 120, env, tmp_path)
    said = [ln for ln in run.stderr.splitlines() + run.stdout.splitlines()
            if "non-fetching atomics are posted as fetching ones" in ln]
    assert run.returncode == 0 and "PASSED" in run.stdout and len(said) == 2, \
        f"osc_demo on shm: exit {run.returncode}, {len(said)} of 2 ranks said they post " \
        f"non-fetching atomics as fetching:\n{run.stdout[-800:]}{run.stderr[-800:]}"
