"""Peers on this node over shm, the others over the network, in one module
(rank side; issue 26 item 0, NOTES.txt 2c).

On a Win.Create window every rank
  - puts a stamp into every rank's slot (itself included), flushes, and after
    a barrier checks that its window holds every rank's stamp; then gets every
    rank's window back and checks it;
  - adds 1 to one counter on rank 0, `rounds` times with MPI_Fetch_and_op and
    `rounds` times with MPI_Accumulate (lock_all): ranks on rank 0's node and
    on other nodes hammer the same word at once. Rank 0 checks the sum, and
    that the values fetched, gathered from every rank, are all different (a
    lost update shows as the same value fetched twice). osc/rdma (4.1 and 5.0)
    does these under its accumulate lock, itself a word of rank 0 taken by
    BTL compare-and-swap and fetch-add from both kinds of origin;
  - adds 1 to a second word on rank 0 `rounds` times through compare-and-swap
    loops, which osc/rdma posts with no lock of its own: the word's sum holds
    only if the node-local and the network provider's compare-and-swaps on it
    are atomic with each other.
It reads btl-ofi's counters around that (local_put_count, local_atomic_count,
...) and the control variable btl_<c>_local_selected, and prints one line per
rank on stderr, "NODELOCAL <id> rank <r>: {json}", with its node's ranks.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from rank_own_cas import cas_increments

COUNTERS = ("put_count", "get_count", "atomic_count", "local_put_count", "local_get_count",
            "local_atomic_count", "local_peers", "cq_pauses", "cq_serving_reads",
            "cq_long_pauses", "cq_wake_armed", "cq_wake_reads")


def _stamp(rank):
    return 9100 + rank


def _delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS}


def node_local_check(ctx, spec):
    comm, rank, size = ctx.comm, ctx.rank, ctx.comm.Get_size()
    rounds = spec.get("rounds", 200)
    errors = []
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    node_ranks = sorted(node.allgather(rank))
    node.Free()
    selected = ctx.counters.cvar_string("local_selected") if ctx.counters else None
    before = ctx.counters.snapshot() if ctx.counters else {}

    mem = np.zeros(size + 2, dtype=np.int64)  # a slot per rank, the counter, the CAS counter
    win = MPI.Win.Create(mem, 8, comm=comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    fetched = np.zeros(rounds, dtype=np.int64)
    try:
        _window_traffic(comm, win, mem, rounds, fetched, errors)
    except MPI.Exception as exc:
        errors.append(f"rank {rank}: {exc.Get_error_string()}")
    finally:
        win.Free()
    after = ctx.counters.snapshot() if ctx.counters else {}
    every = comm.gather(fetched, root=0)
    if rank == 0 and not errors:
        errors += _window_sums(mem, size, rounds, every)
    line = {"node_ranks": node_ranks, "local_selected": selected,
            "counters": _delta(before, after), "local_peers": after.get("local_peers", 0)}
    print(f"NODELOCAL {spec['id']} rank {rank}: {json.dumps(line)}", file=sys.stderr, flush=True)
    return errors


def _window_traffic(comm, win, mem, rounds, fetched, errors):
    """node_local_check's operations in the window over mem (module docstring): the
    stamps put and got back, checked here into errors; fetched gets the values this
    rank's fetch_and_ops returned."""
    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    win.Lock_all()
    for target in range(size):
        win.Put(np.array([_stamp(rank)], dtype=np.int64), target, rank)
    win.Flush_all()
    one, got = np.array([1], dtype=np.int64), np.zeros(1, dtype=np.int64)
    for i in range(rounds):
        win.Fetch_and_op(one, got, 0, size, MPI.SUM)
        win.Flush(0)
        fetched[i] = got[0]
        win.Accumulate(one, 0, size, MPI.SUM)
    win.Flush_all()
    cas_increments(win, 0, size + 1, rounds)
    win.Unlock_all()
    comm.Barrier()
    want = [_stamp(r) for r in range(size)]
    if mem[:size].tolist() != want:
        errors.append(f"rank {rank}: window holds {mem[:size].tolist()}, expected {want}")
    win.Lock_all()
    back = np.zeros((size, size + 2), dtype=np.int64)
    for target in range(size):
        win.Get(back[target], target, 0)
    win.Flush_all()
    win.Unlock_all()
    for target in range(size):
        if back[target][:size].tolist() != want:
            errors.append(f"rank {rank}: got {back[target][:size].tolist()} from rank "
                          f"{target}, expected {want}")
    comm.Barrier()


def _window_sums(mem, size, rounds, every):
    """Rank 0's errors in its window after the traffic: the sums of the word that
    fetch_and_op and accumulate added to and of the compare-and-swap word, and the
    values fetched (every: each rank's), none twice."""
    errors = []
    total = 2 * rounds * size
    if int(mem[size]) != total:
        errors.append(f"rank 0: counter {int(mem[size])}, expected {total} "
                      f"({size} ranks x {rounds} fetch_and_op + {rounds} accumulate)")
    if int(mem[size + 1]) != rounds * size:
        errors.append(f"rank 0: compare-and-swap counter {int(mem[size + 1])}, expected "
                      f"{rounds * size} ({size} ranks x {rounds}): "
                      f"{rounds * size - int(mem[size + 1])} updates lost")
    seen = np.concatenate(every)
    values, counts = np.unique(seen, return_counts=True)
    twice = values[counts > 1].tolist()
    if twice:
        errors.append(f"rank 0: fetch_and_op returned {len(twice)} values more than once "
                      f"(first {twice[:5]}): updates were lost")
    return errors


NODE_LOCAL_CHECKS = {"node_local": node_local_check}
