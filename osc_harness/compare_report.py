"""compare.py's report: results.md (per provider a table per metric, the paired latency
ratios, who carried the traffic and how each run ended; the targets), the PNG plots,
results.json, and the machine's description they start with.
"""

import json
import os
import platform
import subprocess

import paired
from compare_stats import OUTLIER, SLOW_RTT, ratio


def fmt(v, metric):
    if v is None:
        return "-"
    if metric == "lat_us":
        return f"{v:.2f}"
    if metric.endswith("_MBps"):
        return f"{v:.0f}"
    return f"{v / 1e6:.3f}M" if v >= 1e5 else f"{v:.0f}"


def metric_title(metric):
    return {"lat_us": "latency (us, op + flush)",
            "lat_us_lock": "latency (us, MPI_Win_lock(SHARED) + op + MPI_Win_unlock)",
            "lat_us_lock_excl": "latency (us, MPI_Win_lock(EXCLUSIVE) + op + MPI_Win_unlock)",
            "bw_MBps": "put/get bandwidth (MB/s, uni, flush)",
            "bw_fence_MBps": "bandwidth with fence (MB/s)", "bibw_MBps": "bidirectional bandwidth (MB/s)",
            "msgrate_per_s": "message rate (msgs/s)",
            "atomic_ops_per_s": "8-byte atomic rate (ops/s)"}.get(metric, metric)


def provider_configs(configs, prov):
    return [c.label for c in configs if c.provider == prov] + \
        [c.label for c in configs if not c.provider]


def paired_lines(rounds, ours, cols):
    """Latency rows: ours / each other column, the median of the repetitions' own ratios
    with its bootstrap interval and the repetitions in one of the machine's modes."""
    others = [c for c in cols if c != ours]
    cells = {c: paired.pair_intervals(rounds, ours, c) for c in others}
    keys = sorted({k for c in others for k in cells[c] if k[0].startswith("lat_us")})
    if not keys:
        return []
    lines = [f"Paired, latency: {ours} / each, the median of the repetitions' own ratios "
             f"({paired.BOOT_LEVEL:.0%} bootstrap interval; repetitions in one mode):\n",
             "| metric | op | size | " + " | ".join(f"{ours} / {c}" for c in others) + " |",
             "|---|---|---:|" + "---:|" * len(others)]
    for key in keys:
        row = []
        for c in others:
            got = cells[c].get(key)
            row.append("-" if got is None else
                       f"{got[0][0]:.3f} ({got[0][1]:.3f}-{got[0][2]:.3f}; {got[1]})")
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(row) + " |")
    return lines + [""]


