"""Dynamic windows with many attached regions, per provider (issue 15).

osc/rdma refuses MPI_Win_attach beyond osc_rdma_max_attach regions per window
(default 64); btl-ofi's env file and mca-params.conf raise it (NOTES.txt 3b).
Each rank builds a linked list of 1000 elements by MPI_Win_attach (800 pages,
so 800 regions and 800 registrations, and 200 elements in pages already
attached); its left neighbour walks it with Get and Compare_and_swap. Then
churn: 300 elements detached and attached again at the same addresses, 5
rounds on one window. Passes only if every value is exact, btl-ofi's
registrations, gets and atomics moved by what osc/rdma must have asked of it,
and btl_<component>_registrations_live is 0 after the windows are freed.
"""

import pytest

import launcher
import matrix
import outcome

LIST = {"kind": "attach_list", "id": "attach_list/1000", "count": 1000, "shared": 200}
CHURN = {"kind": "attach_list", "id": "attach_churn/300x5", "count": 300, "rounds": 5}


def pytest_generate_tests(metafunc):
    """One case per provider under test (conftest: --provider, discovery)."""
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


def _regions(spec):
    """Registrations one rank's lists need: one per element page, every round."""
    return (spec["count"] - spec.get("shared", 0)) * spec.get("rounds", 1)


def _check_problems(rec, spec, nranks):
    """What is wrong with one check's record (errors, or counters that did not
    move by what osc/rdma must have asked of btl-ofi)."""
    problems = list(rec["errors"])
    deltas = rec["deltas"]
    walked = spec["count"] * spec.get("rounds", 1) * nranks
    wanted = {"registrations": _regions(spec) * nranks, "get_count": walked}
    if launcher.ompi_major() < 5:
        # 4.1: Compare_and_swap is a BTL atomic; 5.0 does it as get (+ put) under
        # its accumulate lock within one node (NOTES.txt section 12)
        wanted["atomic_count"] = walked
    for name, least in wanted.items():
        if deltas.get(name, 0) < least:
            problems.append(f"{launcher.param(name)} moved by {deltas.get(name, 0)}, "
                            f"expected >= {least} (not carried by btl-ofi?)")
    return problems


def test_many_attachments(provider, launches, tmp_path):
    state, reason = launches.provider_status(provider)
    if state == "declined":
        pytest.skip(f"btl-ofi does not serve {provider}: {reason}")
    group = matrix.Group(provider, "default", 2, "base", matrix.negotiated_label(provider))
    plan = {"checks": [LIST, CHURN]}
    launch = launcher.run_mpi(2, plan, timeout=240, provider=provider, workdir=tmp_path)
    verdict = outcome.judge_group(launch, group, [LIST["id"], CHURN["id"]])
    if verdict.status == "skip":
        verdict.apply()
    by_id = {r["id"]: r for r in outcome.records(launch, "check")}
    problems = [] if verdict.status == "pass" else [verdict.message]
    problems += [f"{spec['id']}: {p}" for spec in (LIST, CHURN) if spec["id"] in by_id
                 for p in _check_problems(by_id[spec["id"]], spec, 2)]
    end = outcome.records(launch, "end")
    if end and end[0]["registrations_live"][1] != 0:
        live = end[0]["registrations_live"]
        problems.append(f"{launcher.param('registrations_live')} is {live[1]} after every "
                        f"window was freed (before the checks: {live[0]})")
    assert not problems, "\n".join(problems) + f"\n  reproduce: {launch.command_line()}"
