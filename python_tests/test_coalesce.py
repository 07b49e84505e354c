"""Small-put coalescing (btl_<component>_put_coalesce), per provider.

3 ranks; each puts 300 pieces of 1 B to 5000 B into both others at scattered
offsets, a flush every 64, on a Win.Create and a Win.Create_dynamic window,
and checks its whole window byte for byte (rank_concurrency.scatter_puts_check).
Per setting of btl_<component>_put_coalesce:
  1     gathered on every provider: put_gathered and put_batches moved, and
        every batch sent was applied by a peer (put_batches_applied);
  0     never: put_gathered and put_batches stay 0;
  auto  (the default) gathered on tcp and tcp;ofi_rxm only.
The data must be exact in every case, and the run carried by btl-ofi.
"""

import pytest

import launcher
import matrix
import outcome

NRANKS = 3
CHECKS = [{"kind": "scatter_puts", "id": f"scatter_puts/{flavor}/300x64", "count": 300,
           "per_flush": 64, "flavor": flavor} for flavor in ("create", "dynamic")]
SETTINGS = {"1": {"put_coalesce": "1"}, "0": {"put_coalesce": "0"}, "auto": {}}


def pytest_generate_tests(metafunc):
    """One case per provider under test (conftest: --provider, discovery)."""
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


def _gathers(provider, setting):
    if setting == "auto":
        return provider.split(";")[0] == "tcp"
    return setting == "1"


def _problems(rec, provider, setting):
    problems = list(rec["errors"])
    d = rec["deltas"]
    pieces = NRANKS * (NRANKS - 1) * 300
    if d.get("put_count", 0) < pieces:
        problems.append(f"{launcher.param('put_count')} moved by {d.get('put_count', 0)}, "
                        f"expected >= {pieces} (not carried by btl-ofi?)")
    gathered, sent, applied = (d.get(k, 0) for k in
                               ("put_gathered", "put_batches", "put_batches_applied"))
    if _gathers(provider, setting):
        if not (gathered > 0 and sent > 0):
            problems.append(f"put_coalesce={setting} on {provider}: put_gathered={gathered}, "
                            f"put_batches={sent}: nothing was gathered")
        if applied != sent:
            problems.append(f"{sent} batches sent but {applied} applied by the peers")
    elif gathered or sent or applied:
        problems.append(f"put_coalesce={setting} on {provider}: put_gathered={gathered}, "
                        f"put_batches={sent}, put_batches_applied={applied}: expected none")
    return problems


# "1" first: the default slice runs a test's first case, and "1" gathers on every provider,
# so that a batch that never leaves fails there too (0 is what every other test runs on shm).
@pytest.mark.parametrize("setting", ["1", "auto", "0"])
def test_scattered_puts(provider, setting, launches, tmp_path):
    state, reason = launches.provider_status(provider)
    if state == "declined":
        pytest.skip(f"btl-ofi does not serve {provider}: {reason}")
    group = matrix.Group(provider, "default", NRANKS, "base", matrix.negotiated_label(provider))
    launch = launcher.run_mpi(NRANKS, {"checks": CHECKS}, timeout=240, provider=provider,
                              workdir=tmp_path, ours=SETTINGS[setting])
    ids = [c["id"] for c in CHECKS]
    verdict = outcome.judge_group(launch, group, ids)
    if verdict.status == "skip":
        verdict.apply()
    by_id = {r["id"]: r for r in outcome.records(launch, "check")}
    problems = [] if verdict.status == "pass" else [verdict.message]
    problems += [f"{i}: {p}" for i in ids if i in by_id
                 for p in _problems(by_id[i], provider, setting)]
    assert not problems, "\n".join(problems) + f"\n  reproduce: {launch.command_line()}"
