"""MPI reduction semantics in numpy, and the deterministic data the checks use.

Expected results are never written down: they are computed here by applying
the MPI operation to the values the origin sent and the target held, element
by element, in the datatype's own width (numpy integers wrap like C).
No MPI import: the pytest process uses the dtype/op tables too.
"""

import zlib

import numpy as np

PAIR_INT = np.dtype([("v", "<i4"), ("i", "<i4")])  # MPI_2INT

NUMPY_DTYPES = {
    "int8": np.dtype("int8"), "int16": np.dtype("int16"), "int32": np.dtype("int32"),
    "int64": np.dtype("int64"), "uint32": np.dtype("uint32"), "uint64": np.dtype("uint64"),
    "float32": np.dtype("float32"), "float64": np.dtype("float64"),
    "complex128": np.dtype("complex128"), "2int": PAIR_INT,
}

INTEGER = {"int8", "int16", "int32", "int64", "uint32", "uint64"}
FLOATING = {"float32", "float64"}
COMPLEX = {"complex128"}
PAIRS = {"2int"}

ARITH = ("SUM", "PROD")
ORDER = ("MIN", "MAX")
LOGICAL = ("LAND", "LOR", "LXOR")
BITWISE = ("BAND", "BOR", "BXOR")
LOC = ("MINLOC", "MAXLOC")
ALL_OPS = ARITH + ORDER + LOGICAL + BITWISE + ("REPLACE", "NO_OP") + LOC


def valid_ops(dtype):
    """The predefined ops MPI allows on this datatype (MPI-3.1 5.9.2)."""
    if dtype in INTEGER:
        return ARITH + ORDER + LOGICAL + BITWISE + ("REPLACE", "NO_OP")
    if dtype in FLOATING:
        return ARITH + ORDER + ("REPLACE", "NO_OP")
    if dtype in COMPLEX:
        return ARITH + ("REPLACE", "NO_OP")
    if dtype in PAIRS:
        return LOC + ("REPLACE", "NO_OP")
    raise KeyError(dtype)


def seed_of(text):
    return zlib.crc32(text.encode())


def _random_bits(rng, dtype, n):
    return np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype).copy()


def values(dtype_name, op, n, seed, rank, role, highbit=False):
    """Deterministic data for `role` ("origin" or "target") of `rank`.

    Chosen per op so that results are exact (floats) and meaningful:
    logical ops see zeros and non-zeros, PROD stays small, MIN/MAX see the
    whole signed range but unsigned values stay below the sign bit unless
    `highbit`, which puts values >= 2**(bits-1) where signed and unsigned
    comparison disagree."""
    dtype = NUMPY_DTYPES[dtype_name]
    rng = np.random.default_rng([seed, rank, 0 if role == "origin" else 1])
    if dtype_name in PAIRS:
        out = np.zeros(n, dtype)
        out["v"] = rng.integers(-4, 5, n)
        out["i"] = rng.integers(0, 100, n)
        return out
    if dtype_name in COMPLEX:
        lo, hi = (-3, 4) if op == "PROD" else (-400, 400)
        return (rng.integers(lo, hi, n) / 2 + 1j * (rng.integers(lo, hi, n) / 4)).astype(dtype)
    if dtype_name in FLOATING:
        if op == "PROD":
            return (rng.integers(-8, 9, n) / 2).astype(dtype)
        return (rng.integers(-40000, 40000, n) / 8).astype(dtype)
    unsigned = dtype.kind == "u"
    if op in LOGICAL:
        return rng.integers(0, 3, n).astype(dtype)
    if op == "SUM":
        return rng.integers(0 if unsigned else -50, 51, n).astype(dtype)
    if op == "PROD":
        return rng.integers(0 if unsigned else -3, 4, n).astype(dtype)
    bits = _random_bits(rng, dtype, n)
    if op in ORDER and unsigned:
        top = dtype.type(1) << dtype.type(dtype.itemsize * 8 - 1)
        bits &= ~top
        if highbit:
            # element 0: the target holds a small value, the origin one with the
            # top bit set: signed and unsigned MIN/MAX give different answers
            if role == "origin":
                bits[0::2] |= top
            else:
                bits[0] = 5
    return bits


def apply_op(op, target, origin):
    """What MPI_Accumulate(origin, op) leaves in `target` (arrays of one dtype)."""
    if op == "REPLACE":
        return origin.copy()
    if op == "NO_OP":
        return target.copy()
    if op in LOC:
        take_origin = origin["v"] < target["v"] if op == "MINLOC" else origin["v"] > target["v"]
        out = np.where(take_origin, origin, target)
        tie = origin["v"] == target["v"]
        out["i"][tie] = np.minimum(origin["i"][tie], target["i"][tie])
        return out
    with np.errstate(over="ignore"):
        if op == "SUM":
            return target + origin
        if op == "PROD":
            return target * origin
    if op == "MIN":
        return np.minimum(target, origin)
    if op == "MAX":
        return np.maximum(target, origin)
    if op in LOGICAL:
        a, b = target != 0, origin != 0
        result = {"LAND": a & b, "LOR": a | b, "LXOR": a ^ b}[op]
        return result.astype(target.dtype)
    if op == "BAND":
        return target & origin
    if op == "BOR":
        return target | origin
    if op == "BXOR":
        return target ^ origin
    raise KeyError(op)
