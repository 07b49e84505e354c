"""Checks of many origins at once (rank side of check_sets.concurrency_checks).

Every rank is an origin at the same time, on rank_checks' windows, judged with
its comparisons: fetch-and-adds, read-modify-writes under an exclusive lock,
accumulates and ordered accumulates on the same words of rank 0, and puts of
mixed sizes scattered into every other rank's window, a flush every few.
"""

import numpy as np
from mpi4py import MPI

import semantics as sem
from rank_checks import MPI_TYPES, REGION_OFFSET, SENTINEL, TAIL, Window, describe_mismatch

# ---------------------------------------------------------------- one target, rank 0

def _shared_slot_window(ctx, spec, nelems, dtype):
    win = Window(ctx, spec["flavor"], dtype.itemsize, REGION_OFFSET + nelems * dtype.itemsize
                 + TAIL)
    win.local[:] = SENTINEL
    win.local[REGION_OFFSET:REGION_OFFSET + nelems * dtype.itemsize].view(dtype)[:] = 0
    ctx.comm.Barrier()
    return win


def _check_slot_window(ctx, win, want_values, dtype, what):
    if ctx.rank != 0:
        return []
    region = (REGION_OFFSET, REGION_OFFSET + len(want_values) * dtype.itemsize)
    want = np.full(len(win.local), SENTINEL, np.uint8)
    want[region[0]:region[1]].view(dtype)[:] = want_values
    return describe_mismatch(what, win.local.copy(), want, region, dtype)


def fadd_many_check(ctx, spec):
    """All ranks Fetch_and_op(SUM, 1) `repeat` times on one element of rank 0:
    the final count is exact and the fetched values are exactly 0..N-1."""
    reps, dtype = spec["repeat"], np.dtype("int64")
    win = _shared_slot_window(ctx, spec, 1, dtype)
    one, got = np.ones(1, dtype), np.zeros(1, dtype)
    fetched = []
    disp = win.disp(0, REGION_OFFSET)
    win.win.Lock_all()
    for _ in range(reps):
        win.win.Fetch_and_op(one, got, 0, disp, MPI.SUM)
        win.win.Flush(0)
        fetched.append(int(got[0]))
    win.win.Unlock_all()
    ctx.comm.Barrier()
    everything = ctx.comm.gather(fetched, root=0)
    errors = _check_slot_window(ctx, win, np.array([reps * ctx.size], dtype), dtype,
                                "shared counter on rank 0")
    if ctx.rank == 0:
        flat = sorted(v for part in everything for v in part)
        if flat != list(range(reps * ctx.size)):
            dup = len(flat) - len(set(flat))
            errors.append(f"fetched values are not exactly 0..{reps * ctx.size - 1}: "
                          f"{dup} duplicates, min {flat[0]}, max {flat[-1]}")
        for r, part in enumerate(everything):
            if part != sorted(part):
                errors.append(f"rank {r}: its own fetched values are not increasing")
    win.free()
    return errors


def excl_lock_check(ctx, spec):
    """Non-atomic read-modify-write (Get, Flush, +1, Put) under an exclusive
    lock on rank 0, `repeat` times per rank: no update may be lost."""
    reps, dtype = spec["repeat"], np.dtype("int64")
    win = _shared_slot_window(ctx, spec, 2, dtype)
    cur = np.zeros(2, dtype)
    disp = win.disp(0, REGION_OFFSET)
    for _ in range(reps):
        win.win.Lock(0, MPI.LOCK_EXCLUSIVE)
        win.win.Get(cur, 0, disp)
        win.win.Flush(0)
        cur += 1
        win.win.Put(cur, 0, disp)
        win.win.Unlock(0)
    ctx.comm.Barrier()
    total = reps * ctx.size
    errors = _check_slot_window(ctx, win, np.array([total, total], dtype), dtype,
                                "counter guarded by MPI_LOCK_EXCLUSIVE on rank 0")
    win.free()
    return errors


def acc_atomic_check(ctx, spec):
    """Every rank Accumulates (SUM) into the same `count` elements of rank 0,
    `repeat` times, no exclusive lock: element-wise atomicity makes the sum exact
    (count 1 rides on BTL atomics, larger counts on get-op-put under osc/rdma's
    accumulate lock)."""
    reps, n = spec["repeat"], spec["count"]
    dtype = sem.NUMPY_DTYPES[spec["dtype"]]
    base = MPI_TYPES[spec["dtype"]]
    win = _shared_slot_window(ctx, spec, n, dtype)
    mine = (np.arange(n) % 7 + ctx.rank + 1).astype(dtype)
    disp = win.disp(0, REGION_OFFSET)
    win.win.Lock_all()
    for _ in range(reps):
        win.win.Accumulate([mine, base], 0, (disp, n, base), MPI.SUM)
    win.win.Unlock_all()
    ctx.comm.Barrier()
    total = sum((np.arange(n) % 7 + r + 1) for r in range(ctx.size)) * reps
    errors = _check_slot_window(ctx, win, total.astype(dtype), dtype,
                                f"accumulate target on rank 0 ({ctx.size} ranks x {reps})")
    win.free()
    return errors


