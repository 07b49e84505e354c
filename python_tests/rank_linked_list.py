"""One linked list built by every rank in one dynamic window (rank side; issue 24).

Like MPICH's test/mpi/rma/linked_list.c: rank 0 attaches the head; every
rank then appends spec["count"] elements of its own, each a separate
allocation (MPI.Alloc_mem or libc malloc, one per element) attached to the
Create_dynamic window right before it is appended. An element is 24 bytes:
next pointer {int32 rank; int32 pad; int64 disp}, int32 value, int32 pad;
nil is {-1, 0}. Appending, by spec["link"]:
  cas4  Compare_and_swap of the tail's next.rank (INT32_T, nil -> my rank),
        then a Put of next.disp (AINT); the loser of a race Gets next.disp
        until it is set and moves on to that element;
  cas8  Compare_and_swap of next.disp (INT64_T, 0 -> my element's address),
        then a Put of next.rank (INT32_T); the loser Gets next.rank;
  fop   MCS-queue style: Fetch_and_op(REPLACE) of a 64-bit tail word at rank
        0 ((rank << 48) | address) gives the previous tail, whose next.rank
        and next.disp are then Put.
Epochs, by spec["sync"]: lock_excl (Lock(target, EXCLUSIVE) / Unlock around
each operation) or lock_all (one Lock_all for the whole build, Flush(target)
after each operation). spec["attach"] "first" attaches every element before
any is linked (no attach then runs while a peer reads the table; Open MPI
5.0's osc/rdma needs that, NOTES.txt section 3c); the default attaches each
right before it is appended. After a Barrier every rank walks the whole list with
Get (fop: next.rank and next.disp read with Fetch_and_op(NO_OP)) and checks
it exactly: nranks * count + 1 elements, every (rank, i) once, each rank's
own in order, each element in the memory of the rank its link names, the
last one's next nil; each rank also checks its own elements' value and pad
words. An MPI error (ERRORS_RETURN) stops that rank's appends and is
reported with its error string; every rank still takes part in the
collective calls, and the walk is skipped when any rank failed.

Each rank prints one line to stderr, "LINKED-LIST <id> rank <r>: {json}",
with what its attaches looked like (new pages, and new pages below one
already attached: osc/rdma then inserts a region before others in its
sorted table, which shifts the table under a peer reading it).
"""

import contextlib
import ctypes
import json
import sys
import time

import numpy as np
from mpi4py import MPI

ELEM = np.dtype([("rank", "<i4"), ("pad", "<i4"), ("disp", "<i8"),
                 ("value", "<i4"), ("pad2", "<i4")])
RANK_OFF, DISP_OFF, VALUE_OFF = 0, 8, 16
NIL_RANK, NIL_DISP = -1, 0
GUARD = 0x5A5A5A5A            # pad words: no operation may change them
HEAD_VALUE = -0x2A2A2A2A      # the head's value (decodes to no element)
VALUE_BITS = 20               # value = (rank << 20) | i
RANK_SHIFT = 48               # fop tail word = (rank << 48) | address
LINK_WAIT = 10.0              # seconds a rank waits for a peer to complete a link
PAGE = 4096

_LIBC = ctypes.CDLL(None)
_LIBC.malloc.restype = ctypes.c_void_p
_LIBC.malloc.argtypes = [ctypes.c_size_t]
_LIBC.free.argtypes = [ctypes.c_void_p]

ERROR_CLASSES = {getattr(MPI, n): "MPI_" + n for n in dir(MPI)
                 if n.startswith("ERR_") and isinstance(getattr(MPI, n), int)}


class Failed(Exception):
    """An MPI call of the build or the walk returned an error, or a link never
    completed."""


def error_text(exc):
    """MPI.Exception as "MPI_ERR_ARG: invalid argument ... (class MPI_ERR_ARG)"."""
    cls = exc.Get_error_class()
    return f"{exc.Get_error_string()} (class {ERROR_CLASSES.get(cls, cls)})"