def markdown(report, configs):
    stats, lines = report["stats_by_key"], []
    lines.append(f"# btl-ofi one-sided comparison ({report['mode']} mode)\n")
    lines.append(f"- date: {report['date']}")
    lines.append(f"- machine: {report['machine']}")
    lines.append(f"- command: `{report['command']}`")
    lines.append(f"- repetitions: {report['reps']}, interleaved; cell = median [min] and the "
                 "ratio of medians to ours on the same provider")
    if report.get("drop_caches"):
        lines.append("- the page cache dropped before every run (--drop-caches)")
    lines.append(f"- {report['load']}")
    lines.append(f"- osc/ucx: {report['osc_ucx']}\n")
    lines += [f"- {n}" for n in report.get("net_notes", [])]
    lines += report.get("net_summary", [])
    for prov in report["providers"]:
        cols = provider_configs(configs, prov)
        ours = f"ours[{prov}]"
        lines.append(f"## provider {prov}\n")
        keys = sorted({k for c in cols for k in stats.get(c, {})},
                      key=lambda k: (k[0], k[1], k[2]))
        for metric in sorted({k[0] for k in keys}):
            lines.append(f"### {metric_title(metric)}\n")
            lines.append("| op | size | " + " | ".join(cols) + " |")
            lines.append("|---|---:|" + "---:|" * len(cols))
            for key in (k for k in keys if k[0] == metric):
                cells = []
                for c in cols:
                    s = stats.get(c, {}).get(key)
                    if not s or not s.get("n"):
                        cells.append("-")
                        continue
                    r = ratio(stats, c, ours, key)
                    cells.append(f"{fmt(s['median'], metric)} [{fmt(s['min'], metric)}]" +
                                 (f" {r:.2f}x" if r is not None and c != ours else ""))
                lines.append(f"| {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += paired_lines(report["by_round"], ours, cols)
        lines.append("Who carried the traffic, and how each run ended:\n")
        for c in cols:
            who = sorted({w for s in stats.get(c, {}).values() for w in s["carried_by"]})
            st = report["statuses"].get(c, {})
            ends = "; ".join(f"{b}: " + ", ".join(f"{n}x {s}" for s, n in _count(v).items())
                             for b, v in st.items())
            veth = report.get("veth", {}).get(c)
            lines.append(f"- **{c}**: {', '.join(who) or 'no rows'} — {ends}" +
                         (f" — {veth}" if veth else ""))
        lines.append("")
        lines += mode_lines(report.get("machine_modes", {}), cols)
    lines.append("## Targets\n")
    for t in report["targets"]:
        mark = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        lines.append(f"- {t['target']}: **{mark}** ({t['detail']})")
    lines.append("")
    return "\n".join(lines)


def mode_lines(modes, cols):
    """Each configuration's latency rows against the machine's mode beside them."""
    cols = [c for c in cols if c in modes]
    if not cols:
        return []
    lines = ["The machine's mode beside each latency row (a cache line's round trip between "
             "the two ranks' cores before and after it, `osc_latency -c`; slow: "
             f"{SLOW_RTT:g}x the least; outlier: {OUTLIER:g}x its "
             "configuration's median):\n"]
    for c in cols:
        m = modes[c]
        lines.append(f"- **{c}**: {m['slow']} of {m['rows']} rows in the slow mode; "
                     f"{m['outliers']} outliers, {m['outliers_slow']} of them in the slow mode")
    return lines + [""]


def _count(items):
    out = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def plot(report, configs, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["matplotlib missing: pip install -r osc_harness/requirements.txt"]
    stats, files = report["stats_by_key"], []
    for prov in report["providers"]:
        for metric, ylabel, name in (("lat_us", "latency (us)", "latency"),
                                     ("bw_MBps", "bandwidth (MB/s)", "bandwidth")):
            fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
            for ax, op in zip(axes, ("put", "get")):
                for c in provider_configs(configs, prov):
                    pts = sorted((k[2], s["median"]) for k, s in stats.get(c, {}).items()
                                 if k[0] == metric and k[1] == op and s.get("n"))
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=c)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel(ylabel)
                ax.set_title(f"{op} {name}, {prov} (median of {report['reps']})")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            path = os.path.join(outdir, f"{name}_{prov.replace(';', '_')}.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            files.append(path)
    return files


def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) // 1024 // 1024} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass

    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (out.stdout.strip().splitlines() or [""])[0]
        except (OSError, subprocess.TimeoutExpired):
            return "?"
    distro = ""
    try:
        with open("/etc/os-release") as f:
            distro = next(l.split("=", 1)[1].strip().strip('"') for l in f
                          if l.startswith("PRETTY_NAME"))
    except (OSError, StopIteration):
        pass
    return (f"{distro}, kernel {platform.release()}, {cpu}, {os.cpu_count()} cores, {mem}; "
            f"{first_line(['mpirun', '--version'])}; "
            f"libfabric {first_line(['fi_info', '--version']).split(':')[-1].strip()}")


def write_results(report, configs, runs, outdir):
    """results.md with its plots and results.json in outdir; returns the markdown."""
    md = markdown(report, configs)
    report["plots"] = plot(report, configs, outdir)
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(md + "\n" + "\n".join(f"![{os.path.basename(p)}]({os.path.basename(p)})"
                                      for p in report["plots"] if p.endswith(".png")) + "\n")
    serial = dict(report)
    serial["stats"] = [{"config": c, "metric": k[0], "op": k[1], "size": k[2], **s}
                       for c, m in report["stats_by_key"].items() for k, s in sorted(m.items())]
    del serial["stats_by_key"], serial["by_round"]
    serial["runs"] = runs
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(serial, f, indent=1, default=list)
    return md
