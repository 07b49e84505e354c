"""The checks a launch group runs, as specs: JSON-able dicts that rank_prog.py takes.

A check's id names every axis it sets (make_check). The sweeps below cross the
axes matrix.py declares within a launch (flavor x sync x op x dtype x layout x
count); checks_for gives each launch group its "fast" checks, which the default
run takes, and its "full" ones, which only `--full` runs.

No MPI here: this module is imported by the pytest process.
"""

import semantics as sem
from matrix import (AMO_MAX_COUNT, CAS_DTYPES, DTYPES, FLAVORS, LAYOUTS, OPS, PASSIVE_SYNCS,
                    REQUEST_OPS, SYNCS)


def _flavor_fields(name):
    flavor, disp_unit = FLAVORS[name]
    fields = {"flavor": flavor, "flavor_name": name}
    if disp_unit is not None:
        fields["disp_unit"] = disp_unit
    return fields


def make_check(kind="rma", tier="fast", **fields):
    """A check spec (JSON-able). Its id names every axis it sets."""
    spec = {"kind": kind, "tier": tier, **fields}
    flav = fields.get("flavor_name")
    if flav:
        spec.update(_flavor_fields(flav))
    parts = [kind if kind != "rma" else fields["op"]]
    if fields.get("mpi_op") and kind in ("rma",) and fields["op"] not in ("put", "get", "rput",
                                                                          "rget"):
        parts[0] += f"({fields['mpi_op']})"
    for key in ("flavor_name", "sync"):
        if key in fields:
            parts.append(str(fields[key]))
    if "dtype" in fields:
        parts.append(f"{fields['dtype']}x{fields.get('count', 1)}")
    elif "count" in fields:
        parts.append(f"x{fields['count']}")
    if fields.get("olayout", "contig") != "contig" or fields.get("tlayout", "contig") != "contig":
        parts.append(f"{fields.get('olayout', 'contig')}>{fields.get('tlayout', 'contig')}")
    if fields.get("highbit"):
        parts.append("highbit")
    if "repeat" in fields:
        parts.append(f"r{fields['repeat']}")
    spec["id"] = "/".join(parts)
    return spec


def op_check(op, flavor, sync, dtype, count, tier="fast", mpi_op=None, **extra):
    """The check spec of one operation (compare-and-swap takes no count or MPI op)."""
    if op == "cas":
        return make_check("cas", tier, flavor_name=flavor, sync=sync, dtype=dtype, **extra)
    fields = dict(op=op, flavor_name=flavor, sync=sync, dtype=dtype, count=count, **extra)
    if op not in ("put", "get", "rput", "rget"):
        fields["mpi_op"] = mpi_op or "SUM"
    return make_check("rma", tier, **fields)


def _default_op(dtype, k=0):
    """A valid accumulate op for dtype, rotating with k."""
    ops = [o for o in sem.valid_ops(dtype) if o != "NO_OP"]
    return ops[k % len(ops)]


def _sync_for(op, k):
    syncs = PASSIVE_SYNCS if op in REQUEST_OPS else SYNCS
    return syncs[k % len(syncs)]


# ---------------------------------------------------------------- check sets

def sync_sweep(tier="fast"):
    """Every sync mode with every op kind (int64 / int32), rotating the flavor."""
    checks, k = [], 0
    create_like = ("create_du8", "create_du1", "create_du4", "create_du3", "dynamic")
    for sync in SYNCS:
        for op, dtype, count in (("put", "int64", 5), ("get", "int32", 5), ("acc", "int64", 1),
                                 ("gacc", "int64", 3), ("fop", "int64", 1), ("cas", "int64", 1)):
            checks.append(op_check(op, create_like[k % len(create_like)], sync, dtype, count, tier))
            k += 1
        if sync in PASSIVE_SYNCS:
            op = REQUEST_OPS[k % len(REQUEST_OPS)]
            checks.append(op_check(op, create_like[k % len(create_like)], sync, "int64", 4, tier))
            k += 1
    return checks


