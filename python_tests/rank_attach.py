"""Dynamic windows with many attached regions (rank side; issue 15).

Each rank builds a linked list in its own memory, attaching every element to
a Create_dynamic window, and walks its right neighbour's list with Get (value
and next address) and Compare_and_swap (value -> -value). Elements sit in one
page-aligned buffer, every `PAGE_STRIDE` bytes, so that osc/rdma gives each
its own attach region and btl-ofi one registration, except the `shared`
ones, placed in a page that already holds an element (osc/rdma attaches them
to the existing region: no new registration). The whole buffer is compared
byte for byte afterwards: swapped values in, nothing else touched.
"""

import numpy as np
from mpi4py import MPI

import semantics as sem
from rank_checks import SENTINEL, describe_mismatch

PAGE = 4096
PAGE_STRIDE = 2 * PAGE       # a gap page keeps osc/rdma from merging neighbours
ELEM_WORDS = 4               # value, next address, two guard words
GUARD = -0x5A5A5A5A5A5A5A5B  # guard words the walk must not change


class ElementList:
    """`count` elements, `count - shared` on pages of their own. Each round
    (renew) gives them new values and a new list order, a permutation of the
    placement order, so the walk jumps about."""

    def __init__(self, count, shared):
        self.count = count
        pages = count - shared
        raw = np.full(pages * PAGE_STRIDE + PAGE, SENTINEL, np.uint8)
        skip = (-raw.ctypes.data) % PAGE
        self.buf = raw[skip:skip + pages * PAGE_STRIDE]
        self.offsets = [self._offset(i, pages) for i in range(count)]
        self.order = self.values = None

    def renew(self, seed, rank):
        rng = np.random.default_rng([seed, rank])
        self.order = rng.permutation(self.count)
        self.values = rng.integers(1, 1 << 48, self.count, dtype=np.int64)
        self.buf[:] = SENTINEL

    @staticmethod
    def _offset(i, pages):
        """Element i: own page (varying place within it), or the far half of an
        element's page for the shared ones."""
        if i < pages:
            return i * PAGE_STRIDE + (i * 40) % (PAGE // 2 - 64)
        return ((i - pages) % pages) * PAGE_STRIDE + PAGE // 2 + 64

    def words(self, i):
        off = self.offsets[i]
        return self.buf[off:off + ELEM_WORDS * 8]

    def address(self, i):
        return MPI.Get_address(self.words(i))

    def fill(self):
        """Write every element: value, the address of the next one in list
        order (0 ends the list), guards. Returns the head's address."""
        for pos, i in enumerate(self.order):
            nxt = self.address(self.order[pos + 1]) if pos + 1 < self.count else 0
            self.words(i).view(np.int64)[:] = (self.values[i], nxt, GUARD, GUARD)
        return self.address(self.order[0])

    def expected(self, swapped):
        """The whole buffer as it must be after the walk (swapped: values negated)."""
        want = np.full_like(self.buf, SENTINEL)
        for pos, i in enumerate(self.order):
            nxt = self.address(self.order[pos + 1]) if pos + 1 < self.count else 0
            off = self.offsets[i]
            value = -self.values[i] if swapped else self.values[i]
            want[off:off + ELEM_WORDS * 8].view(np.int64)[:] = (value, nxt, GUARD, GUARD)
        return want


def _walk(ctx, win, head, count, values, tag):
    """Walk the right neighbour's list: Get (value, next), check the value,
    swap it for -value with Compare_and_swap. Returns this rank's errors."""
    errors, addr = [], head
    pair = np.zeros(2, np.int64)
    result = np.zeros(1, np.int64)
    win.Lock(ctx.right, MPI.LOCK_SHARED)
    for pos in range(count):
        if addr == 0:
            errors.append(f"{tag}: list of rank {ctx.right} ends after {pos} of {count}")
            break
        win.Get([pair, 2, MPI.INT64_T], ctx.right, (addr, 2, MPI.INT64_T))
        win.Flush(ctx.right)
        want = values[pos]
        if pair[0] != want:
            errors.append(f"{tag}: element {pos} of rank {ctx.right} at {addr:#x}: "
                          f"got {pair[0]}, want {want}")
        win.Compare_and_swap(np.array([-want], np.int64), np.array([want], np.int64),
                             result, ctx.right, addr)
        win.Flush(ctx.right)
        if result[0] != want:
            errors.append(f"{tag}: compare-and-swap at element {pos} of rank {ctx.right} "
                          f"fetched {result[0]}, want {want}")
        addr = int(pair[1])
        if len(errors) > 6:
            break
    win.Unlock(ctx.right)
    return errors


def _round(ctx, win, elems, seed, tag):
    """Attach every element, let the left neighbour walk the list, check the
    memory, detach everything."""
    elems.renew(seed, ctx.rank)
    for i in range(elems.count):
        try:
            win.Attach(elems.words(i))
        except MPI.Exception as exc:
            # osc/rdma keeps its region lock after MPI_ERR_RMA_ATTACH (osc_rdma_dynamic.c
            # :192-196): this window cannot be detached or used any more
            raise RuntimeError(f"{tag}: MPI_Win_attach of element {i} of {elems.count} "
                               f"failed: {exc.Get_error_string()}") from None
    heads = ctx.comm.allgather(elems.fill())
    right_values = ctx.comm.sendrecv([int(v) for v in elems.values[elems.order]],
                                     dest=ctx.left, source=ctx.right)
    ctx.comm.Barrier()
    errors = _walk(ctx, win, heads[ctx.right], elems.count, right_values, tag)
    ctx.comm.Barrier()
    errors += describe_mismatch(f"{tag}: list memory of rank {ctx.rank}", elems.buf.copy(),
                                elems.expected(swapped=True), (0, len(elems.buf)),
                                np.dtype(np.int64))
    for i in range(elems.count):
        win.Detach(elems.words(i))
    ctx.comm.Barrier()
    return errors


def attach_list_check(ctx, spec):
    """A linked list of spec["count"] attached elements (spec["shared"] of them
    in pages already attached), walked with Get and Compare_and_swap by the left
    neighbour. spec["rounds"] > 1 is churn: the same window, every element
    detached and attached again at the same address each round, so osc/rdma
    registers the same pages anew and peers must drop their cached regions."""
    seed = sem.seed_of(spec["id"])
    elems = ElementList(spec["count"], spec.get("shared", 0))
    win = MPI.Win.Create_dynamic(comm=ctx.comm)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    errors = []
    try:
        for rnd in range(spec.get("rounds", 1)):
            errors += _round(ctx, win, elems, seed + rnd, f"round {rnd}")
    finally:
        win.Free()
    return errors


ATTACH_CHECKS = {"attach_list": attach_list_check}
