"""Fetching atomics waited for inside their call (NOTES.txt section 4;
btl_ofi/btl_ofi_ops.c, mca_btl_ofi_op_await).

osc/rdma waits for every fetching atomic (fetch-and-op, get-accumulate of one
element, compare-and-swap, its own lock) right after posting it. Where one
thread at a time calls MPI, btl-ofi reads its rails inside the call until the
atomic completes, so the callback runs before the call returns. Here, per
provider of the default set and on the message path: the results are exact at
MPI_THREAD_SINGLE, where the counter atomics_awaited moves (never beyond the
atomics posted), and at MPI_THREAD_MULTIPLE, where it stays at zero."""

import pytest

import check_sets
import launcher
import matrix
import outcome

# Fetching atomics of both widths, under every kind of epoch, beside what is not waited for
# (puts, gets, non-fetching accumulates), and several origins on one word.
PLAN = ([check_sets.op_check("fop", "create_du8", "lock_exclusive", "int64", 1),
         check_sets.op_check("fop", "create_du8", "flush", "int64", 1),
         check_sets.op_check("gacc", "create_du8", "lock_all", "int64", 1, mpi_op="MAX"),
         check_sets.op_check("gacc", "dynamic", "fence", "int32", 1, mpi_op="BXOR"),
         check_sets.make_check("cas", "fast", flavor_name="create_du8", sync="lock_shared",
                               dtype="int64"),
         check_sets.make_check("cas", "fast", flavor_name="dynamic", sync="flush", dtype="int32"),
         check_sets.op_check("acc", "create_du8", "flush", "int64", 3),
         check_sets.op_check("put", "create_du8", "fence", "int64", 8),
         check_sets.op_check("get", "create_du8", "lock_shared", "int64", 8)]
        + check_sets.concurrency_checks()[:2])

WHERE = [("shm", "base"), ("tcp;ofi_rxm", "base"), ("shm", "messages")]


def _launch(provider, variant, level, tmp_path):
    group = matrix.Group(provider, "default", 2, variant)
    launch = launcher.run_mpi(2, {"checks": PLAN, "thread_level": level}, 240,
                              provider=provider, ours=group.ours(), workdir=tmp_path)
    outcome.judge_group(launch, group, [c["id"] for c in PLAN]).apply()
    for spec in PLAN:
        outcome.judge_check(launch, group, spec).apply()
    return launch, outcome.counter_totals(
        launch, ("atomic_count", "atomics_awaited", "atomics_as_messages"))


@pytest.mark.parametrize("provider,variant", WHERE, ids=[f"{p}-{v}" for p, v in WHERE])
def test_awaited_in_the_call_at_thread_single(provider, variant, tmp_path, mpi_env_file):
    """MPI_THREAD_SINGLE: exact, and fetching atomics finished inside their call (the
    counter moved), never more of them than atomics were posted."""
    launch, total = _launch(provider, variant, "single", tmp_path)
    assert outcome.records(launch, "start")[0]["thread_level"] == 0, launch.tail()
    assert 0 < total["atomics_awaited"] <= total["atomic_count"], total
    if variant == "messages":
        assert total["atomics_as_messages"] > 0, total


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_not_awaited_under_thread_multiple(provider, tmp_path, mpi_env_file):
    """MPI_THREAD_MULTIPLE: another thread may finish an operation, so none is waited for
    inside its call; the same checks stay exact."""
    launch, total = _launch(provider, "base", "multiple", tmp_path)
    assert outcome.records(launch, "start")[0]["thread_level"] == 3, launch.tail()
    assert total["atomic_count"] > 0 and total["atomics_awaited"] == 0, total