def flavor_sweep(tier="fast"):
    """Every flavor with every op, rotating sync mode and dtype."""
    checks, k = [], 0
    for flavor in FLAVORS:
        for op in OPS:
            dtype = ("int64", "int32", "uint64", "float64", "int16")[k % 5]
            if op == "cas" and dtype not in CAS_DTYPES:
                dtype = "int64"
            count = 1 if op in ("fop", "cas") else (k % 6) + 1
            mpi_op = _default_op(dtype, k)
            checks.append(op_check(op, flavor, _sync_for(op, k), dtype, count, tier, mpi_op))
            k += 1
    return checks


def op_dtype_sweep(tier="fast"):
    """Every predefined op on every dtype it applies to, for Accumulate,
    Get_accumulate and Fetch_and_op. Fast tier: each op and each dtype at
    least once per kind; full tier: the whole op x dtype x kind x count set."""
    checks = []
    pairs = [(op, dt) for dt in DTYPES + ("2int",) for op in sem.valid_ops(dt)]
    flavors = ("create_du8", "dynamic", "create_du1", "allocate")
    if tier == "fast":
        seen, chosen = set(), []
        for i, (op, dt) in enumerate(pairs):
            if op not in seen or dt not in seen:
                chosen.append((op, dt))
                seen.update((op, dt))
        pairs = chosen
    for i, (mpi_op, dtype) in enumerate(pairs):
        kinds = ("acc", "gacc", "fop") if tier == "full" else (("acc", "gacc", "fop")[i % 3],)
        for kind in kinds:
            if kind == "acc" and mpi_op == "NO_OP":
                kind = "gacc"  # MPI_Accumulate does not take MPI_NO_OP
            counts = (1,) if kind == "fop" else ((1, 33) if tier == "full" else (1 + 32 * (i % 2),))
            if dtype == "2int" and kind == "fop":
                continue  # Fetch_and_op takes predefined single-element types only
            for count in counts:
                flavor = flavors[(i + len(checks)) % len(flavors)]
                sync = ("lock_all", "fence", "flush", "lock_shared")[(i + count) % 4]
                checks.append(op_check(kind, flavor, sync, dtype, count, tier, mpi_op))
    # make sure every op appears for every kind at least once in the fast set too
    if tier == "fast":
        for j, mpi_op in enumerate(sem.ALL_OPS):
            dtype = "2int" if mpi_op in sem.LOC else "int64"
            for kind in ("acc", "gacc", "fop"):
                if (kind == "acc" and mpi_op == "NO_OP") or (kind == "fop" and dtype == "2int"):
                    continue
                spec = op_check(kind, "create_du8", "lock_all", dtype, 1, tier, mpi_op)
                if spec["id"] not in {c["id"] for c in checks}:
                    checks.append(spec)
    return checks


def request_sweep(tier="fast"):
    checks = []
    for k, op in enumerate(REQUEST_OPS):
        syncs = PASSIVE_SYNCS if tier == "full" else (PASSIVE_SYNCS[k * 2 % len(PASSIVE_SYNCS)],)
        for sync in syncs:
            checks.append(op_check(op, ("create_du8", "dynamic")[k % 2], sync, "int64", 6, tier))
    return checks


