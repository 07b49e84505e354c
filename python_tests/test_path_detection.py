"""The proof-of-path detector (outcome.proof_of_path) must tell our component
from everything else: a positive control through btl-ofi, Open MPI's stock
btl/ofi, and osc/pt2pt with our component loaded but idle."""

import os
import subprocess

import pytest

import launcher
import matrix
import outcome

pytestmark = pytest.mark.path

SMALL_PLAN = [
    matrix._rma("put", "create_du8", "fence", "int64", 16),
    matrix._rma("get", "create_du8", "lock_shared", "int64", 16),
    matrix._rma("acc", "create_du8", "lock_all", "int64", 1, mpi_op="SUM"),
    matrix._rma("fop", "create_du8", "flush", "int64", 1, mpi_op="SUM"),
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
    """Positive control: the same plan through our component is 'carried'."""
    provider = _provider(tested_providers)
    launch = _run(tmp_path, provider)
    verdict = outcome.launch_failure(launch, f"positive control on {provider}")
    if verdict:
        verdict.apply()
    carried, reasons = outcome.proof_of_path(launch, matrix.Group(provider, "default", 2, "base"))
    assert carried, f"detector rejects a run through btl-ofi on {provider}: {reasons}"
    assert _all_checks_exact(launch)


def test_detector_rejects_stock_btl_ofi(tmp_path, tested_providers, mpi_env_file):
    """Component path = Open MPI's pkglibdir only: the stock btl/ofi is loaded
    (its default provider exclusions leave it nothing here, so osc/rdma falls
    back to btl/vader; with shm or sockets it would crash). The detector must
    say 'not carried by btl-ofi' whatever the job's fate."""
    stock_dir = mpi_env_file.get("BTL_OFI_OMPI_PKGLIBDIR")
    if not stock_dir:
        pytest.fail("env file exports no BTL_OFI_OMPI_PKGLIBDIR", pytrace=False)
    env = {"OMPI_MCA_mca_component_path": stock_dir}
    info = subprocess.run(["ompi_info", "--parsable", "--param", "btl", "ofi"],
                          env={**os.environ, **env, **launcher.ROOT_ENV},
                          capture_output=True, text=True, timeout=60)
    ours = [ln for ln in info.stdout.splitlines() if "btl_ofi_mr_mode" in ln]
    assert not ours, "the stock-only component path still loads btl-ofi (btl_ofi_mr_mode exists)"
    launch = _run(tmp_path, provider=None, env_overrides=env)
    carried, reasons = outcome.proof_of_path(launch)
    assert not carried, "stock btl/ofi run was taken for btl-ofi"
    assert any("absent" in r or "no report" in r for r in reasons), reasons


def test_detector_rejects_osc_pt2pt(tmp_path, tested_providers, mpi_env_file):
    """Our component loaded and selected, but osc/pt2pt does the one-sided work
    (it needs MPI_THREAD_SERIALIZED at most): the counters exist and do not move."""
    provider = _provider(tested_providers)
    launch = _run(tmp_path, provider, osc="pt2pt",
                  plan_extra={"thread_level": "serialized"})
    failed = outcome.launch_failure(launch, "osc/pt2pt control")
    if failed:
        failed.apply()
    assert _all_checks_exact(launch), "osc/pt2pt control run gave wrong results"
    carried, reasons = outcome.proof_of_path(launch, matrix.Group(provider, "default", 2, "base"))
    assert not carried, "an osc/pt2pt run was taken for btl-ofi"
    assert any("did not move" in r for r in reasons), reasons
    # and the per-check verdicts fail too
    for spec in SMALL_PLAN:
        verdict = outcome.judge_check(launch, matrix.Group(provider, "default", 2, "base"), spec)
        assert verdict.status == "fail" and "not carried" in verdict.message, verdict
