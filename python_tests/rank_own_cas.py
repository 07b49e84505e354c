"""Compare-and-swap on a rank's own Win_create memory while the other ranks do the same on
it (rank side; NOTES.txt section 6, open-mpi/ompi#7967).

Every rank adds 1 to one word of rank 0's Win.Create window (made with the spec's "info"
keys, if any) `rounds` times, each time
through a compare-and-swap loop (lock_all; guess, swap in guess + 1, retry with what was
fetched). Rank 0 checks that the word ends at ranks x rounds: one compare-and-swap that
was not atomic with another loses an increment. In a job on one node, Open MPI 4.1's
osc/rdma calls compare-and-swap on a rank's own memory with no registration handle; the
other ranks' come with one. btl-ofi serves the former through this process's own
registration (counted in self_served) so that the provider applies all of them.

Each rank prints one line on stderr, "OWNCAS <id> rank <r>: {json}": its counters' change
(atomic_count, self_served, refused_count) and how many compare-and-swaps it made.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

COUNTERS = ("atomic_count", "self_served", "refused_count")


def cas_increments(win, target, disp, rounds):
    """Adds 1 to the int64 at disp of target `rounds` times, each through a compare-and-swap
    loop (guess, swap in guess + 1, retry with what was fetched), in a passive epoch the
    caller holds. Returns how many compare-and-swaps it made."""
    swap, compare, fetched = (np.zeros(1, dtype=np.int64) for _ in range(3))
    guess, tries = 0, 0
    for _ in range(rounds):
        while True:
            compare[0], swap[0] = guess, guess + 1
            win.Compare_and_swap(swap, compare, fetched, target, disp)
            win.Flush(target)
            tries += 1
            if fetched[0] == guess:
                guess += 1
                break
            guess = int(fetched[0])
    return tries


def own_cas_check(ctx, spec):
    comm, rank, size = ctx.comm, ctx.rank, ctx.comm.Get_size()
    rounds = spec.get("rounds", 1000)
    errors = []
    before = ctx.counters.snapshot() if ctx.counters else {}
    mem = np.zeros(1, dtype=np.int64)
    info = MPI.Info.Create()
    for key, value in spec.get("info", {}).items():
        info.Set(key, value)
    win = MPI.Win.Create(mem, 8, info=info, comm=comm)
    info.Free()
    win.Set_errhandler(MPI.ERRORS_RETURN)
    tries = 0
    try:
        comm.Barrier()
        win.Lock_all()
        tries = cas_increments(win, 0, 0, rounds)
        win.Unlock_all()
        comm.Barrier()
        if rank == 0 and int(mem[0]) != rounds * size:
            errors.append(f"rank 0: the word is {int(mem[0])}, expected {rounds * size} "
                          f"({size} ranks x {rounds} increments by compare-and-swap): "
                          f"{rounds * size - int(mem[0])} lost")
    except MPI.Exception as exc:
        errors.append(f"rank {rank}: {exc.Get_error_string()}")
    finally:
        win.Free()
    after = ctx.counters.snapshot() if ctx.counters else {}
    line = {"counters": {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS},
            "compare_and_swaps": tries}
    print(f"OWNCAS {spec['id']} rank {rank}: {json.dumps(line)}", file=sys.stderr, flush=True)
    return errors


OWN_CAS_CHECKS = {"own_cas": own_cas_check}
