"""The strict memory-registration test provider (strictmr/) checks itself.

Before btl-ofi is judged on ofi_strictmr, the provider must show that every
rule it claims can trip: strictmr/tests/run_tests.py runs its plain-libfabric
test program (no MPI) over each core, MR-mode set and key size, with one
passing case per operation family and one provoked violation per rule, and
compares the provider's own violation report with what the cases provoked.
`make` (scripts/test.sh runs it first) builds both pieces in the checkout.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROVIDER_SO = REPO / "strictmr" / ".libs" / "libstrictmr-fi.so"
TEST_PROGRAM = REPO / "strictmr" / "tests" / "strictmr_test"
DRIVER = REPO / "strictmr" / "tests" / "run_tests.py"


def _failed_runs(output):
    """run_tests.py's FAIL lines, each with what it printed under it (why, the run's output):
    a failing run early in a long list would otherwise fall outside the message's tail."""
    keep, inside = [], False
    for line in output.splitlines():
        inside = line.startswith("FAIL ") or (inside and line.startswith("     "))
        if inside:
            keep.append(line)
    return "\n".join(keep)


@pytest.mark.parametrize("core", ["shm", "sockets", "tcp;ofi_rxm"])
def test_strict_provider_catches_every_rule(core):
    for built in (PROVIDER_SO, TEST_PROGRAM):
        assert built.exists(), f"{built} is missing: run make (scripts/test.sh does)"
    proc = subprocess.run([sys.executable, str(DRIVER), "--provider-so", str(PROVIDER_SO),
                           "--test", str(TEST_PROGRAM), "--provider", f"{core};ofi_strictmr"],
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    tally = re.search(r"run_tests: (\d+) runs, (\d+) failed", output)
    assert proc.returncode == 0 and tally and int(tally.group(1)) > 0 \
        and int(tally.group(2)) == 0, \
        f"{core};ofi_strictmr:\n{_failed_runs(output)[:8000]}\n...\n{output[-1500:]}"


# ---- the checker fails a BTL-style mistake (issue 13, item 4) -------------------
#
# The conformance rows on ofi_strictmr (matrix.STRICT_SETS) pass only with zero
# violations; these show that the same provider, installed beside btl-ofi,
# reports a violation when one happens, so that zero means something.

import json  # noqa: E402
import shutil  # noqa: E402

import check_sets  # noqa: E402
import launcher  # noqa: E402
import matrix  # noqa: E402
import outcome  # noqa: E402

STALE_KEY_SOURCES = sorted((REPO / "tools").glob("stale_key*.c"))  # the program and its parts
# btl-ofi's default hints without local/endpoint (tools/stale_key.c passes no desc
# and binds nothing): the strict provider must then judge keys alone.
KEY_ONLY_MODE = "virt_addr,allocated,prov_key"


def _violations(report_path):
    """Violations by rule, summed over the strict provider's report lines."""
    total = {}
    for line in report_path.read_text().splitlines():
        for rule, n in json.loads(line)["violations"].items():
            total[rule] = total.get(rule, 0) + n
    return {rule: n for rule, n in total.items() if n}


def _strict_env(tmp_path, mode, key_size=4):
    return {"FI_PROVIDER_PATH": str(matrix.strict_provider_dir()),
            "FI_OFI_STRICTMR_MR_MODE": mode, "FI_OFI_STRICTMR_KEY_SIZE": str(key_size),
            "FI_OFI_STRICTMR_REPORT": str(tmp_path / "strictmr.jsonl")}


def test_stale_key_tool_is_caught(tmp_path):
    """tools/stale_key.c writes and reads through the key of a closed
    registration: the strict provider fails each with FI_EKEYREJECTED and
    counts it as key_closed (shm itself never completes such an operation)."""
    cc = shutil.which("cc")
    assert cc, "no C compiler (cc) to build tools/stale_key*.c"
    exe = tmp_path / "stale_key"
    subprocess.run([cc, "-O1", *map(str, STALE_KEY_SOURCES), "-o", str(exe), "-lfabric"],
                   check=True, timeout=300)
    env = {**launcher.mpi_env(), **_strict_env(tmp_path, KEY_ONLY_MODE)}
    run = launcher.run_argv([str(exe), "--btl", "--json", "--probes", "stale_write,stale_read",
                             "shm;ofi_strictmr"], 300, env, tmp_path)
    assert not run.timed_out and run.returncode == 0, \
        f"stale_key exit {run.returncode}{' (timed out)' if run.timed_out else ''}: {run.stderr}"
    row = json.loads(run.stdout.splitlines()[0])
    for probe in ("stale_write", "stale_read"):
        record = row["probes"][probe]
        assert record["control"]["completion"] == "ok" and record["control_landed"], record
        assert record["probe"]["completion"] == "error" \
            and record["probe"]["errno"] == 129, record  # FI_EKEYREJECTED
        assert not record["target_memory_changed"], record
    assert _violations(tmp_path / "strictmr.jsonl") == {"key_closed": 2}


def test_btl_corrupted_keys_are_caught(tmp_path):
    """btl-ofi's debug fault injection corrupts the key of every 2nd put/get
    (btl_<c>_debug_inject_cq_error): on the verbs-like mode set the strict provider
    must reject those with error completions and count key_unknown, and
    btl-ofi must count the CQ errors."""
    plan = {"checks": [check_sets.op_check(op, "create_du8", "flush", "int64", 4)
                       for op in ("put", "get", "put", "get")]}
    env = _strict_env(tmp_path, "local,virt_addr,allocated,prov_key")
    launch = launcher.run_mpi(2, plan, 90, provider="shm;ofi_strictmr", workdir=tmp_path,
                              ours={"debug_inject_cq_error": "2"}, env_overrides=env)
    report = tmp_path / "strictmr.jsonl"
    assert report.exists(), f"no strict report:\n{launch.tail()}"
    found = _violations(report)
    assert found.get("key_unknown", 0) > 0 and set(found) == {"key_unknown"}, \
        f"violations {found}\n{launch.tail()}"
    cq_errors = sum(r["deltas"].get("cq_errors", 0) for r in outcome.records(launch, "check"))
    assert cq_errors > 0 or outcome.our_messages(launch), launch.tail()


# ---- every combination (issue 13, item 3), -m full ------------------------------

SERVED_BITS = ("local", "virt_addr", "allocated", "prov_key", "endpoint")
COMBINATIONS = [tuple(b for i, b in enumerate(SERVED_BITS) if mask >> i & 1)
                for mask in range(1 << len(SERVED_BITS))]
SMALL_PLAN = {"checks": [
    check_sets.op_check("put", "create_du8", "flush", "int64", 4),
    check_sets.op_check("get", "create_du8", "lock_shared", "int64", 4),
    check_sets.op_check("acc", "create_du8", "fence", "int64", 4, mpi_op="SUM"),
    check_sets.op_check("fop", "create_du8", "flush", "int64", 1, mpi_op="SUM"),
    check_sets.op_check("cas", "create_du8", "flush", "int64", 1)]}


@pytest.mark.full
@pytest.mark.parametrize("key_size", [2, 4, 8])
@pytest.mark.parametrize("bits", COMBINATIONS, ids=lambda b: "+".join(b) or "none")
def test_every_mr_combination(bits, key_size, tmp_path):
    """Each subset of the served bits, with 2-, 4- and 8-byte keys, demanded by
    ofi_strictmr over shm: btl-ofi negotiates exactly that, the checks are
    exact and moved our counters, and the provider saw no violation."""
    group = matrix.Group("shm;ofi_strictmr", "default", 2, "base", matrix.mr_label(set(bits)),
                         ("exactly", key_size))
    env = _strict_env(tmp_path, ",".join(bits) or "none", key_size)
    launch = launcher.run_mpi(2, SMALL_PLAN, 90, provider=group.provider, workdir=tmp_path,
                              env_overrides=env)
    launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [c["id"] for c in SMALL_PLAN["checks"]]).apply()
    for spec in SMALL_PLAN["checks"]:
        outcome.judge_check(launch, group, spec).apply()


