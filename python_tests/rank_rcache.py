"""Registration cache of local buffers (rank side; issue 25 item 5).

Each rank puts spec["size"] bytes (above osc/rdma's fragment size, so osc/rdma
registers the source buffer itself for each put, through btl_register_mem)
from one source buffer into its right neighbour's Win.Create window (Win.Allocate
memory of a node's peers is reached by load and store, not by the BTL):
  phase "repeat": spec["repeat"] puts from the same buffer, each flushed;
  phase "remap":  the buffer is unmapped (munmap) and a new anonymous mapping
                  is made at the same address (MAP_FIXED) with other bytes;
                  one more put from it.
The neighbour checks that its window holds the remapped bytes. The rank
reports, from btl-ofi's MPI_T counters, what each phase did:
  repeat: registrations made, cache hits and misses;
  unmap:  registrations the cache forgot (rcache_invalidated);
  remap:  hits and misses of the put from the new mapping.
On a NIC a registration pins pages: a hit on the old registration after the
remap would move the old pages' bytes. The driver (test_rcache.py) judges the
counters; this side checks the data and prints one line per rank,
"RCACHE <id> rank <r>: {json}".
"""

import ctypes
import json
import mmap
import sys

import numpy as np
from mpi4py import MPI

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MAP_FIXED = 0x10
MAP_FAILED = ctypes.c_void_p(-1).value


def _map(size, at=None):
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (MAP_FIXED if at else 0)
    addr = _libc.mmap(at, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
    if addr in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap failed")
    return addr


def _array(addr, size):
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(addr))


def _counts(ctx):
    snap = ctx.counters.snapshot()
    return {k: snap.get(k, 0) for k in ("registrations", "rcache_hits", "rcache_misses",
                                        "rcache_invalidated", "rcache_entries")}


def _delta(after, before):
    return {k: after[k] - before[k] for k in after if k != "rcache_entries"}


def _pattern(rank, stamp, size):
    """The bytes rank puts in phase stamp (1: repeat, 2: remap)."""
    return ((np.arange(size, dtype=np.uint32) * 7 + rank * 131 + stamp) % 251).astype(np.uint8)


def rcache_check(ctx, spec):
    size, repeat = spec["size"], spec["repeat"]
    errors = []
    target = np.zeros(size, dtype=np.uint8)
    win = MPI.Win.Create(target, 1, comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    addr = _map(size)
    src = _array(addr, size)
    log = {}
    try:
        src[:] = _pattern(ctx.rank, 1, size)
        ctx.comm.Barrier()
        win.Lock_all()
        c0 = _counts(ctx)
        for _ in range(repeat):
            win.Put(src, ctx.right, 0)
            win.Flush(ctx.right)
        c1 = _counts(ctx)
        # the same address, other pages: the old registration must not be used
        if _libc.munmap(addr, size) != 0:
            raise OSError(ctypes.get_errno(), "munmap failed")
        c2 = _counts(ctx)
        again = _map(size, addr)
        if again != addr:
            errors.append(f"rank {ctx.rank}: mmap(MAP_FIXED) gave {again:#x}, not {addr:#x}")
        src = _array(addr, size)
        src[:] = _pattern(ctx.rank, 2, size)
        win.Put(src, ctx.right, 0)
        win.Flush(ctx.right)
        c3 = _counts(ctx)
        win.Unlock_all()
        log = {"repeat": _delta(c1, c0), "unmap": _delta(c2, c1), "remap": _delta(c3, c2),
               "entries": c3["rcache_entries"]}
        ctx.comm.Barrier()
        bad = np.flatnonzero(target != _pattern(ctx.left, 2, size))
        if bad.size:
            errors.append(f"rank {ctx.rank}: {bad.size} of {size} bytes from rank {ctx.left}'s "
                          f"remapped buffer are wrong, first at offset {bad[0]}")
    except MPI.Exception as exc:
        errors.append(f"rank {ctx.rank}: {exc.Get_error_string()}")
    finally:
        _libc.munmap(addr, size)
        ctx.comm.Barrier()
        win.Free()
        print(f"RCACHE {spec['id']} rank {ctx.rank}: {json.dumps(log)}", file=sys.stderr,
              flush=True)
    return errors


RCACHE_CHECKS = {"rcache": rcache_check}