def layout_sweep(tier="fast"):
    """Derived datatypes on origin and target."""
    checks = []
    if tier == "fast":
        pairs = [(lo, "contig") for lo in LAYOUTS[1:]] + [("contig", lt) for lt in LAYOUTS[1:]] \
            + [("vector", "subarray"), ("struct", "indexed")]
    else:
        pairs = [(lo, lt) for lo in LAYOUTS for lt in LAYOUTS]
    ops = ("put", "get", "acc", "gacc")
    for i, (lo, lt) in enumerate(pairs):
        for j, op in enumerate(ops if tier == "full" else (ops[i % 4],)):
            dtype = ("int64", "int16", "float64", "int32")[(i + j) % 4]
            if op == "gacc" and dtype in ("float64", "int32"):
                # whether these ride on BTL atomics depends on the provider's 32-bit
                # and float support; int64 (always) and int16 (never) pin the
                # upstream Get_accumulate bug down deterministically
                dtype = {"float64": "int16", "int32": "int64"}[dtype]
            checks.append(op_check(op, ("create_du8", "dynamic", "create_du1")[(i + j) % 3],
                               ("lock_all", "fence", "flush")[(i + j) % 3], dtype, 12, tier,
                               _default_op(dtype, i + j) if op in ("acc", "gacc") else None,
                               olayout=lo, tlayout=lt))
    # Get_accumulate with derived types on the BTL atomic path (upstream bug, xfail)
    # and off it (int16 -> get-op-put), so the bug is pinned down either way.
    for lo, lt in (("vector", "contig"), ("contig", "indexed")):
        for dtype in ("int64", "int16"):
            checks.append(op_check("gacc", "create_du8", "lock_all", dtype, 6, tier, "SUM",
                               olayout=lo, tlayout=lt))
    return checks


def gacc_float_layout_checks(tier="fast"):
    """Get_accumulate of float32 / float64 through vector and indexed types on
    origin, result and target, in fence and lock epochs, 2 ranks (issue 15).
    On Open MPI 4.1.4 osc/rdma unpacks a derived result from the wrong end of
    its buffer whenever it uses BTL atomics (XFAIL_GACC_DERIVED); btl-ofi keeps
    floats off that path there, as btl/vader does, so these must be right.
    int64 beside them takes the atomic path with every BTL: the strict xfail."""
    checks = []
    layouts = (("vector", "vector"), ("indexed", "indexed"), ("vector", "contig"),
               ("contig", "indexed"))
    syncs = ("fence", "lock_exclusive", "lock_shared", "lock_all")
    for i, (lo, lt) in enumerate(layouts):
        for j, dtype in enumerate(("float64", "float32", "int64")):
            for sync in syncs if tier == "full" else ("fence", syncs[1 + (i + j) % 3]):
                checks.append(op_check("gacc", ("create_du8", "dynamic")[(i + j) % 2], sync, dtype,
                                   6, tier, ("SUM", "MAX")[i % 2], olayout=lo, tlayout=lt))
    return checks


def size_sweep(tier="fast", big=8 << 20):
    """Put/Get from 0 bytes to well past any single-operation limit."""
    sizes = (0, 1, 7, 4099, (1 << 20) + 13, big)
    checks = []
    for i, nbytes in enumerate(sizes):
        for op in ("put", "get"):
            checks.append(op_check(op, ("create_du1", "dynamic")[i % 2],
                               ("flush", "fence", "lock_exclusive")[i % 3], "int8", nbytes, tier))
    return checks


def threshold_sweep(tier="fast"):
    """Accumulate counts around osc/rdma's AMO limit (32) and its get-op-put
    piece size (4096 bytes)."""
    counts = (1, AMO_MAX_COUNT, AMO_MAX_COUNT + 1, 600)
    checks = []
    for i, count in enumerate(counts):
        for kind, op in (("acc", "SUM"), ("gacc", "BXOR")):
            checks.append(op_check(kind, "create_du8", ("lock_all", "fence")[i % 2], "int64", count,
                               tier, op))
    return checks


def concurrency_checks(tier="fast", scale=1):
    return [
        make_check("fadd_many", tier, flavor_name="create_du8", repeat=100 * scale),
        make_check("fadd_many", tier, flavor_name="dynamic", repeat=50 * scale),
        make_check("excl_lock", tier, flavor_name="create_du8", repeat=30 * scale),
        make_check("acc_atomic", tier, flavor_name="create_du8", dtype="int64", count=1,
                   repeat=100 * scale),
        make_check("acc_atomic", tier, flavor_name="create_du8", dtype="int32", count=64,
                   repeat=20 * scale),
        make_check("acc_order", tier, flavor_name="create_du8", repeat=20 * scale),
        # many small puts per flush (what btl_<component>_put_coalesce gathers), to all peers
        make_check("scatter_puts", tier, flavor_name="create_du1", count=100 * scale,
                   per_flush=32),
    ]


