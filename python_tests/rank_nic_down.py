"""A NIC that fails mid-run (rank side; issue 26 item 4, NOTES.txt 2e).

Two ranks on two hosts. Rank 0, in a lock_all epoch with MPI_ERRORS_RETURN on
the window, repeats rounds of: put a round-specific pattern of `size` bytes
into rank 1's window, flush, get it back, flush, compare. After round 3 it
creates `ready_file`, on which the driver (test_nic_down.py) takes a NIC of one
host down, and it goes on for `seconds` more, or until an MPI call returns an
error. Rank 1 waits in a barrier meanwhile (Open MPI's own TCP, on another
subnet, carries it). Then both leave the epoch, free the window and finalize.
Each rank prints, on stderr, "NICDOWN <id> rank <r>: {json}": the rounds, the
exact ones, the first round after which btl-ofi counted a failed NIC, the MPI
error (round, call, class, text) if one came, and btl-ofi's counters.

`expect`: "exact" (a further NIC of striped transfers: every round exact,
rounds going on after the failure, no error) or "abort" (the first NIC: the
job ends with btl-ofi's fatal error before the rounds do; a round read back
inexact is printed at once, "NICDOWN <id> inexact round <k>").
"""

import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

COUNTERS = ("put_count", "get_count", "stripe_count", "nics", "nic_failures",
            "stripe_parts_moved")


def _snap(ctx):
    values = ctx.counters.snapshot() if ctx.counters else {}
    return {k: values.get(k, 0) for k in COUNTERS}


def _rounds(ctx, spec, win, words, state):
    # every array made once: a temporary of 4 MiB per round would be an mmap and page
    # faults each time (glibc), and the rounds would measure that, not the transfers
    src = np.zeros(words, dtype=np.uint64)
    back = np.zeros(words, dtype=np.uint64)
    ramp = np.arange(words, dtype=np.uint64)
    same = np.zeros(words, dtype=bool)
    ready_at = None
    k = 0
    while True:
        k += 1
        np.add(ramp, np.uint64(k) * np.uint64(0x9E3779B97F4A7C15 & 0xFFFFFFFF), out=src)
        call = "MPI_Put"
        try:
            win.Put(src, 1, 0)
            call = "MPI_Win_flush"
            win.Flush(1)
            call = "MPI_Get"
            win.Get(back, 1, 0)
            call = "MPI_Win_flush"
            win.Flush(1)
        except MPI.Exception as exc:
            state["error"] = {"round": k, "call": call, "class": exc.Get_error_class(),
                              "text": exc.Get_error_string().strip()}
            break
        state["rounds"] = k
        if np.equal(back, src, out=same).all():
            state["exact"] += 1
        elif state["inexact_round"] is None:
            state["inexact_round"] = k
            # at once: a job that ends with the NIC (expect "abort") prints no summary
            print(f"NICDOWN {spec['id']} inexact round {k}", file=sys.stderr, flush=True)
        if state["failed_after_round"] is None and _snap(ctx)["nic_failures"]:
            state["failed_after_round"] = k
        if k == 3:
            with open(spec["ready_file"], "w", encoding="utf-8") as fh:
                fh.write("ready\n")
            ready_at = time.monotonic()
        if ready_at is not None and time.monotonic() - ready_at > spec.get("seconds", 10):
            break


def nic_down_check(ctx, spec):
    comm, rank = ctx.comm, ctx.rank
    words = spec.get("size", 4 << 20) // 8
    errors = []
    mem = np.zeros(words, dtype=np.uint64)
    win = MPI.Win.Create(mem, 8, comm=comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    state = {"rounds": 0, "exact": 0, "inexact_round": None, "failed_after_round": None,
             "error": None, "unlock_error": None, "host": MPI.Get_processor_name(),
             "start": _snap(ctx)}
    comm.Barrier()
    if rank == 0:
        win.Lock_all()
        _rounds(ctx, spec, win, words, state)
        try:
            win.Unlock_all()
        except MPI.Exception as exc:
            state["unlock_error"] = exc.Get_error_string().strip()
    comm.Barrier()
    try:
        win.Free()
    except MPI.Exception as exc:
        errors.append(f"rank {rank}: MPI_Win_free: {exc.Get_error_string()}")
    state["end"] = _snap(ctx)
    print(f"NICDOWN {spec['id']} rank {rank}: {json.dumps(state)}", file=sys.stderr, flush=True)
    if rank != 0:
        return errors
    if not os.path.exists(spec["ready_file"]):
        errors.append(f"rank 0: only {state['rounds']} rounds, never ready: {state['error']}")
    if state["inexact_round"] is not None and (
            state["error"] is None or state["inexact_round"] < state["error"]["round"]):
        errors.append(f"rank 0: round {state['inexact_round']} read back other bytes than it "
                      f"put, and no MPI call said so")
    if spec["expect"] == "abort":
        errors.append(f"rank 0: {state['rounds']} rounds and the job did not end after the "
                      f"NIC went down: {state['error']}")
    if spec["expect"] == "exact" and state["error"] is not None:
        errors.append(f"rank 0: MPI error with a further NIC down: {state['error']}")
    return errors


NIC_DOWN_CHECKS = {"nic_down": nic_down_check}
