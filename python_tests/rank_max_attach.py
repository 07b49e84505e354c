"""osc/rdma's limit on regions attached to one dynamic window (rank side of
test_linked_list.py's test_max_attach).

With osc_rdma_max_attach = spec["regions"], that many page-aligned regions
attach and carry a Put each; one more must fail with MPI_ERR_RMA_ATTACH.
MPI errors are read as rank_linked_list.py reads them (error_text).
"""

import sys

import numpy as np
from mpi4py import MPI

from rank_linked_list import ERROR_CLASSES, PAGE, error_text


def max_attach_check(ctx, spec):
    """With osc_rdma_max_attach = spec["regions"]: that many separate
    page-aligned regions attach and carry a Put from the left neighbour each;
    one more must fail with MPI_ERR_RMA_ATTACH. osc/rdma keeps its regions
    lock after that error (osc_rdma_dynamic.c:192-196), so afterwards the
    window is only freed. Each rank prints "MAX-ATTACH <id> rank <r>: <class>"
    before the free, so a hang there still shows what the attach returned."""
    n = spec["regions"]
    raw = np.zeros((2 * n + 3) * PAGE, np.uint8)
    skip = (-raw.ctypes.data) % PAGE
    buf = raw[skip:skip + (2 * n + 2) * PAGE]   # region k at page 2k: a gap page between
    pages = [buf[2 * k * PAGE:(2 * k + 1) * PAGE] for k in range(n + 1)]
    win = MPI.Win.Create_dynamic(comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    errors = []
    attached = 0
    for k in range(n):
        try:
            win.Attach(pages[k])
            attached += 1
        except MPI.Exception as exc:
            errors.append(f"rank {ctx.rank}: Win.Attach of region {k + 1} of {n} (allowed) "
                          f"failed: {error_text(exc)}")
            break
    ok = ctx.comm.allreduce(attached == n, op=MPI.LAND)
    if ok:
        addrs = ctx.comm.allgather([MPI.Get_address(p) for p in pages[:n]])
        stamp = np.array([(ctx.rank + 1) * 1000], np.int64)
        try:
            win.Lock_all()
            for k in range(n):
                stamp[0] = (ctx.rank + 1) * 1000 + k
                win.Put(stamp, ctx.right, addrs[ctx.right][k])
                win.Flush(ctx.right)
            win.Unlock_all()
        except MPI.Exception as exc:
            errors.append(f"rank {ctx.rank}: Put into region of rank {ctx.right} failed: "
                          f"{error_text(exc)}")
        ctx.comm.Barrier()
        got = [int(p[:8].view(np.int64)[0]) for p in pages[:n]]
        want = [(ctx.left + 1) * 1000 + k for k in range(n)]
        if got != want:
            errors.append(f"rank {ctx.rank}: regions after the left neighbour's puts hold "
                          f"{got}, expected {want}")
        ctx.comm.Barrier()
        try:
            win.Attach(pages[n])
            result = "success"
            errors.append(f"rank {ctx.rank}: Win.Attach of region {n + 1} with "
                          f"osc_rdma_max_attach={n} succeeded, MPI_ERR_RMA_ATTACH expected")
        except MPI.Exception as exc:
            result = ERROR_CLASSES.get(exc.Get_error_class(), str(exc.Get_error_class()))
            if exc.Get_error_class() != MPI.ERR_RMA_ATTACH:
                errors.append(f"rank {ctx.rank}: Win.Attach of region {n + 1} with "
                              f"osc_rdma_max_attach={n} failed with {error_text(exc)}, "
                              f"MPI_ERR_RMA_ATTACH expected")
        print(f"MAX-ATTACH {spec['id']} rank {ctx.rank}: {result}", file=sys.stderr, flush=True)
    win.Free()
    print(f"MAX-ATTACH {spec['id']} rank {ctx.rank}: freed", file=sys.stderr, flush=True)
    return errors


MAX_ATTACH_CHECKS = {"max_attach": max_attach_check}
