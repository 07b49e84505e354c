"""The one-sided checks a rank program runs (mpi4py + numpy).

Every check is collective over COMM_WORLD and returns this rank's list of
error strings (empty = exact). Pattern: each rank is the origin for its right
neighbour and the target of its left one, so on one node every check crosses
processes. Every target region sits between sentinel bytes, and the whole
window (and the whole origin/result buffer) is compared byte for byte with
what applying the operation in numpy says it must hold. The checks of many
origins at once, built on these windows and comparisons, are in
rank_concurrency.py.
"""


import numpy as np
from mpi4py import MPI

import semantics as sem

MPI_TYPES = {
    "int8": MPI.INT8_T, "int16": MPI.INT16_T, "int32": MPI.INT32_T, "int64": MPI.INT64_T,
    "uint32": MPI.UINT32_T, "uint64": MPI.UINT64_T, "float32": MPI.FLOAT,
    "float64": MPI.DOUBLE, "complex128": MPI.C_DOUBLE_COMPLEX, "2int": MPI.TWOINT,
    "uint8": MPI.UINT8_T,
}
MPI_OPS = {name: getattr(MPI, name) for name in sem.ALL_OPS}
SENTINEL = 0xA5       # window bytes outside the target region
RESULT_SENTINEL = 0x5A  # origin/result buffer bytes the operation must not touch
REGION_OFFSET = 48    # bytes before the region: a multiple of 1, 3, 4, 8 and 16
TAIL = 64             # sentinel bytes after the region


class Ctx:
    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.right = (self.rank + 1) % self.size
        self.left = (self.rank - 1) % self.size


# ---------------------------------------------------------------- layouts