# ---- stale handles located under NIC-like modes (issue 24) -----------------------
#
# btl-ofi asks a peer which registration covers an access whose handle does not
# (NOTES.txt section 3c) with messages: under FI_MR_LOCAL its receive buffers are
# registered and a message too large to inject (the 72-byte answer over
# tcp;ofi_rxm, whose inject size is 64) is sent from a registered copy. Every
# 2nd access takes its handle as stale here; the strict provider must see no
# violation and every question must be answered and used.

STALE_PLAN = {"checks": SMALL_PLAN["checks"] + [check_sets.make_check("dynamic_regions", "fast",
                                                                      count=9)]}


@pytest.mark.parametrize("core", ["shm", "tcp;ofi_rxm"])
@pytest.mark.parametrize("mode", ["verbs-like", "efa-like", "cxi-like"])
def test_stale_handles_located_on_nic_modes(core, mode, tmp_path):
    bits = matrix.STRICT_SETS[mode]
    group = matrix.Group(f"{core};ofi_strictmr", "default", 2, "stale",
                         matrix.mr_label(set(bits)), (mode, 2))
    _stale_run(group, _strict_env(tmp_path, ",".join(bits), 2), tmp_path)


def _stale_run(group, env, tmp_path):
    launch = launcher.run_mpi(2, STALE_PLAN, 120, provider=group.provider, workdir=tmp_path,
                              ours=matrix.VARIANTS["stale"], env_overrides=env)
    launch.strict_report = tmp_path / "strictmr.jsonl"
    # each located access waits for the target's answer before the next: on a profile with
    # its own progress the caller's reads can reap everything before the thread wakes
    launch.one_at_a_time = True
    outcome.judge_group(launch, group, [c["id"] for c in STALE_PLAN["checks"]]).apply()
    for spec in STALE_PLAN["checks"]:
        outcome.judge_check(launch, group, spec).apply()


# The same on the NIC profiles (their threads, queues, reordering and transmit-only
# completion at once). Until ofi_strictmr took the engine's own additions (automatic progress,
# its queue sizes) out of the hints it passes to the core, the cxi- and verbs-like profiles
# offered no info when asked again with FI_MSG, and there an access whose handle did not
# cover it was refused instead of located (NOTES.txt section 6). Reordering is left off and the
# profile's own progress thread is not asked to have reaped anything: these checks wait for
# most operations before the next, and test_nic_profiles.py asks both of the programs that
# keep many in flight.
@pytest.mark.parametrize("core", ["shm", "tcp;ofi_rxm"])
@pytest.mark.parametrize("profile", sorted(matrix.STRICT_PROFILES))
def test_stale_handles_located_on_nic_profiles(core, profile, tmp_path):
    group = matrix.profile_group(core, profile, 2, "stale")
    _stale_run(group, dict(group.env(tmp_path), FI_OFI_STRICTMR_REORDER="0"), tmp_path)
