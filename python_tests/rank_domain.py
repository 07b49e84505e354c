"""Which libfabric domain this process took (rank side; issue 26 item 1).

Each rank reads btl-ofi's read-only control variable btl_<c>_domain_selected
through MPI_T ("<provider> fabric <fabric> domain <domain>"), then, on a
Win.Create window, puts a stamp into its right neighbour and adds rank+1 to
the neighbour's counter (lock_all, flush), and checks what its left
neighbour left in its own window: exact or an error. One line per rank on
stderr, "DOMAIN <id> rank <r>: {json}", for the driver (test_domain_choice.py)
to compare across ranks and with the verbose "selected provider" line.
"""

import json
import sys

import numpy as np
from mpi4py import MPI


def _stamp(rank):
    return 7000 + rank


def domain_check(ctx, spec):
    errors = []
    selected = ctx.counters.cvar_string("domain_selected") if ctx.counters else None
    mem = np.zeros(2, dtype=np.int64)
    win = MPI.Win.Create(mem, 8, comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    try:
        ctx.comm.Barrier()
        win.Lock_all()
        for _ in range(spec.get("rounds", 10)):
            win.Accumulate(np.array([ctx.rank + 1], dtype=np.int64), ctx.right, 1, MPI.SUM)
        win.Put(np.array([_stamp(ctx.rank)], dtype=np.int64), ctx.right, 0)
        win.Flush(ctx.right)
        win.Unlock_all()
        ctx.comm.Barrier()
        want = [_stamp(ctx.left), (ctx.left + 1) * spec.get("rounds", 10)]
        if mem.tolist() != want:
            errors.append(f"rank {ctx.rank}: window holds {mem.tolist()}, expected {want}")
    except MPI.Exception as exc:
        errors.append(f"rank {ctx.rank}: {exc.Get_error_string()}")
    finally:
        win.Free()
    print(f"DOMAIN {spec['id']} rank {ctx.rank}: {json.dumps({'selected': selected})}",
          file=sys.stderr, flush=True)
    return errors


DOMAIN_CHECKS = {"domain": domain_check}
