"""Accumulates that osc/rdma cannot map to one network atomic, through btl-ofi
(osc_harness/osc_acc, per provider): a contiguous and a strided (vector,
stride 2) MPI_SUM of doubles, each call followed by MPI_Win_flush_local, and
contended accumulates from every rank but one into the same elements. Every
row must be exact and carried by btl-ofi. The rows also pin down how osc/rdma
cuts such an accumulate up (PERFORMANCE.md, "Large accumulates"): a strided
one becomes one network atomic per element (on Open MPI 4.1 a get and a put
per element: btl-ofi advertises no float atomics there), a contiguous one a
get and a put per osc_rdma_buffer_size / 8 bytes.
"""

import json

import pytest

import launcher
import matrix

pytestmark = pytest.mark.reliability
COUNT = 8192  # doubles per large accumulate (64 KiB)


def pytest_generate_tests(metafunc):
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", matrix.providers_of(metafunc.config)[0])


def _osc_acc(provider, launches, harness_program, tmp_path, nranks, args, mca=None):
    env = launcher.mpi_env()
    program = harness_program(provider, "osc_acc")
    argv = launcher.mpirun_argv(nranks, provider, mca=mca, program=program,
                                program_args=["-j", "-r"] + args, native=True)
    run = launcher.run_argv(argv, 120 * launches.scale, env, tmp_path)
    rows = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert not run.timed_out and run.returncode == 0 and rows, \
        f"{provider}: exit {run.returncode}{' (timeout)' if run.timed_out else ''}\n" \
        f"{' '.join(argv)}\n{run.stdout[-800:]}\n{run.stderr[-800:]}"
    for row in rows:
        assert row["result"] == "exact", f"{provider}: {row}"
    return {(r["mode"], r["kind"]): r for r in rows}


def test_large_accumulates(provider, launches, harness_program, tmp_path):
    rows = _osc_acc(provider, launches, harness_program, tmp_path, 2,
                    ["-m", "large", "-n", str(COUNT), "-i", "8"])
    contig, strided = rows[("large", "contig")], rows[("large", "strided")]
    # 64 KiB in 4 KiB pieces (osc_rdma_buffer_size 32 KiB / 8): a get and a put each
    assert contig["gets"] >= COUNT * 8 // 4096 and contig["puts"] >= COUNT * 8 // 4096, contig
    if launcher.ompi_major() >= 5:
        # one BTL atomic per element of the vector
        assert strided["atomics"] >= COUNT, strided
    else:
        # btl-ofi advertises no float atomics on 4.1 (NOTES.txt section 6): a get
        # and a put per element, under osc/rdma's accumulate lock
        assert strided["gets"] >= COUNT and strided["puts"] >= COUNT, strided


def test_large_accumulate_buffer_size(provider, launches, harness_program, tmp_path):
    """osc_rdma_buffer_size >= 8 x the accumulate: one get and one put per call."""
    rows = _osc_acc(provider, launches, harness_program, tmp_path, 2,
                    ["-m", "large", "-k", "contig", "-n", str(COUNT), "-i", "8"],
                    mca={"osc_rdma_buffer_size": str(COUNT * 8 * 8)})
    contig = rows[("large", "contig")]
    assert contig["gets"] == 1 and contig["puts"] == 1, contig


def test_contended_accumulates(provider, launches, harness_program, tmp_path):
    rows = _osc_acc(provider, launches, harness_program, tmp_path, 3,
                    ["-m", "contention", "-c", "64", "-i", "200"])
    row = rows[("contention", "contig")]
    assert row["gets"] > 0 and row["puts"] > 0, row
