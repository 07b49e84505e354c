"""What btl-ofi costs a program that makes no window (rank side; issue 27 item 4).

Open MPI calls every BTL's progress function on each pass of its progress loop,
one-sided program or not. btl-ofi reads its completion queue only while an
operation of its own is in flight or memory is registered for peers (a
window): NOTES.txt 4. Phases, each measured by btl-ofi's cq_polls counter
(MPI_T) and the puts it carried:
  "before":  spec["pingpongs"] two-sided ping-pongs with the right neighbour,
             no window yet;
  "window":  a Win.Create window, lock_all, a put to the right neighbour,
             unlock_all (exact), the window still alive while ping-pongs run;
  "after":   the window freed, the same ping-pongs again.
One line per rank, "IDLE <id> rank <r>: {json}", for test_idle_cost.py.
"""

import json
import sys

import numpy as np
from mpi4py import MPI


def _polls(ctx):
    snap = ctx.counters.snapshot()
    return snap.get("cq_polls", -1), snap.get("put_count", -1)


def _pingpong(ctx, count):
    buf = np.zeros(1, dtype=np.int64)
    for i in range(count):
        if ctx.rank % 2 == 0:
            ctx.comm.Send(buf, dest=ctx.right, tag=i)
            ctx.comm.Recv(buf, source=ctx.left, tag=i)
        else:
            ctx.comm.Recv(buf, source=ctx.left, tag=i)
            ctx.comm.Send(buf, dest=ctx.right, tag=i)


def idle_check(ctx, spec):
    errors, log = [], {}
    count = spec["pingpongs"]
    ctx.comm.Barrier()
    p0, u0 = _polls(ctx)
    _pingpong(ctx, count)
    p1, u1 = _polls(ctx)
    log["before"] = {"cq_polls": p1 - p0, "puts": u1 - u0}
    mem = np.zeros(1, dtype=np.int64)
    win = MPI.Win.Create(mem, 8, comm=ctx.comm)
    win.Lock_all()
    win.Put(np.array([ctx.rank + 1], dtype=np.int64), ctx.right, 0)
    win.Unlock_all()
    _pingpong(ctx, count)
    ctx.comm.Barrier()
    p2, u2 = _polls(ctx)
    log["window"] = {"cq_polls": p2 - p1, "puts": u2 - u1}
    if mem[0] != ctx.left + 1:
        errors.append(f"rank {ctx.rank}: window holds {mem[0]}, not {ctx.left + 1}")
    win.Free()
    ctx.comm.Barrier()
    p3, u3 = _polls(ctx)
    _pingpong(ctx, count)
    p4, u4 = _polls(ctx)
    log["after"] = {"cq_polls": p4 - p3, "puts": u4 - u3}
    print(f"IDLE {spec['id']} rank {ctx.rank}: {json.dumps(log)}", file=sys.stderr, flush=True)
    return errors


IDLE_CHECKS = {"idle": idle_check}
