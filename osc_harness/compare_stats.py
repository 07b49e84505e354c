"""compare.py's numbers: each configuration's rows over the repetitions (median, least,
most; who carried them), the repetitions' own values for the paired statistics
(paired.py), the ratio of two configurations' medians, and the targets judged by them.
"""

import statistics


HIGHER_IS_BETTER = ("_MBps", "_per_s")


def better_is_higher(metric):
    return metric.endswith(HIGHER_IS_BETTER)


def aggregate(runs):
    """{config: {(metric, op, size): {...}}} plus {config: {bench: [statuses]}}."""
    values, carried, statuses = {}, {}, {}
    for run in runs:
        statuses.setdefault(run["config"], {}).setdefault(run["bench"], []).append(run["status"])
        for row in run["rows"]:
            key = (row["metric"], row["op"], row["size"])
            if row["valid"]:
                values.setdefault(run["config"], {}).setdefault(key, []).append(row["value"])
            carried.setdefault(run["config"], {}).setdefault(key, set()).add(row["carried_by"])
    stats = {}
    for cfg, metrics in values.items():
        for key, vals in metrics.items():
            stats.setdefault(cfg, {})[key] = {
                "n": len(vals), "min": min(vals), "max": max(vals),
                "median": statistics.median(vals), "values": vals,
                "carried_by": sorted(carried[cfg][key])}
    for cfg, metrics in carried.items():
        for key, who in metrics.items():
            stats.setdefault(cfg, {}).setdefault(key, {"n": 0, "carried_by": sorted(who)})
    return stats, statuses


def by_round(runs):
    """{configuration: {row: {repetition: value}}} of the valid rows (paired.py's form)."""
    out = {}
    for run in runs:
        for row in run["rows"]:
            if row["valid"]:
                key = (row["metric"], row["op"], row["size"])
                out.setdefault(run["config"], {}).setdefault(key, {})[run["rep"]] = row["value"]
    return out


# A row ran in the machine's slow mode when a cache line's round trip between the two ranks'
# cores beside it (osc_latency -c) took at least this many times the least of the whole
# comparison: on the 2-core VM of PERFORMANCE.md 50-110 ns in the fast mode, 320-370 in the
# slow one. A latency row is an outlier at OUTLIER times its configuration's median.
SLOW_RTT, OUTLIER = 2.0, 1.5


def machine_modes(runs):
    """{config: {"rows", "slow", "outliers", "outliers_slow"}}: of each configuration's
    valid latency rows with a core round trip, how many ran beside a slow one, how many were
    outliers, and how many outliers ran beside a slow one; {} without round trips."""
    rows = [(run["config"], (r["metric"], r["op"], r["size"]), r["value"], r["rtt_ns"])
            for run in runs for r in run["rows"]
            if r.get("rtt_ns") and r["valid"] and r["metric"].startswith("lat_us")]
    if not rows:
        return {}
    least = min(r[3] for r in rows)
    values = {}
    for cfg, key, value, _ in rows:
        values.setdefault((cfg, key), []).append(value)
    median = {k: statistics.median(v) for k, v in values.items()}
    out = {}
    for cfg, key, value, rtt in rows:
        slow, outlier = rtt >= SLOW_RTT * least, value >= OUTLIER * median[(cfg, key)]
        o = out.setdefault(cfg, {"rows": 0, "slow": 0, "outliers": 0, "outliers_slow": 0})
        o["rows"] += 1
        o["slow"] += slow
        o["outliers"] += outlier
        o["outliers_slow"] += outlier and slow
    return out


def ratio(stats, cfg, ref, key):
    a, b = stats.get(cfg, {}).get(key), stats.get(ref, {}).get(key)
    if not a or not b or not a.get("n") or not b.get("n") or not b["median"]:
        return None
    return a["median"] / b["median"]


# ---- targets ------------------------------------------------------------------

def check(targets, name, value, limit, op, detail):
    """Record one target: value (a measured ratio) against limit; None = not measurable."""
    if value is None:
        targets.append({"target": name, "met": None, "detail": detail + ": not measured"})
        return
    met = value <= limit if op == "<=" else value >= limit
    targets.append({"target": name, "met": met, "ratio": round(value, 3),
                    "detail": f"{detail}: {value:.2f}x (needs {op} {limit}x)"})


