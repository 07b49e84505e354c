"""btl-ofi on ofi_strictmr's NIC profiles (issue 25; strictmr/README.md "Profiles").

FI_OFI_STRICTMR_PROFILE makes the strict provider behave like a NIC family at
once: its MR mode and key size, and what the local cores never do (apply and
complete operations out of order, progress on their own, refuse posts beyond
a small queue, complete at transmit only, lack atomics, charge for each
registration). Per profile x core (shm, tcp;ofi_rxm) this runs the harness
programs through btl-ofi: osc_stress (2 ranks; 3 ranks over create, dynamic
and allocate windows), a short osc_soak, osc_threads (MPI_THREAD_MULTIPLE)
and osc_flush_visibility. Each must exit 0 with its own exact-result checks
passed and btl-ofi's counters moved (the programs exit 2 otherwise). From the
provider's report: no MR violation, no completion overrun (cq_full), no
operation the emulated NIC lacks (op_refused: btl-ofi must not post one),
and every behaviour the profile turns on must have happened (its event
counter moved) -- so a profile that did nothing fails. osc_threads and
osc_flush_visibility complete each operation before they post the next, so
reordering and the provider thread's reaping are asked only of the other
programs (and of the conformance rows).

The conformance fast slice runs on the profiles too (matrix.strict_groups).
"""

import random
from pathlib import Path

import pytest

import launcher
import matrix
import outcome

pytestmark = pytest.mark.reliability

PROGRAMS = {  # name -> (ranks, program, arguments, timeout)
    "stress2": (2, "osc_stress", ["-e", "8"], 240),
    "stress3": (3, "osc_stress", ["-e", "6", "-f", "create,dynamic,allocate"], 300),
    "soak": (2, "osc_soak", ["-n", "20000", "-k", "1000", "-r", "3"], 240),
    "threads": (2, "osc_threads", ["-t", "4", "-i", "100"], 240),
    "visibility": (2, "osc_flush_visibility", [str(4 << 20), "20"], 240),
}
# Programs that complete each operation before they post the next: nothing to reorder.
ONE_AT_A_TIME = {"threads", "visibility"}


def _program_args(name, seed):
    nranks, prog, args, timeout = PROGRAMS[name]
    if prog == "osc_stress":
        args = ["-s", str(seed)] + args
    return nranks, prog, args, timeout


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("core", matrix.STRICT_CORES)
@pytest.mark.parametrize("profile", list(matrix.STRICT_PROFILES))
def test_profile(profile, core, program, tmp_path):
    env = launcher.mpi_env()
    libexec = env.get("BTL_OFI_LIBEXECDIR", "")
    seed = random.randrange(1 << 30)
    nranks, prog, args, timeout = _program_args(program, seed)
    exe = Path(libexec, prog)
    assert exe.exists(), f"{exe} missing: run make install"
    report = tmp_path / "strictmr.jsonl"
    env.update(matrix.profile_env(profile, report))
    argv = launcher.mpirun_argv(nranks, f"{core};ofi_strictmr", program=exe, program_args=args,
                                native=True, forward=sorted(k for k in env if k.startswith("FI_")))
    run = launcher.run_argv(argv, timeout, env, tmp_path)
    where = f"profile {profile} over {core}: {prog} {' '.join(args)}"
    out = run.stdout + run.stderr
    assert not run.timed_out, f"{where}: timeout after {timeout}s\n{out[-3000:]}"
    assert run.returncode == 0, f"{where}: exit {run.returncode} (2: not carried by btl-ofi)" \
                                f"\n{out[-3000:]}"
    if prog == "osc_flush_visibility":
        line = next((ln for ln in run.stdout.splitlines() if ln.startswith("size=")), "")
        assert " stale=0 " in f" {line} ", f"{where}: {line or out[-2000:]}"
    else:
        assert "RESULT PASSED" in run.stdout, f"{where}: no RESULT PASSED\n{out[-3000:]}"
    run.strict_report = report
    lines = len(report.read_text().splitlines()) if report.exists() else 0
    assert lines >= nranks, f"{where}: {lines} report lines from {nranks} ranks ({report})"
    checked, violations = outcome.strict_report(run)
    problems = [f"MR violations {violations}"] if violations else []
    problems += outcome.profile_problems(*outcome.strict_events(run),
                                         one_at_a_time=program in ONE_AT_A_TIME)
    assert not problems, f"{where}: " + "; ".join(problems)


# ---- tight queues: 4 transmits, 4 receives, a CQ of 16 (issue 25 item 1) ----------------
#
# The profiles' own queue sizes (384, 1024) are limits a 2-rank run may never reach; these
# runs make the provider refuse posts beyond 4 (-FI_EAGAIN, as a full NIC queue does) and
# hold 16 completions, over the reordering efa-like profile: btl-ofi must retry, never
# overrun the CQ, and stay exact.

TIGHT = {"FI_OFI_STRICTMR_TX_SIZE": "4", "FI_OFI_STRICTMR_RX_SIZE": "4",
         "FI_OFI_STRICTMR_CQ_SIZE": "16"}


@pytest.mark.parametrize("program", ["stress2", "soak"])
@pytest.mark.parametrize("core", matrix.STRICT_CORES)
def test_tight_queues(core, program, tmp_path):
    env = launcher.mpi_env()
    seed = random.randrange(1 << 30)
    nranks, prog, args, timeout = _program_args(program, seed)
    exe = Path(env.get("BTL_OFI_LIBEXECDIR", ""), prog)
    report = tmp_path / "strictmr.jsonl"
    env.update(matrix.profile_env("efa-like", report))
    env.update(TIGHT)
    argv = launcher.mpirun_argv(nranks, f"{core};ofi_strictmr", program=exe, program_args=args,
                                native=True, forward=sorted(k for k in env if k.startswith("FI_")))
    run = launcher.run_argv(argv, timeout, env, tmp_path)
    where = f"efa-like, queues of 4 over {core}: {prog} {' '.join(args)}"
    out = run.stdout + run.stderr
    assert not run.timed_out and run.returncode == 0 and "RESULT PASSED" in run.stdout, \
        f"{where}: exit {run.returncode}{' (timeout)' if run.timed_out else ''}\n{out[-3000:]}"
    run.strict_report = report
    events, settings = outcome.strict_events(run)
    assert settings.get("tx_size") == 4 and settings.get("cq_size") == 16, settings
    problems = outcome.profile_problems(events, settings)
    if not events.get("tx_eagain", 0):
        problems.append("no post met a full transmit queue (tx_eagain 0): the row tested "
                        "nothing")
    assert not problems, f"{where}: " + "; ".join(problems)