def special_checks(tier="fast"):
    checks = [make_check("dynamic_regions", tier, count=9)]
    # unsigned MIN/MAX with the sign bit set: BTL atomic path and allocate (no BTL)
    for dtype in ("uint32", "uint64"):
        for mpi_op in ("MIN", "MAX"):
            for flavor in ("create_du8", "allocate"):
                checks.append(op_check("acc", flavor, "lock_all", dtype, 1, tier, mpi_op,
                                   highbit=True))
            checks.append(op_check("fop", "dynamic", "flush", dtype, 1, tier, mpi_op, highbit=True))
    # 8-byte compare-and-swap on a Win.Allocate window (open-mpi/ompi#7967)
    for sync in ("lock_shared", "fence"):
        checks.append(op_check("cas", "allocate", sync, "int64", 1, tier))
    for dtype in CAS_DTYPES:
        checks.append(op_check("cas", "create_du8", "lock_all", dtype, 1, tier))
    return checks


def full_product():
    """flavor x sync x op kind at int64 (request ops only in passive epochs)."""
    checks = []
    for flavor in FLAVORS:
        for sync in SYNCS:
            for op in OPS:
                if op in REQUEST_OPS and sync not in PASSIVE_SYNCS:
                    continue
                count = 1 if op in ("fop", "cas") else 5
                checks.append(op_check(op, flavor, sync, "int64", count, "full"))
    return checks


def dedupe(checks):
    """checks without repeats of an id, in their order."""
    seen, out = set(), []
    for c in checks:
        if c["id"] not in seen:
            seen.add(c["id"])
            out.append(c)
    return out


def checks_for(group):
    """Every check of a launch group, fast and full tiers."""
    fast, full = [], []
    if group.variant == "base" and group.nranks == 2:
        fast = (sync_sweep() + flavor_sweep() + op_dtype_sweep() + request_sweep()
                + layout_sweep() + size_sweep() + threshold_sweep() + concurrency_checks()
                + special_checks() + gacc_float_layout_checks())
        full = (full_product() + op_dtype_sweep("full") + request_sweep("full")
                + layout_sweep("full") + size_sweep("full", big=64 << 20)
                + concurrency_checks("full", scale=5) + gacc_float_layout_checks("full"))
    elif group.variant == "base":
        fast = concurrency_checks() + sync_sweep()[::3]
        full = sync_sweep("full") + flavor_sweep("full") + concurrency_checks("full", scale=3)
    elif group.variant == "emulate":
        fast = op_dtype_sweep()[::2] + concurrency_checks() + special_checks()[1:9]
        full = op_dtype_sweep("full")
    elif group.variant == "split":
        fast = size_sweep(big=4 << 20) + layout_sweep()[:4]
        full = size_sweep("full", big=64 << 20) + layout_sweep("full")
    elif group.variant == "read_proof":
        fast = sync_sweep() + concurrency_checks()
        full = flavor_sweep("full")
    elif group.variant == "batch1":
        fast = sync_sweep()[::2] + concurrency_checks()
        full = sync_sweep("full")
    elif group.variant == "stale":
        fast = sync_sweep()[1::2] + flavor_sweep()[::3] + concurrency_checks()
        full = flavor_sweep("full")
    elif group.variant == "messages":
        fast = (op_dtype_sweep()[::2] + sync_sweep()[::2] + concurrency_checks()
                + special_checks()[1:9] + size_sweep() + threshold_sweep()[1::2])
        full = op_dtype_sweep("full") + flavor_sweep("full") + size_sweep("full", big=16 << 20)
    fast_ids = {c["id"] for c in fast}
    full = [c for c in full if c["id"] not in fast_ids]
    for c in full:
        c["tier"] = "full"
    return dedupe(fast) + dedupe(full)
