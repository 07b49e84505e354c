"""Large puts and gets split over several NICs (rank side; issue 26 item 2, NOTES.txt 2d).

Two ranks on two hosts. Rank 0, in a lock_all epoch on a Win.Create window of
`size` bytes on each rank, puts a pattern of its own into rank 1's window,
flushes, gets it back into another buffer and gets rank 1's own pattern (in
the window's second half), flushes, and checks both byte for byte; then does
`small` 8-byte puts and gets, which must not be split. The driver
(test_stripes.py) reads each host's interface counters around the launch;
each rank prints, on stderr, "STRIPES <id> rank <r>: {json}" with btl-ofi's
counters before and after each phase and the control variable
btl_<c>_domain_selected.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

COUNTERS = ("put_count", "get_count", "stripe_count", "nics", "put_bytes", "get_bytes",
            "cq_wake_armed", "cq_wake_reads")


def _pattern(rank, n):
    return (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(rank + 1)) \
        .astype(np.uint64)


def _snap(ctx):
    values = ctx.counters.snapshot() if ctx.counters else {}
    return {k: values.get(k, 0) for k in COUNTERS}


def stripes_check(ctx, spec):
    comm, rank = ctx.comm, ctx.rank
    size = spec.get("size", 4 << 20)
    words = size // 8
    errors = []
    mem = np.zeros(2 * words, dtype=np.uint64)
    mem[words:] = _pattern(rank, words)
    win = MPI.Win.Create(mem, 8, comm=comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    phases = {"start": _snap(ctx)}
    try:
        comm.Barrier()
        if rank == 0:
            mine = _pattern(0, words)
            back = np.zeros(words, dtype=np.uint64)
            theirs = np.zeros(words, dtype=np.uint64)
            win.Lock_all()
            win.Put(mine, 1, 0)
            win.Flush(1)
            win.Get(back, 1, 0)
            win.Get(theirs, 1, words)
            win.Flush(1)
            win.Unlock_all()
            if not np.array_equal(back, mine):
                bad = int(np.flatnonzero(back != mine)[0])
                errors.append(f"rank 0: {size} B put then got back differs from word {bad}")
            if not np.array_equal(theirs, _pattern(1, words)):
                bad = int(np.flatnonzero(theirs != _pattern(1, words))[0])
                errors.append(f"rank 0: {size} B got from rank 1 differs from word {bad}")
        comm.Barrier()
        phases["large"] = _snap(ctx)
        if rank == 0:
            one, got = np.array([7], dtype=np.uint64), np.zeros(1, dtype=np.uint64)
            win.Lock_all()
            for _ in range(spec.get("small", 50)):
                win.Put(one, 1, 0)
                win.Get(got, 1, words)
                win.Flush(1)
            win.Unlock_all()
            if int(got[0]) != int(_pattern(1, 1)[0]):
                errors.append(f"rank 0: 8 B get read {int(got[0])}")
        comm.Barrier()
        phases["small"] = _snap(ctx)
        if rank == 1 and int(mem[0]) != 7:
            errors.append(f"rank 1: word 0 holds {int(mem[0])} after the 8 B puts, not 7")
    except MPI.Exception as exc:
        errors.append(f"rank {rank}: {exc.Get_error_string()}")
    finally:
        win.Free()
    line = {"phases": phases,
            "domain": ctx.counters.cvar_string("domain_selected") if ctx.counters else None}
    print(f"STRIPES {spec['id']} rank {rank}: {json.dumps(line)}", file=sys.stderr, flush=True)
    return errors


STRIPES_CHECKS = {"stripes": stripes_check}
