"""btl-ofi's registration cache of local buffers (issue 25 item 5; NOTES.txt 3d).

Under FI_MR_LOCAL (ofi_strictmr's verbs-like mode here, as verbs and efa ask)
osc/rdma registers the source of every put above its fragment size through
btl_register_mem and deregisters it at completion. rank_rcache.py puts 64 KiB
from one buffer REPEAT times, then unmaps it, maps new pages at the same
address and puts once more; the neighbour checks the new bytes arrived. From
btl-ofi's MPI_T counters, per rank:
  cache on (default):  the repeated puts registered once and hit after that;
                       the munmap made the cache forget the registration;
                       the put from the new pages registered anew (a miss,
                       no hit: on a NIC the old registration still pins the
                       old pages);
  btl_<c>_rcache_size=0: every put registers (the cost the cache saves).
Without FI_MR_LOCAL (the plain providers) a buffer only this process touches
needs no registration at all (fi_mr(3)): no fi_mr_reg for the local buffers.
Every launch must be exact, carried by btl-ofi, and (strict rows) free of
violations.
"""

import json
import re

import pytest

import launcher
import matrix
import outcome

SIZE = 65536   # above osc_rdma_buffer_size (32 KiB): osc/rdma registers the source
REPEAT = 8
CHECK = {"kind": "rcache", "id": f"rcache/{SIZE}x{REPEAT}", "size": SIZE, "repeat": REPEAT}
PLAN = {"checks": [CHECK]}
STRICT_MODE = "verbs-like"
LINE = re.compile(r"RCACHE (\S+) rank (\d+): ")


def _phases(launch):
    """{rank: {"repeat": {...}, "unmap": {...}, "remap": {...}}} from the ranks' lines
    (decoded from where each starts: two ranks' lines can run together)."""
    found = {}
    decoder = json.JSONDecoder()
    for m in LINE.finditer(launch.stderr):
        if m.group(1) == CHECK["id"]:
            found[int(m.group(2))] = decoder.raw_decode(launch.stderr, m.end())[0]
    return found


def _run(provider, tmp_path, strict, ours):
    bits = matrix.STRICT_SETS[STRICT_MODE] if strict else None
    group = matrix.Group(provider, "default", 2, "base",
                         matrix.mr_label(set(bits)) if strict else matrix.negotiated_label(provider),
                         (STRICT_MODE, 4) if strict else None)
    env = group.env(tmp_path) if strict else None
    launch = launcher.run_mpi(2, PLAN, 120, provider=provider, workdir=tmp_path, ours=ours,
                              env_overrides=env)
    if strict:
        launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [CHECK["id"]]).apply()
    outcome.assert_check_clean(launch, CHECK["id"])
    phases = _phases(launch)
    assert sorted(phases) == [0, 1], f"ranks' RCACHE lines: {sorted(phases)}\n{launch.tail()}"
    return launch, phases


@pytest.mark.parametrize("core", ["shm", "tcp;ofi_rxm"])
def test_cache_hits_and_forgets_unmapped_memory(core, tmp_path):
    launch, phases = _run(f"{core};ofi_strictmr", tmp_path, True, {})
    problems = []
    for rank, p in sorted(phases.items()):
        rep, unmap, remap = p["repeat"], p["unmap"], p["remap"]
        if not (rep["rcache_misses"] >= 1 and rep["rcache_hits"] >= REPEAT - 1):
            problems.append(f"rank {rank}: {REPEAT} puts from one buffer: {rep} (expected one "
                            f"miss, then hits)")
        if rep["registrations"] > 1:
            problems.append(f"rank {rank}: {REPEAT} puts from one buffer made "
                            f"{rep['registrations']} registrations (expected 1)")
        if unmap["rcache_invalidated"] < 1:
            problems.append(f"rank {rank}: munmap of a cached buffer: {unmap} (the cache did not "
                            f"forget it)")
        if remap["rcache_hits"] != 0 or remap["rcache_misses"] < 1:
            problems.append(f"rank {rank}: the put from new pages at the old address: {remap} "
                            f"(a hit would use the stale registration)")
    assert not problems, "\n".join(problems) + f"\n  {launch.command_line()}"


@pytest.mark.parametrize("core", ["shm", "tcp;ofi_rxm"])
def test_cache_off_registers_every_time(core, tmp_path):
    launch, phases = _run(f"{core};ofi_strictmr", tmp_path, True, {"rcache_size": "0"})
    problems = [f"rank {rank}: rcache_size=0: {p['repeat']} (expected {REPEAT} registrations, "
                f"no cache traffic)"
                for rank, p in sorted(phases.items())
                if p["repeat"]["registrations"] < REPEAT or p["repeat"]["rcache_hits"]
                or p["repeat"]["rcache_misses"]]
    assert not problems, "\n".join(problems) + f"\n  {launch.command_line()}"


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_no_registration_without_mr_local(provider, launches, tmp_path):
    state, reason = launches.provider_status(provider)
    if state == "declined":
        pytest.skip(f"btl-ofi does not serve {provider}: {reason}")
    launch, phases = _run(provider, tmp_path, False, {})
    problems = [f"rank {rank}: {p['repeat']} (without FI_MR_LOCAL a local buffer needs no "
                f"fi_mr_reg)" for rank, p in sorted(phases.items())
                if p["repeat"]["registrations"] or p["repeat"]["rcache_misses"]]
    assert not problems, "\n".join(problems) + f"\n  {launch.command_line()}"
