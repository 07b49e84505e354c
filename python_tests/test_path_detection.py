"""The proof-of-path detector (outcome.proof_of_path) must tell our component
from everything else: a positive control through btl-ofi, Open MPI's stock
btl/ofi, and another one-sided path with our component loaded but idle
(osc/pt2pt on Open MPI 4.1; on 5.0, which has no osc/pt2pt, osc/rdma's
active-message emulation over btl/sm)."""

import os
import re
import subprocess

import pytest

import check_sets
import launcher
import matrix
import outcome

pytestmark = pytest.mark.path

SMALL_PLAN = [
    check_sets.op_check("put", "create_du8", "fence", "int64", 16),
    check_sets.op_check("get", "create_du8", "lock_shared", "int64", 16),
    check_sets.op_check("acc", "create_du8", "lock_all", "int64", 1, mpi_op="SUM"),
    check_sets.op_check("fop", "create_du8", "flush", "int64", 1, mpi_op="SUM"),
]


def _provider(providers):
    if not providers:
        pytest.skip("no provider selected")
    return "shm" if "shm" in providers else providers[0]


def _run(tmp_path, provider, **kw):
    plan = {"checks": SMALL_PLAN, **kw.pop("plan_extra", {})}
    return launcher.run_mpi(2, plan, timeout=90, provider=provider, workdir=tmp_path, **kw)


def _all_checks_exact(launch):
    recs = outcome.records(launch, "check")
    return len(recs) == len(SMALL_PLAN) and not any(r["errors"] for r in recs)


def test_detector_accepts_btl_ofi(tmp_path, tested_providers, mpi_env_file):
    """Positive control: the same plan through our component is 'carried'. With
    the suite's BTL list (self, the node BTL, ours) osc/rdma uses our BTL
    directly: on Open MPI 5 its verbose output names it on every rank
    ("accelerated_query: selected btl: <ours>"), not btl/sm and not the
    active-message emulation (4.1's osc/rdma prints no such line; the counters
    are the proof there)."""
    provider = _provider(tested_providers)
    launch = _run(tmp_path, provider, mca={"osc_base_verbose": "100"})
    verdict = outcome.launch_failure(launch, f"positive control on {provider}")
    if verdict:
        verdict.apply()
    carried, reasons = outcome.proof_of_path(launch, matrix.Group(provider, "default", 2, "base"))
    assert carried, f"detector rejects a run through btl-ofi on {provider}: {reasons}"
    assert _all_checks_exact(launch)
    if launcher.ompi_major() >= 5:
        # one line per window and rank
        chosen = re.findall(r"accelerated_query: selected btl: (\S+)", launch.stderr)
        assert len(chosen) >= 2 and set(chosen) == {launcher.component_name()}, \
            f"osc/rdma's direct BTL choices: {chosen}"
        assert "found alternate btl" not in launch.stderr, \
            "osc/rdma set up its active-message emulation"


def test_detector_rejects_stock_btl_ofi(tmp_path, tested_providers, mpi_env_file):
    """Component path = Open MPI's own only, so our component is not loaded, and
    the BTL list names Open MPI's stock btl/ofi (a DSO in 4.1, built into
    libopen-pal in 5.0) with its default provider choice. Whatever the job's
    fate (with 4.1 its exclusions leave it nothing here and osc/rdma falls back
    to btl/vader), the detector must say 'not carried by btl-ofi'."""
    stock_dir = mpi_env_file.get("BTL_OFI_OMPI_PKGLIBDIR")
    if not stock_dir:
        pytest.fail("env file exports no BTL_OFI_OMPI_PKGLIBDIR", pytrace=False)
    env = {"OMPI_MCA_mca_base_component_path": stock_dir}
    ours = launcher.component_name()
    info = subprocess.run(["ompi_info", "--parsable", "--param", "btl", ours],
                          env={**os.environ, **env, **launcher.ROOT_ENV},
                          capture_output=True, text=True, timeout=60)
    loaded = [ln for ln in info.stdout.splitlines() if launcher.param("mr_mode") in ln]
    assert not loaded, f"the stock-only component path still loads btl/{ours}"
    launch = _run(tmp_path, provider=None, env_overrides=env,
                  btl=f"self,{launcher.node_btl()},ofi")
    carried, reasons = outcome.proof_of_path(launch)
    assert not carried, "stock btl/ofi run was taken for btl-ofi"
    assert any("absent" in r or "no report" in r for r in reasons), reasons


def _other_path():
    """Another one-sided path with our component loaded and selected but idle."""
    if launcher.ompi_major() < 5:
        # osc/pt2pt needs MPI_THREAD_SERIALIZED at most
        return "osc/pt2pt", {"osc": "pt2pt", "plan_extra": {"thread_level": "serialized"}}
    # completion=local (debug) claims no remote completion, so Open MPI 5's
    # osc/rdma does not use our BTL directly and emulates RDMA with active
    # messages over the lowest-latency BTL: btl/sm here
    return "osc/rdma active messages over btl/sm", {"ours": {"completion": "local"}}


def test_detector_rejects_other_path(tmp_path, tested_providers, mpi_env_file):
    """Our counters exist and do not move when another path does the work."""
    provider = _provider(tested_providers)
    what, kw = _other_path()
    launch = _run(tmp_path, provider, **kw)
    failed = outcome.launch_failure(launch, f"{what} control")
    if failed:
        failed.apply()
    assert _all_checks_exact(launch), f"{what} control run gave wrong results"
    group = matrix.Group(provider, "default", 2, "base")
    carried, reasons = outcome.proof_of_path(launch, group)
    assert not carried, f"a run over {what} was taken for btl-ofi"
    assert any("did not move" in r for r in reasons), reasons
    # and the per-check verdicts fail too
    for spec in SMALL_PLAN:
        verdict = outcome.judge_check(launch, group, spec)
        assert verdict.status == "fail" and "not carried" in verdict.message, verdict