def mpi_call(what, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except MPI.Exception as exc:
        raise Failed(f"{what} failed: {error_text(exc)}") from None


class Block:
    """One allocation of nbytes, from MPI.Alloc_mem or libc malloc (a call
    each); .view is a numpy uint8 array over it."""

    def __init__(self, alloc, nbytes):
        self.alloc = alloc
        if alloc == "alloc_mem":
            self.mem = MPI.Alloc_mem(nbytes)
            self.ptr = None
        elif alloc == "malloc":
            self.ptr = _LIBC.malloc(nbytes)
            if not self.ptr:
                raise MemoryError(f"malloc({nbytes})")
            self.mem = MPI.buffer.fromaddress(self.ptr, nbytes)
        else:
            raise KeyError(alloc)
        self.view = np.frombuffer(self.mem, np.uint8)
        self.address = MPI.Get_address(self.view)

    def elem(self):
        return self.view[:ELEM.itemsize].view(ELEM)

    def free(self):
        self.view = None
        if self.ptr is None:
            MPI.Free_mem(self.mem)
        else:
            self.mem = None
            _LIBC.free(self.ptr)
        self.ptr = self.mem = None


def _numpy_type(dtype):
    return np.int32 if dtype.Get_size() == 4 else np.int64


def _name(dtype):
    return dtype.Get_name().removeprefix("MPI_")


def encode(rank, i):
    return (rank << VALUE_BITS) | i


def decode(value):
    return value >> VALUE_BITS, value & ((1 << VALUE_BITS) - 1)


def init_elem(block, value):
    block.elem()[0] = (NIL_RANK, GUARD, NIL_DISP, value, GUARD)


class AttachLog:
    """Where this rank's attaches landed: pages it attached for the first time,
    and those below a page it had attached already (osc/rdma inserts their
    region before others in its sorted table)."""

    def __init__(self):
        self.pages = set()
        self.stats = {"attached": 0, "new_pages": 0, "new_pages_below": 0, "retries": 0,
                      "waits": 0}

    def note(self, address):
        """Records an attach; returns a description of where it landed."""
        self.stats["attached"] += 1
        page = address // PAGE
        where = f"address {address:#x}"
        if page not in self.pages:
            self.stats["new_pages"] += 1
            if self.pages and page < max(self.pages):
                self.stats["new_pages_below"] += 1
                where += ", a new page below one attached earlier"
            else:
                where += ", a new page"
            self.pages.add(page)
        return where


class ListBuild:
    """One rank's part in building the list, and its walk."""

    def __init__(self, ctx, win, spec):
        self.ctx, self.win, self.spec = ctx, win, spec
        self.rank, self.size = ctx.rank, ctx.size
        self.count = spec["count"]
        self.link, self.sync, self.alloc = spec["link"], spec["sync"], spec["alloc"]
        self.tag = f"{self.alloc}/{self.link}/{self.sync}/attach={spec.get('attach', 'each')}"
        self.log = AttachLog()
        self.blocks = []    # every block this rank attached, in order
        self.elements = []  # this rank's list elements, i = 0..count-1
        self.i32 = np.zeros(1, np.int32)
        self.i64 = np.zeros(1, np.int64)
        self.r32 = np.zeros(1, np.int32)
        self.r64 = np.zeros(1, np.int64)

    # ------------------------------------------------------------ epochs
    @contextlib.contextmanager
    def epoch(self, target):
        """lock_excl: Lock(target, EXCLUSIVE) .. Unlock; lock_all: Flush(target)
        at the end (inside the build's Lock_all)."""
        if self.sync == "lock_excl":
            mpi_call(f"Win.Lock(rank {target}, LOCK_EXCLUSIVE)", self.win.Lock, target,
                     MPI.LOCK_EXCLUSIVE)
            try:
                yield
            finally:
                closing = sys.exc_info()[0] is None
                try:
                    mpi_call(f"Win.Unlock(rank {target})", self.win.Unlock, target)
                except Failed:
                    if closing:
                        raise
        else:
            yield
            mpi_call(f"Win.Flush(rank {target})", self.win.Flush, target)

    # ------------------------------------------------------------ operations
    def cas32(self, target, disp, compare, value, field):
        self.i32[0], self.r32[0] = value, 0
        with self.epoch(target):
            mpi_call(f"Compare_and_swap on {field} (INT32_T) of rank {target} at {disp:#x}",
                     self.win.Compare_and_swap, [self.i32, MPI.INT32_T],
                     [np.array([compare], np.int32), MPI.INT32_T], [self.r32, MPI.INT32_T],
                     target, disp)
        return int(self.r32[0])

    def cas64(self, target, disp, compare, value, field):
        self.i64[0], self.r64[0] = value, 0
        with self.epoch(target):
            mpi_call(f"Compare_and_swap on {field} (INT64_T) of rank {target} at {disp:#x}",
                     self.win.Compare_and_swap, [self.i64, MPI.INT64_T],
                     [np.array([compare], np.int64), MPI.INT64_T], [self.r64, MPI.INT64_T],
                     target, disp)
        return int(self.r64[0])

    def put(self, target, disp, value, dtype, field):
        buf = np.array([value], _numpy_type(dtype))
        with self.epoch(target):
            mpi_call(f"Put of {field} ({_name(dtype)}) to rank {target} at {disp:#x}",
                     self.win.Put, [buf, 1, dtype], target, (disp, 1, dtype))

    def get(self, target, disp, dtype, field):
        buf = np.zeros(1, _numpy_type(dtype))
        with self.epoch(target):
            mpi_call(f"Get of {field} from rank {target} at {disp:#x}",
                     self.win.Get, [buf, 1, dtype], target, (disp, 1, dtype))
        return int(buf[0])

    def fop(self, target, disp, value, dtype, op, field, flush=None):
        origin, result = np.array([value], _numpy_type(dtype)), np.zeros(1, _numpy_type(dtype))
        opname = "REPLACE" if op == MPI.REPLACE else "NO_OP"
        what = f"Fetch_and_op({opname}) on {field} ({_name(dtype)}) of rank {target} at {disp:#x}"
        if flush is None:
            with self.epoch(target):
                mpi_call(what, self.win.Fetch_and_op, [origin, dtype], [result, dtype],
                         target, disp, op)
        else:
            mpi_call(what, self.win.Fetch_and_op, [origin, dtype], [result, dtype],
                     target, disp, op)
            flush()
        return int(result[0])

    def wait_for(self, read, ready, what):
        """Read until ready(value): a peer is completing a link."""
        start = time.monotonic()
        while True:
            value = read()
            if ready(value):
                return value
            if time.monotonic() - start > LINK_WAIT:
                raise Failed(f"{what} never set ({LINK_WAIT:.0f} s): the peer that won the "
                             f"link did not complete it")
            self.log.stats["waits"] += 1
            # osc/rdma serves a Get of this rank's own memory by memcpy and its
            # Flush makes no progress: the peer's Put into it (on shm and tcp
            # carried out by this rank's progress) would never land
            self.ctx.comm.Iprobe()

    # ------------------------------------------------------------ appends
    def append(self, tail, me):
        """Link element `me` (address) after the list's tail, starting from
        `tail` (rank, disp), the last tail this rank knows. Returns the new tail."""
        if self.link == "fop":
            word = self.fop(0, self.tail_word, (self.rank << RANK_SHIFT) | me, MPI.INT64_T,
                            MPI.REPLACE, "the tail word")
            prev = (word >> RANK_SHIFT, word & ((1 << RANK_SHIFT) - 1))
            self.put(prev[0], prev[1] + DISP_OFF, me, MPI.AINT, "next.disp")
            self.put(prev[0], prev[1] + RANK_OFF, self.rank, MPI.INT32_T, "next.rank")
            return self.rank, me
        while True:
            t_rank, t_disp = tail
            if self.link == "cas4":
                old = self.cas32(t_rank, t_disp + RANK_OFF, NIL_RANK, self.rank, "next.rank")
                if old == NIL_RANK:
                    self.put(t_rank, t_disp + DISP_OFF, me, MPI.AINT, "next.disp")
                    return self.rank, me
                disp = self.wait_for(
                    lambda: self.get(t_rank, t_disp + DISP_OFF, MPI.AINT, "next.disp"),
                    lambda v: v != NIL_DISP, f"next.disp of rank {t_rank} at {t_disp:#x}")
                tail = (old, disp)
            else:  # cas8
                old = self.cas64(t_rank, t_disp + DISP_OFF, NIL_DISP, me, "next.disp")
                if old == NIL_DISP:
                    self.put(t_rank, t_disp + RANK_OFF, self.rank, MPI.INT32_T, "next.rank")
                    return self.rank, me
                rank = self.wait_for(
                    lambda: self.get(t_rank, t_disp + RANK_OFF, MPI.INT32_T, "next.rank"),
                    lambda v: v != NIL_RANK, f"next.rank of rank {t_rank} at {t_disp:#x}")
                tail = (rank, old)
            self.log.stats["retries"] += 1

    def attach(self, block, what):
        where = self.log.note(block.address)
        self.blocks.append(block)
        mpi_call(f"Win.Attach of {what} ({where})", self.win.Attach, block.mem)
        return where

    def make_holes(self):
        """spec["holes"] free element-sized blocks, each on a page of its own,
        freed from the lowest address up, so that the allocator (glibc's
        per-size free lists) hands the elements out mostly going down the
        heap: most attaches then land on a new page below the pages already
        attached, the trigger of issue 24. Blocks that share a page with a
        hole, and a page-sized spacer after each hole, stay allocated until
        the end (free_spacers)."""
        holes = {}
        self.spacers = []
        while len(holes) < self.spec.get("holes", 0):
            block = Block(self.alloc, ELEM.itemsize)
            page = block.address // PAGE
            if page in holes:
                self.spacers.append(block)
            else:
                holes[page] = block
                self.spacers.append(Block("malloc", PAGE))
        for page in sorted(holes):
            holes[page].free()

    def free_spacers(self):
        for block in getattr(self, "spacers", []):
            block.free()
        self.spacers = []

    def setup(self):
        """Rank 0 attaches the head (and, for fop, the tail word); everyone
        learns their addresses."""
        head = word = 0
        if self.rank == 0:
            block = Block(self.alloc, ELEM.itemsize)
            init_elem(block, HEAD_VALUE)
            self.attach(block, "the head")
            head = block.address
            if self.link == "fop":
                tw = Block(self.alloc, 8)
                tw.view.view(np.int64)[0] = head  # rank 0, the head: the first tail
                self.attach(tw, "the tail word")
                word = tw.address
        self.head, self.tail_word = self.ctx.comm.bcast((head, word), root=0)

    def build(self):
        """Append this rank's elements. Every spec["round"] elements (default 1)
        the ranks tell each other whether one failed (allreduce), so they stay
        in step (on 2 cores one rank would otherwise finish before the other
        starts) and all stop after a failure. Returns errors (the first failure
        stops this rank's appends)."""
        tail = (0, self.head)
        where = "before the first element"
        per_round = self.spec.get("round", 1)
        errors = []
        if self.sync == "lock_all":
            try:
                mpi_call("Win.Lock_all", self.win.Lock_all)
            except Failed as exc:
                errors.append(f"rank {self.rank}: {self.tag}: {exc}")
        ready = self.attach_first(errors) if self.spec.get("attach") == "first" else None
        for i in range(self.count):
            if not errors:
                try:
                    if ready is None:
                        block = Block(self.alloc, ELEM.itemsize)
                        init_elem(block, encode(self.rank, i))
                        where = self.attach(block, f"element {i}")
                        self.elements.append(block)
                    else:
                        block, where = ready[i]
                    tail = self.append(tail, block.address)
                except Failed as exc:
                    errors.append(f"rank {self.rank}: {self.tag}: element {i} of {self.count} "
                                  f"({where}): {exc}")
                except Exception as exc:  # a bug here: report it, keep to the collectives
                    errors.append(f"rank {self.rank}: {self.tag}: element {i} of {self.count} "
                                  f"({where}): {type(exc).__name__}: {exc}")
            if (i + 1) % per_round == 0 or i + 1 == self.count:
                if self.ctx.comm.allreduce(bool(errors), op=MPI.LOR):
                    break
        if self.sync == "lock_all":
            with contextlib.suppress(MPI.Exception):
                self.win.Unlock_all()
        return errors

    def attach_first(self, errors):
        """spec["attach"] == "first": every element allocated and attached before
        any rank links one (a Barrier between), so no attach runs while a peer
        reads this rank's region table. Returns [(block, where)] per element."""
        ready = []
        for i in range(self.count):
            try:
                block = Block(self.alloc, ELEM.itemsize)
                init_elem(block, encode(self.rank, i))
                ready.append((block, self.attach(block, f"element {i}")))
                self.elements.append(block)
            except Failed as exc:
                errors.append(f"rank {self.rank}: {self.tag}: attaching element {i} of "
                              f"{self.count}: {exc}")
                break
        self.ctx.comm.Barrier()
        return ready

    # ------------------------------------------------------------ walk
    def read(self, target, disp):
        """(next.rank, next.disp, value) of the element at (target, disp)."""
        flush = lambda: mpi_call(f"Win.Flush(rank {target})", self.win.Flush, target)  # noqa: E731
        if self.link == "fop":
            n_rank = self.fop(target, disp + RANK_OFF, 0, MPI.INT32_T, MPI.NO_OP, "next.rank",
                              flush)
            n_disp = self.fop(target, disp + DISP_OFF, 0, MPI.INT64_T, MPI.NO_OP, "next.disp",
                              flush)
            buf = np.zeros(1, np.int32)
            mpi_call(f"Get of the value from rank {target} at {disp:#x}", self.win.Get,
                     [buf, 1, MPI.INT32_T], target, (disp + VALUE_OFF, 1, MPI.INT32_T))
            flush()
            return n_rank, n_disp, int(buf[0])
        elem = np.zeros(1, ELEM)
        mpi_call(f"Get of the element of rank {target} at {disp:#x}", self.win.Get,
                 [elem.view(np.uint8), ELEM.itemsize, MPI.BYTE], target,
                 (disp, ELEM.itemsize, MPI.BYTE))
        flush()
        e = elem[0]
        return int(e["rank"]), int(e["disp"]), int(e["value"])

    def walk(self):
        """Every element from the head, as (rank, disp, value, next rank, next disp)."""
        seen = []
        cur = (0, self.head)
        limit = self.size * self.count + 1
        mpi_call("Win.Lock_all (walk)", self.win.Lock_all)
        try:
            while True:
                n_rank, n_disp, value = self.read(*cur)
                seen.append((*cur, value, n_rank, n_disp))
                if (n_rank, n_disp) == (NIL_RANK, NIL_DISP) or len(seen) > limit:
                    break
                if not 0 <= n_rank < self.size or n_disp == NIL_DISP:
                    break
                cur = (n_rank, n_disp)
        finally:
            with contextlib.suppress(MPI.Exception):
                self.win.Unlock_all()
        return seen

    def judge_walk(self, seen):
        """Errors of this rank's walk: the exact list."""
        tag = f"rank {self.rank}: {self.tag}: walk"
        errors = []
        want = self.size * self.count + 1
        last = seen[-1]
        if (last[3], last[4]) != (NIL_RANK, NIL_DISP):
            if len(seen) > want:
                errors.append(f"{tag}: no end after {len(seen)} elements, {want} expected "
                              f"(a cycle?)")
            else:
                errors.append(f"{tag}: element {len(seen) - 1} (rank {last[0]} at "
                              f"{last[1]:#x}) has next {{{last[3]}, {last[4]:#x}}}, neither "
                              f"nil nor an element")
        elif len(seen) != want:
            errors.append(f"{tag}: {len(seen)} elements with the head, {want} expected")
        if seen[0][2] != HEAD_VALUE:
            errors.append(f"{tag}: head value {seen[0][2]:#x}, expected {HEAD_VALUE:#x}")
        order = {r: [] for r in range(self.size)}
        times = {}
        for pos, (rank, disp, value, _, _) in enumerate(seen[1:], 1):
            owner, i = decode(value)
            if owner != rank or not 0 <= i < self.count:
                errors.append(f"{tag}: element {pos} in the memory of rank {rank} at "
                              f"{disp:#x} holds value {value:#x} (rank {owner}, i {i}): "
                              f"not an element of rank {rank}")
                continue
            order[owner].append(i)
            times[(owner, i)] = times.get((owner, i), 0) + 1
        dup = sorted(k for k, n in times.items() if n > 1)
        missing = [(r, i) for r in range(self.size) for i in range(self.count)
                   if (r, i) not in times]
        if dup:
            errors.append(f"{tag}: {len(dup)} elements more than once, first (rank, i) {dup[0]}")
        if missing:
            errors.append(f"{tag}: {len(missing)} elements missing, first (rank, i) "
                          f"{missing[0]}")
        for r, seq in order.items():
            if seq != sorted(seq):
                k = next(k for k in range(1, len(seq)) if seq[k] < seq[k - 1])
                errors.append(f"{tag}: elements of rank {r} out of order: i {seq[k - 1]} "
                              f"before i {seq[k]}")
        return errors

    def check_own(self):
        """This rank's elements in its own memory: value and pads untouched."""
        errors = []
        for i, block in enumerate(self.elements):
            e = block.elem()[0]
            if (int(e["value"]), int(e["pad"]), int(e["pad2"])) != (encode(self.rank, i),
                                                                    GUARD, GUARD):
                errors.append(f"rank {self.rank}: {self.tag}: element {i} at "
                              f"{block.address:#x}: value {int(e['value']):#x} pads "
                              f"{int(e['pad']):#x} {int(e['pad2']):#x}, expected value "
                              f"{encode(self.rank, i):#x} pads {GUARD:#x}")
                if len(errors) > 3:
                    break
        return errors

    def release(self):
        """Detach and free every block. Returns errors."""
        errors = []
        for block in self.blocks:
            try:
                self.win.Detach(block.mem)
            except MPI.Exception as exc:
                if not errors:
                    errors.append(f"rank {self.rank}: {self.tag}: Win.Detach at "
                                  f"{block.address:#x} failed: {error_text(exc)}")
            block.free()
        self.blocks = self.elements = []
        self.free_spacers()
        return errors


def linked_list_check(ctx, spec):
    """One list built by every rank (module docstring), walked by every rank."""
    win = MPI.Win.Create_dynamic(comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    lst = ListBuild(ctx, win, spec)
    errors = []
    try:
        try:
            lst.make_holes()
            lst.setup()
        except Failed as exc:
            errors.append(f"rank {ctx.rank}: {lst.tag}: {exc}")
        ctx.comm.Barrier()
        if not errors:
            errors += lst.build()
        failed = ctx.comm.allreduce([ctx.rank] if errors else [])
        ctx.comm.Barrier()
        if failed:
            if ctx.rank == 0:
                errors.append(f"rank 0: {lst.tag}: walk skipped: the build failed on rank(s) "
                              f"{failed}")
        else:
            try:
                errors += lst.judge_walk(lst.walk())
            except Failed as exc:
                errors.append(f"rank {ctx.rank}: {lst.tag}: walk: {exc}")
            except Exception as exc:  # a bug here: report it, keep to the collective calls
                errors.append(f"rank {ctx.rank}: {lst.tag}: walk: {type(exc).__name__}: {exc}")
            errors += lst.check_own()
        ctx.comm.Barrier()
        errors += lst.release()
    finally:
        print(f"LINKED-LIST {spec['id']} rank {ctx.rank}: {json.dumps(lst.log.stats)}",
              file=sys.stderr, flush=True)
        win.Free()
    return errors


LINKED_LIST_CHECKS = {"linked_list": linked_list_check}