def evaluate_targets(stats, providers, major):
    if major >= 5:
        return evaluate_targets_5(stats, providers)
    t = []
    ours, stock, vader = "ours[shm]", "stock[shm]", "vader"
    lat_keys = sorted(k for k in stats.get(ours, {}) if k[0] == "lat_us")
    if "shm" in providers:
        for key in lat_keys:
            check(t, f"shm {key[1]} {key[2]} B latency <= stock", ratio(stats, ours, stock, key),
                  1.0, "<=", "ours/stock median")
        for op in ("put", "get"):
            check(t, f"shm 8 B {op} latency <= 0.8x stock",
                  ratio(stats, ours, stock, ("lat_us", op, 8)), 0.8, "<=", "ours/stock median")
        check(t, "shm 1 MiB put latency <= 1.2x vader",
              ratio(stats, ours, vader, ("lat_us", "put", 1 << 20)), 1.2, "<=",
              "ours/vader median")
    for prov in providers:
        o, r = f"ours[{prov}]", f"raw[{prov}]"
        for op in ("put", "get"):
            check(t, f"{prov} 8 B {op} latency <= 1.3x raw",
                  ratio(stats, o, r, ("lat_us", op, 8)), 1.3, "<=", "ours/raw median")
        for op in ("acc", "fop", "cas"):
            check(t, f"{prov} {op} latency <= 1.3x raw",
                  ratio(stats, o, r, ("lat_us", op, 8)), 1.3, "<=", "ours/raw median")
        for key in sorted(k for k in stats.get(o, {}) if k[0] == "bw_MBps" and k[2] >= 1 << 20):
            check(t, f"{prov} {key[1]} bandwidth {key[2]} B >= 0.9x raw",
                  ratio(stats, o, r, key), 0.9, ">=", "ours/raw median")
    return t


def stock_carried(stats, cfg, key):
    """Did the stock btl/ofi itself carry this row (osc/rdma 5.0 said so)?"""
    who = stats.get(cfg, {}).get(key, {}).get("carried_by", [])
    return any("direct over btl/ofi" in w for w in who)


def evaluate_targets_5(stats, providers):
    """Open MPI 5: never behind the stock btl/ofi on the same provider (within 5 %)
    where the stock btl/ofi carries the traffic at all, and ahead of osc/rdma over
    btl/tcp (active messages) on tcp;ofi_rxm."""
    t = []
    for prov, o in [(p, f"{n}[{p}]") for p in providers for n in ("ours",)]:
        st = f"stock[{prov}]"
        for key in sorted(k for k in stats.get(o, {}) if k[0] in ("lat_us",) or
                          k[0].endswith("_MBps")):
            lat = key[0] == "lat_us"
            name = (f"{o} {key[1]} {key[2]} B " +
                    ("latency <= 1.05x stock" if lat else f"{key[0]} >= stock/1.05"))
            if not stock_carried(stats, st, key):
                t.append({"target": name, "met": None,
                          "detail": "not measured: the stock btl/ofi did not carry it "
                                    f"({', '.join(stats.get(st, {}).get(key, {}).get('carried_by', [])) or 'no run'})"})
                continue
            check(t, name, ratio(stats, o, st, key), 1.05 if lat else 1 / 1.05,
                  "<=" if lat else ">=", "ours/stock median")
    if "tcp;ofi_rxm" in providers:
        o = "ours[tcp;ofi_rxm]"
        for key in sorted(k for k in stats.get(o, {}) if k[0] == "lat_us"):
            check(t, f"tcp;ofi_rxm {key[1]} {key[2]} B latency < osc/rdma over btl/tcp",
                  ratio(stats, o, "tcp", key), 1.0, "<=", "ours/tcp median")
        for key in sorted(k for k in stats.get(o, {}) if k[0].endswith("_MBps")):
            check(t, f"tcp;ofi_rxm {key[1]} {key[2]} B {key[0]} > osc/rdma over btl/tcp",
                  ratio(stats, o, "tcp", key), 1.0, ">=", "ours/tcp median")
    return t