def acc_order_check(ctx, spec):
    """Accumulates from one origin to one location are ordered (MPI default
    accumulate_ordering): a REPLACE sequence leaves the last value, a SUM after
    it adds to that, and a Get_accumulate(NO_OP) after them sees the result."""
    reps, dtype = spec["repeat"], np.dtype("int64")
    win = _shared_slot_window(ctx, spec, ctx.size, dtype)
    disp = win.disp(0, REGION_OFFSET + ctx.rank * dtype.itemsize)
    seen = np.zeros(1, dtype)
    errors = []
    win.win.Lock_all()
    for i in range(1, reps + 1):
        win.win.Accumulate(np.array([i * 1000 + ctx.rank], dtype), 0, disp, MPI.REPLACE)
    win.win.Accumulate(np.array([7], dtype), 0, disp, MPI.SUM)
    win.win.Get_accumulate(np.zeros(1, dtype), seen, 0, disp, MPI.NO_OP)
    win.win.Flush(0)
    want_mine = reps * 1000 + ctx.rank + 7
    if seen[0] != want_mine:
        errors.append(f"rank {ctx.rank}: Get_accumulate(NO_OP) after the sequence saw "
                      f"{int(seen[0])}, expected {want_mine}")
    win.win.Unlock_all()
    ctx.comm.Barrier()
    want = np.array([reps * 1000 + r + 7 for r in range(ctx.size)], dtype)
    errors += _check_slot_window(ctx, win, want, dtype, "ordered accumulates on rank 0")
    win.free()
    return errors


# ---------------------------------------------------------------- every rank a target

SCATTER_SIZES = (1, 8, 8, 8, 24, 64, 200, 512, 513, 1000, 4096, 5000)


def _scatter_plan(seed, origin, target, count, slot):
    """The puts `origin` makes into `target`: (offset, size, fill byte) each,
    sizes from SCATTER_SIZES in a seeded order, every one in its own slot of
    the target's window (origins take disjoint slot ranges), so the target
    knows exactly what it must hold."""
    rng = np.random.default_rng([seed, origin, target])
    sizes = rng.choice(SCATTER_SIZES, count)
    slots = rng.permutation(count)
    return [(int(slots[i]) * slot, int(sizes[i]), int(rng.integers(1, 255)))
            for i in range(count)]


def scatter_puts_check(ctx, spec):
    """Every rank Puts spec["count"] pieces of mixed sizes (1 B to 5000 B) into
    every other rank at scattered offsets, in one lock_all epoch with a flush
    every spec["per_flush"] puts, each from its own origin buffer: the small
    ones are what btl_ofi_put_coalesce gathers. Then every rank checks its
    whole window byte for byte: each piece where it belongs, nothing else touched."""
    seed, count, per_flush = sem.seed_of(spec["id"]), spec["count"], spec["per_flush"]
    slot = max(SCATTER_SIZES) + 8
    region = count * slot
    win = Window(ctx, spec.get("flavor", "create"), 1, region * ctx.size)
    win.local[:] = SENTINEL
    ctx.comm.Barrier()
    plans = {t: _scatter_plan(seed, ctx.rank, t, count, slot)
             for t in range(ctx.size) if t != ctx.rank}
    sources = {t: [np.full(size, fill, np.uint8) for _, size, fill in plans[t]] for t in plans}
    win.win.Lock_all()
    for i in range(count):
        for t, plan in plans.items():
            off, _, _ = plan[i]
            win.win.Put(sources[t][i], t, win.disp(t, ctx.rank * region + off))
        if (i + 1) % per_flush == 0:
            win.win.Flush_all()
    win.win.Unlock_all()
    ctx.comm.Barrier()
    want = np.full(region * ctx.size, SENTINEL, np.uint8)
    for origin in range(ctx.size):
        if origin != ctx.rank:
            for off, size, fill in _scatter_plan(seed, origin, ctx.rank, count, slot):
                want[origin * region + off:origin * region + off + size] = fill
    errors = describe_mismatch(f"window of rank {ctx.rank} after scattered puts",
                               win.local.copy(), want, (0, len(want)), np.dtype(np.uint8))
    win.free()
    return errors


CONCURRENCY_CHECKS = {
    "scatter_puts": scatter_puts_check,
    "fadd_many": fadd_many_check,
    "excl_lock": excl_lock_check,
    "acc_atomic": acc_atomic_check,
    "acc_order": acc_order_check,
}
