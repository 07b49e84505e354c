"""btl-ofi costs nothing to a program that makes no window (issue 27 item 4; NOTES.txt 4).

Installed where Open MPI finds it without flags, btl-ofi is opened in every
job, and Open MPI calls its progress function on every pass of its progress
loop. rank_idle.py counts btl-ofi's completion-queue reads (cq_polls, MPI_T)
around two-sided ping-pongs: none before any window exists and none after
the last one is freed; reads while a window lives (the target's progress that
tcp;ofi_rxm needs) and the window's put exact, through btl-ofi. Before this,
an idle btl-ofi read tcp;ofi_rxm's queue on every pass: 8-byte ping-pong
latency 6.8x (osc_harness/PERFORMANCE.md).
"""

import pytest

import outcome

PINGPONGS = 2000
CHECK = {"kind": "idle", "id": "idle", "pingpongs": PINGPONGS}


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_no_window_no_polling(provider, launches, tmp_path):
    launch = outcome.run_one_check(provider, CHECK, 300, tmp_path, launches=launches)
    lines = outcome.rank_lines(launch, "IDLE", CHECK["id"])
    problems = []
    for rank, p in sorted(lines.items()):
        for phase in ("before", "after"):
            if p[phase]["cq_polls"] != 0:
                problems.append(f"rank {rank}: {PINGPONGS} two-sided ping-pongs {phase} the "
                                f"window read btl-ofi's CQ {p[phase]['cq_polls']} times")
        if p["window"]["cq_polls"] <= 0 or p["window"]["puts"] < 1:
            problems.append(f"rank {rank}: with a window: {p['window']} (the CQ must be read "
                            f"and the put carried)")
    assert not problems, "\n".join(problems) + f"\n  {launch.command_line()}"
