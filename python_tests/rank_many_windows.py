"""Many windows over a run (rank side; issue 28 item 4).

Phase "sequence": spec["sequence"] Win.Create + (every 100th: lock_all, a put
to the right neighbour, unlock_all) + Win.Free, one after another. Phase
"live", twice: spec["live"] windows created and kept, a put through the last
one, then all freed (the second time shows whether memory the first kept
grows again, i.e. a leak, or was kept once by the allocator). Each rank samples, after a warm-up of spec["warmup"] windows
(what Open MPI and the allocator set up once), after the sequence and after
the live phase: btl-ofi's registrations_live and rcache_entries (MPI_T), its
put counter, the process's resident memory (VmRSS) and open file
descriptors (/proc/self/fd). One line per rank on stderr,
"MANYWIN <id> rank <r>: {json}", for the driver (test_many_windows.py) to
judge: registrations and descriptors back where they were, memory grown by
no more than a bound per window.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _fds():
    return len(os.listdir("/proc/self/fd"))


def _sample(ctx):
    snap = ctx.counters.snapshot() if ctx.counters else {}
    return {"registrations_live": snap.get("registrations_live", -1),
            "rcache_entries": snap.get("rcache_entries", -1),
            "put_count": snap.get("put_count", -1), "rss_kib": _rss_kib(), "fds": _fds()}


def _one_round(ctx, mem, touch):
    win = MPI.Win.Create(mem, 8, comm=ctx.comm)
    if touch:
        win.Lock_all()
        win.Put(np.array([ctx.rank + 1], dtype=np.int64), ctx.right, 0)
        win.Unlock_all()
    win.Free()


def many_windows_check(ctx, spec):
    errors = []
    mem = np.zeros(16, dtype=np.int64)
    for i in range(spec["warmup"]):
        _one_round(ctx, mem, i % 100 == 0)
    ctx.comm.Barrier()
    start = _sample(ctx)
    for i in range(spec["sequence"]):
        _one_round(ctx, mem, i % 100 == 0)
    ctx.comm.Barrier()
    after_sequence = _sample(ctx)
    if mem[0] != ctx.left + 1:
        errors.append(f"rank {ctx.rank}: the sequence's window holds {mem[0]}, not {ctx.left + 1}")
    samples = []
    for _ in range(2):  # twice: what the allocator keeps after the first is no leak
        wins, bufs = [], []
        for _ in range(spec["live"]):
            buf = np.zeros(16, dtype=np.int64)
            wins.append(MPI.Win.Create(buf, 8, comm=ctx.comm))
            bufs.append(buf)
        while_live = _sample(ctx)
        wins[-1].Lock_all()
        wins[-1].Put(np.array([ctx.rank + 1], dtype=np.int64), ctx.right, 0)
        wins[-1].Unlock_all()
        ctx.comm.Barrier()
        if bufs[-1][0] != ctx.left + 1:
            errors.append(f"rank {ctx.rank}: the last of {spec['live']} live windows holds "
                          f"{bufs[-1][0]}, not {ctx.left + 1}")
        for win in wins:
            win.Free()
        ctx.comm.Barrier()
        samples.append((while_live, _sample(ctx)))
    log = {"start": start, "after_sequence": after_sequence, "while_live": samples[0][0],
           "end": samples[0][1], "while_live_again": samples[1][0], "end_again": samples[1][1]}
    print(f"MANYWIN {spec['id']} rank {ctx.rank}: {json.dumps(log)}", file=sys.stderr,
          flush=True)
    return errors


MANY_WINDOWS_CHECKS = {"many_windows": many_windows_check}