class Layout:
    """n elements of a base type placed at `index` within `span` elements,
    described to MPI by `count` x `datatype`."""

    def __init__(self, name, n, base):
        self.name = name
        builder = getattr(self, "_" + name)
        self.index, self.span, self.datatype, self.count = builder(n, base)
        self.derived = self.datatype is not base
        if self.derived:
            self.datatype.Commit()

    def free(self):
        if self.derived:
            self.datatype.Free()

    @staticmethod
    def _contig(n, base):
        return np.arange(n), n, base, n

    @staticmethod
    def _vector(n, base):
        # blocks of 2 every 3 elements (n even), or single elements every 2
        block = 2 if n % 2 == 0 else 1
        stride = block + 1
        nblocks = n // block
        index = np.array([b * stride + j for b in range(nblocks) for j in range(block)], int)
        return index, int(index[-1]) + 1, base.Create_vector(nblocks, block, stride), 1

    @staticmethod
    def _indexed(n, base):
        lengths, displs, pos, left, k = [], [], 0, n, 0
        while left:
            length = min((1, 3, 2)[k % 3], left)
            pos += (2, 0, 1)[k % 3]
            lengths.append(length)
            displs.append(pos)
            pos += length
            left -= length
            k += 1
        index = np.array([d + j for d, ln in zip(displs, lengths) for j in range(ln)], int)
        return index, int(index[-1]) + 1, base.Create_indexed(lengths, displs), 1

    @staticmethod
    def _struct(n, base):
        # the same basic type at irregular byte displacements (valid for accumulate)
        extent = base.Get_extent()[1]
        lengths, displs, pos, left, k = [], [], 1, n, 0
        while left:
            length = min((2, 1, 3)[k % 3], left)
            lengths.append(length)
            displs.append(pos * extent)
            pos += length + (k % 2) + 1
            left -= length
            k += 1
        index = np.array([d // extent + j for d, ln in zip(displs, lengths) for j in range(ln)],
                         int)
        dtype = MPI.Datatype.Create_struct(lengths, displs, [base] * len(lengths))
        return index, int(index[-1]) + 1, dtype, 1

    @staticmethod
    def _subarray(n, base):
        cols = 3 if n % 3 == 0 else 1
        rows = n // cols
        shape, start = (rows + 2, cols + 2), (1, 1)
        grid = np.arange(shape[0] * shape[1]).reshape(shape)
        index = grid[start[0]:start[0] + rows, start[1]:start[1] + cols].ravel()
        dtype = base.Create_subarray(list(shape), [rows, cols], list(start))
        # the subarray's extent covers the whole grid: span is the grid
        return index, shape[0] * shape[1], dtype, 1


# ---------------------------------------------------------------- windows

class Window:
    """A window of `nbytes` per rank in one flavor, with a byte view of local memory."""

    def __init__(self, ctx, flavor, disp_unit, nbytes):
        self.ctx, self.flavor = ctx, flavor
        self.disp_unit = 1 if flavor == "dynamic" else disp_unit
        self.mem = None
        if flavor == "create":
            self.mem = np.empty(nbytes, np.uint8)
            self.win = MPI.Win.Create(self.mem, disp_unit, comm=ctx.comm)
            self.local = self.mem
        elif flavor == "allocate":
            self.win = MPI.Win.Allocate(nbytes, disp_unit, comm=ctx.comm)
            self.local = np.frombuffer(self.win.tomemory(), np.uint8) if nbytes else \
                np.empty(0, np.uint8)
        elif flavor == "dynamic":
            self.win = MPI.Win.Create_dynamic(comm=ctx.comm)
            self.mem = np.empty(max(nbytes, 1), np.uint8)
            self.win.Attach(self.mem)
            self.local = self.mem[:nbytes]
        else:
            raise ValueError(flavor)
        self.win.Set_errhandler(MPI.ERRORS_RETURN)
        base = MPI.Get_address(self.mem) if flavor == "dynamic" else 0
        self.bases = ctx.comm.allgather(base)

    def disp(self, target, byte_offset):
        """target_disp that addresses `byte_offset` of `target`'s window."""
        if self.flavor == "dynamic":
            return self.bases[target] + byte_offset
        assert byte_offset % self.disp_unit == 0
        return byte_offset // self.disp_unit

    def free(self):
        if self.flavor == "dynamic":
            self.win.Detach(self.mem)
        self.win.Free()


# ---------------------------------------------------------------- epochs

GROUP_CACHE = {}


def _group(ctx, rank):
    return MPI.COMM_WORLD.Get_group().Incl([rank])


FENCE_OPEN = {"fence": 0, "fence_assert": MPI.MODE_NOPRECEDE}
FENCE_CLOSE = {"fence": 0,
               "fence_assert": MPI.MODE_NOSTORE | MPI.MODE_NOPUT | MPI.MODE_NOSUCCEED}
PASSIVE_ONLY = {"lock_shared", "lock_exclusive", "lock_all", "flush", "flush_all",
                "flush_local", "flush_local_all", "sync"}


def run_epoch(ctx, win, sync, target, init, issue, after_local, verify_target):
    """One access epoch of `sync` kind towards `target`.

    init(): local stores that set up this rank's window;
    issue(): posts the operation(s), returns requests (maybe empty);
    after_local(): runs once the operation is complete at the origin
                   (origin buffers reusable, fetched results valid);
    verify_target(): runs on every rank once the operation(s) of its origin
                   are complete at this target."""
    w = win.win
    if sync == "sync":
        _sync_epoch(ctx, w, target, init, issue, after_local, verify_target)
        return
    init()
    if sync in FENCE_OPEN:
        w.Fence(FENCE_OPEN[sync])
        MPI.Request.Waitall(issue())
        w.Fence(FENCE_CLOSE[sync])
        after_local()
        verify_target()
        return
    if sync == "pscw":
        _pscw_epoch(ctx, w, issue, after_local, verify_target)
        return
    ctx.comm.Barrier()  # windows initialised before any origin touches them
    if sync in ("lock_shared", "lock_exclusive"):
        kind = MPI.LOCK_SHARED if sync == "lock_shared" else MPI.LOCK_EXCLUSIVE
        w.Lock(target, kind)
        MPI.Request.Waitall(issue())
        w.Unlock(target)
        after_local()
        ctx.comm.Barrier()
        verify_target()
        ctx.comm.Barrier()
        return
    if sync == "lock_all":
        w.Lock_all()
        MPI.Request.Waitall(issue())
        w.Unlock_all()
        after_local()
        ctx.comm.Barrier()
        verify_target()
        ctx.comm.Barrier()
        return
    if sync in ("flush", "flush_all", "flush_local", "flush_local_all"):
        _flush_epoch(ctx, w, sync, target, issue, after_local, verify_target)
        return
    raise ValueError(f"unknown sync mode {sync}")


def _sync_epoch(ctx, w, target, init, issue, after_local, verify_target):
    """run_epoch's "sync": target-side stores inside a passive epoch, published with
    Win_sync."""
    w.Lock_all()
    init()
    w.Sync()
    ctx.comm.Barrier()
    MPI.Request.Waitall(issue())
    w.Flush(target)
    after_local()
    ctx.comm.Barrier()
    w.Sync()
    verify_target()
    ctx.comm.Barrier()
    w.Unlock_all()


def _pscw_epoch(ctx, w, issue, after_local, verify_target):
    """run_epoch's "pscw": this rank exposes its window to its left neighbour and
    accesses its right one's."""
    post, start = _group(ctx, ctx.left), _group(ctx, ctx.right)
    w.Post(post)
    w.Start(start)
    MPI.Request.Waitall(issue())
    w.Complete()
    after_local()
    w.Wait()
    verify_target()
    post.Free()
    start.Free()
    ctx.comm.Barrier()


def _flush_epoch(ctx, w, sync, target, issue, after_local, verify_target):
    """run_epoch's flush modes, in one Lock_all epoch: the operations completed by
    Flush / Flush_all, or first at the origin by Flush_local / Flush_local_all."""
    w.Lock_all()
    MPI.Request.Waitall(issue())
    if sync == "flush_local":
        w.Flush_local(target)
        after_local()
        w.Flush(target)
    elif sync == "flush_local_all":
        w.Flush_local_all()
        after_local()
        w.Flush_all()
    else:
        w.Flush(target) if sync == "flush" else w.Flush_all()
        after_local()
    ctx.comm.Barrier()
    w.Sync()
    verify_target()  # inside the epoch: flush alone must have completed it remotely
    ctx.comm.Barrier()
    w.Unlock_all()


# ---------------------------------------------------------------- comparisons

def describe_mismatch(what, got, want, region, elem_dtype, limit=3):
    """Error strings for the differing bytes of two uint8 arrays.

    region = (start, stop) byte range holding elements of elem_dtype; bytes
    outside it are sentinels."""
    diff = np.flatnonzero(got != want)
    if diff.size == 0:
        return []
    errors = []
    start, stop = region
    size = elem_dtype.itemsize
    reported = set()
    for byte in diff:
        byte = int(byte)
        if start <= byte < stop:
            k = (byte - start) // size
            if ("e", k) in reported:
                continue
            reported.add(("e", k))
            lo = start + k * size
            g = got[lo:lo + size].view(elem_dtype)[0]
            e = want[lo:lo + size].view(elem_dtype)[0]
            errors.append(f"{what}: element {k}: got {g!r}, expected {e!r}")
        else:
            where = f"{byte - stop} bytes past the region" if byte >= stop else \
                f"{start - byte} bytes before the region"
            errors.append(f"{what}: sentinel overwritten {where} "
                          f"(0x{int(got[byte]):02x}, expected 0x{int(want[byte]):02x})")
        if len(errors) >= limit:
            break
    errors.append(f"{what}: {diff.size} differing bytes in total")
    return errors


# ---------------------------------------------------------------- generic RMA check

FETCHING = {"get", "rget", "gacc", "rgacc", "fop"}
ACCUMULATING = {"acc", "racc", "gacc", "rgacc", "fop"}
REQUEST = {"rput", "rget", "racc", "rgacc"}


def rma_check(ctx, spec):
    """Put / Get / (R)accumulate / (R)get_accumulate / Fetch_and_op from every rank
    to its right neighbour, in one flavor and sync mode, with derived layouts."""
    dname, n = spec["dtype"], spec["count"]
    dtype, base = sem.NUMPY_DTYPES[dname], MPI_TYPES[dname]
    olay = Layout(spec.get("olayout", "contig"), n, base) if n else None
    tlay = Layout(spec.get("tlayout", "contig"), n, base) if n else None
    tspan = tlay.span if n else 0
    region = (REGION_OFFSET, REGION_OFFSET + tspan * dtype.itemsize)
    win = Window(ctx, spec["flavor"], spec.get("disp_unit", dtype.itemsize),
                 region[1] + TAIL)
    steps, errors = _rma_steps(ctx, spec, win, olay, tlay, region)
    try:
        run_epoch(ctx, win, spec["sync"], ctx.right, *steps)
    finally:
        win.free()
        for lay in (olay, tlay):
            if lay is not None:
                lay.free()
    return errors


def _rma_steps(ctx, spec, win, olay, tlay, region):
    """rma_check's steps for run_epoch (init, issue, after_local, verify_target) over
    its window and layouts (None for no elements), and the list of errors they fill."""
    op, mpi_op = spec["op"], spec.get("mpi_op", "REPLACE")
    dname, n = spec["dtype"], spec["count"]
    dtype, base = sem.NUMPY_DTYPES[dname], MPI_TYPES[dname]
    tspan = tlay.span if n else 0
    seed = sem.seed_of(spec["id"])
    highbit = spec.get("highbit", False)
    val_op = "REPLACE" if op in ("put", "rput", "get", "rget") else mpi_op

    def target_init(rank):
        return sem.values(dname, val_op, tspan, seed, rank, "target", highbit)

    def origin_data(rank):
        return sem.values(dname, val_op, n, seed, rank, "origin", highbit)

    # this rank as origin
    ospan = olay.span if n else 0
    obuf = np.full(max(ospan, 1) * dtype.itemsize, RESULT_SENTINEL, np.uint8)
    if n:
        obuf.view(dtype)[olay.index] = origin_data(ctx.rank)
    rbuf = obuf.copy() if op in FETCHING else None
    if rbuf is not None:
        rbuf[:] = RESULT_SENTINEL
    errors = []

    def init():
        win.local[:] = SENTINEL
        if n:
            win.local[region[0]:region[1]].view(dtype)[:] = target_init(ctx.rank)

    def issue():
        return _post(win, op, mpi_op, ctx.right, n, base, obuf, rbuf, olay, tlay)

    def after_local():
        if rbuf is not None:
            want = np.full_like(rbuf, RESULT_SENTINEL)
            if n:
                want.view(dtype)[olay.index] = target_init(ctx.right)[tlay.index]
            errors.extend(describe_mismatch(f"result at origin {ctx.rank}", rbuf, want,
                                            (0, len(rbuf)), dtype))
        obuf[:] = 0xEE  # the origin buffer may be reused now: data must already be out

    def verify_target():
        want = np.full(region[1] + TAIL, SENTINEL, np.uint8)
        if n:
            current = target_init(ctx.rank)
            incoming = origin_data(ctx.left)
            if op in ("put", "rput"):
                current[tlay.index] = incoming
            elif op in ACCUMULATING:
                current[tlay.index] = sem.apply_op(mpi_op, current[tlay.index], incoming)
            want[region[0]:region[1]].view(dtype)[:] = current
        errors.extend(describe_mismatch(f"window of target {ctx.rank}", win.local.copy(),
                                        want, region, dtype))

    return (init, issue, after_local, verify_target), errors


def _post(win, op, mpi_op, t, n, base, obuf, rbuf, olay, tlay):
    """rma_check's issue: op from obuf (rbuf: what a fetching op fetches into) laid out
    as olay into the region of rank t laid out as tlay, of n elements of base (0: none,
    no layouts). Returns its request in a list (a request op), else []."""
    disp = win.disp(t, REGION_OFFSET)
    ospec = [obuf, olay.count, olay.datatype] if n else [obuf, 0, base]
    tspec = (disp, tlay.count, tlay.datatype) if n else (disp, 0, base)
    rspec = [rbuf, olay.count, olay.datatype] if n and rbuf is not None else \
        [rbuf, 0, base]
    w, o = win.win, MPI_OPS[mpi_op]
    if op == "put":
        w.Put(ospec, t, tspec)
    elif op == "get":
        w.Get(rspec, t, tspec)
    elif op == "acc":
        w.Accumulate(ospec, t, tspec, o)
    elif op == "gacc":
        w.Get_accumulate(ospec, rspec, t, tspec, o)
    elif op == "fop":
        w.Fetch_and_op([obuf, base], [rbuf, base], t, disp, o)
    elif op == "rput":
        return [w.Rput(ospec, t, tspec)]
    elif op == "rget":
        return [w.Rget(rspec, t, tspec)]
    elif op == "racc":
        return [w.Raccumulate(ospec, t, tspec, o)]
    elif op == "rgacc":
        return [w.Rget_accumulate(ospec, rspec, t, tspec, o)]
    else:
        raise ValueError(op)
    return []


# ---------------------------------------------------------------- compare-and-swap

def cas_check(ctx, spec):
    """Two compare-and-swaps on one element of the right neighbour: the first
    matches (swaps), the second does not; results and target exact."""
    dname = spec["dtype"]
    dtype, base = sem.NUMPY_DTYPES[dname], MPI_TYPES[dname]
    size = dtype.itemsize
    region = (REGION_OFFSET, REGION_OFFSET + size)
    win = Window(ctx, spec["flavor"], spec.get("disp_unit", size), region[1] + TAIL)
    seed = sem.seed_of(spec["id"])

    def initial(rank):
        return sem.values(dname, "REPLACE", 1, seed, rank, "target")

    def desired(rank):
        return sem.values(dname, "REPLACE", 1, seed, rank, "origin")

    mine, old = desired(ctx.rank), initial(ctx.right)
    compare_hit = old.copy()
    compare_miss = mine ^ dtype.type(1)  # never equal to what the first CAS stored
    again = mine ^ dtype.type(0x3C) if dname in sem.INTEGER else mine + 2
    results = np.full(2, 0, dtype)
    errors = []

    def init():
        win.local[:] = SENTINEL
        win.local[region[0]:region[1]].view(dtype)[:] = initial(ctx.rank)

    def issue():
        disp = win.disp(ctx.right, REGION_OFFSET)
        win.win.Compare_and_swap([mine, base], [compare_hit, base], [results[0:1], base],
                                 ctx.right, disp)
        win.win.Compare_and_swap([again, base], [compare_miss, base], [results[1:2], base],
                                 ctx.right, disp)
        return []

    def after_local():
        want = np.array([old[0], mine[0]], dtype)
        if not np.array_equal(results.view(np.uint8), want.view(np.uint8)):
            errors.append(f"results at origin {ctx.rank}: got {results.tolist()}, "
                          f"expected {want.tolist()} (first CAS matches, second does not)")

    def verify_target():
        want = np.full(region[1] + TAIL, SENTINEL, np.uint8)
        want[region[0]:region[1]].view(dtype)[:] = desired(ctx.left)
        errors.extend(describe_mismatch(f"window of target {ctx.rank}", win.local.copy(),
                                        want, region, dtype))

    try:
        run_epoch(ctx, win, spec["sync"], ctx.right, init, issue, after_local, verify_target)
    finally:
        win.free()
    return errors


# ---------------------------------------------------------------- dynamic windows

def dynamic_regions_check(ctx, spec):
    """Create_dynamic with three attached regions; Put into the middle one,
    detach the first, attach a new region elsewhere and Put there too; both
    targets exact, neighbours untouched."""
    dtype = np.dtype("int64")
    n = spec["count"]
    seed = sem.seed_of(spec["id"])
    win = MPI.Win.Create_dynamic(comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    nbytes = REGION_OFFSET + n * 8 + TAIL
    regions = [np.full(nbytes, SENTINEL, np.uint8) for _ in range(3)]
    for r in regions:
        win.Attach(r)
    errors = []

    def put_into(idx, buffers, tag):
        addrs = ctx.comm.allgather(MPI.Get_address(buffers[idx]))
        data = sem.values("int64", "REPLACE", n, seed + tag, ctx.rank, "origin")
        win.Lock(ctx.right, MPI.LOCK_SHARED)
        win.Put(data, ctx.right, addrs[ctx.right] + REGION_OFFSET)
        win.Unlock(ctx.right)
        ctx.comm.Barrier()
        incoming = sem.values("int64", "REPLACE", n, seed + tag, ctx.left, "origin")
        for k, buf in enumerate(buffers):
            want = np.full(nbytes, SENTINEL, np.uint8)
            if k == idx:
                want[REGION_OFFSET:REGION_OFFSET + n * 8].view(dtype)[:] = incoming
            errors.extend(describe_mismatch(f"attached region {k} (put #{tag})", buf.copy(),
                                            want, (REGION_OFFSET, REGION_OFFSET + n * 8), dtype))
        ctx.comm.Barrier()

    put_into(1, regions, 1)
    for r in regions:
        r[:] = SENTINEL
    ctx.comm.Barrier()
    win.Detach(regions[0])
    fresh = np.full(nbytes + 4096, SENTINEL, np.uint8)[4096:]  # a different address
    win.Attach(fresh)
    live = [fresh, regions[1], regions[2]]
    put_into(0, live, 2)
    for r in live:
        win.Detach(r)
    win.Free()
    return errors


CHECKS = {
    "rma": rma_check,
    "cas": cas_check,
    "dynamic_regions": dynamic_regions_check,
}
