"""A NIC's limit on live registrations (rank side; issue 25, bad input per profile).

ofi_strictmr refuses fi_mr_reg past FI_OFI_STRICTMR_REG_LIMIT live
registrations, with -FI_ENOMEM, as verbs and efa do past a device's max_mr.
With MPI_ERRORS_RETURN, each rank makes Win.Create windows of 1 KiB, one
after another, until one fails (at most spec["max"]). Then it checks that
nothing was lost: after the last window made is freed (osc/rdma retries a
refused registration until one is freed, and under FI_MR_LOCAL its puts need
one), every other window still carries a put to the right neighbour exactly,
all are freed, and a new window made after the frees
carries an accumulate, a put and a get exactly (registrations freed are
registrations to be had again). One line per rank on stderr,
"REGLIMIT <id> rank <r>: {json}": windows made, the MPI error class and
string of the failure, and btl-ofi's registrations_failed counter delta.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

WIN_BYTES = 1024


def _stamp(rank, i):
    return (rank + 1) * 1000 + i


def reglimit_check(ctx, spec):
    comm, errors = ctx.comm, []
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    failed0 = ctx.counters.snapshot().get("registrations_failed", 0)
    wins, bufs, failure = _windows_to_the_limit(comm, spec["max"])
    failed = ctx.counters.snapshot().get("registrations_failed", 0) - failed0
    made = len(wins)
    # every rank must agree on how many windows exist before any is used
    agreed = comm.allreduce(made, op=MPI.MIN)
    if agreed != comm.allreduce(made, op=MPI.MAX):
        errors.append(f"rank {ctx.rank}: the ranks made different numbers of windows "
                      f"(this one {made})")
    # At the limit osc/rdma takes a refused registration for a passing shortage and retries
    # it until one is freed; under FI_MR_LOCAL a put needs one (its registered fragment), so
    # the last window goes first (NOTES.txt 3d).
    if agreed > 1:
        wins.pop().Free()
        bufs.pop()
        agreed -= 1
    try:
        for i, win in enumerate(wins[:agreed]):
            win.Lock(ctx.right)
            win.Put(np.array([_stamp(ctx.rank, i)], dtype=np.int64), ctx.right, 0)
            win.Unlock(ctx.right)
        comm.Barrier()
        for i in range(agreed):
            if bufs[i][0] != _stamp(ctx.left, i):
                errors.append(f"rank {ctx.rank}: window {i} (made before the limit) holds "
                              f"{bufs[i][0]}, not {_stamp(ctx.left, i)}")
    except MPI.Exception as exc:
        errors.append(f"rank {ctx.rank}: a window made before the limit failed: "
                      f"{exc.Get_error_string()}")
    for win in wins:
        win.Free()
    errors += _window_after_frees(ctx)
    log = {"made": made, "failure": failure, "registrations_failed": failed}
    print(f"REGLIMIT {spec['id']} rank {ctx.rank}: {json.dumps(log)}", file=sys.stderr,
          flush=True)
    return errors


def _windows_to_the_limit(comm, most):
    """Win.Create windows of WIN_BYTES, one after another, until one fails or `most` are
    made: (the windows, their buffers, the failure or None)."""
    wins, bufs, failure = [], [], None
    for i in range(most):
        buf = np.zeros(WIN_BYTES // 8, dtype=np.int64)
        try:
            win = MPI.Win.Create(buf, 8, comm=comm)
        except MPI.Exception as exc:
            failure = {"at": i, "class": exc.Get_error_class(), "text": exc.Get_error_string(),
                       "err_win": exc.Get_error_class() == MPI.ERR_WIN}
            break
        win.Set_errhandler(MPI.ERRORS_RETURN)
        wins.append(win)
        bufs.append(buf)
    return wins, bufs, failure


def _window_after_frees(ctx):
    """After the frees: a new window carries an accumulate, a put and a get exactly.
    Returns this rank's errors."""
    comm, errors = ctx.comm, []
    again = np.zeros(4, dtype=np.int64)
    try:
        win = MPI.Win.Create(again, 8, comm=comm)
        win.Set_errhandler(MPI.ERRORS_RETURN)
        win.Lock_all()
        win.Accumulate(np.array([ctx.rank + 1], dtype=np.int64), ctx.right, 0, MPI.SUM)
        win.Put(np.array([_stamp(ctx.rank, 99)], dtype=np.int64), ctx.right, 1)
        win.Flush_all()
        got = np.zeros(1, dtype=np.int64)
        win.Get(got, ctx.right, 1)
        win.Unlock_all()
        comm.Barrier()
        if again[0] != ctx.left + 1 or again[1] != _stamp(ctx.left, 99) or \
                got[0] != _stamp(ctx.rank, 99):
            errors.append(f"rank {ctx.rank}: the window made after the frees holds "
                          f"{again[:2].tolist()} and the get read {got[0]} (expected "
                          f"[{ctx.left + 1}, {_stamp(ctx.left, 99)}] and {_stamp(ctx.rank, 99)})")
        win.Free()
    except MPI.Exception as exc:
        errors.append(f"rank {ctx.rank}: after freeing the windows, a new one failed: "
                      f"{exc.Get_error_string()}")
    return errors


REGLIMIT_CHECKS = {"reglimit": reglimit_check}
