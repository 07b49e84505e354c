#!/usr/bin/env python3
"""Compare btl-ofi with the other ways of carrying one-sided MPI, interleaved.

One invocation runs every configuration in turn (A B C A B C ...) for N
repetitions, so slow drifts of the machine hit all of them alike:

  ours     btl-ofi (btl/ofirma) + osc/rdma on a provider (on libfabric 2.x, ours on
           `tcp` is the plain RDM tcp provider, not tcp;ofi_rxm: PLAIN_RDM_2X)
  stock    Open MPI's btl/ofi + osc/rdma on the same provider
  vader    Open MPI 4.1: btl/vader + osc/rdma
  sm       Open MPI 5: osc/rdma over btl/sm (active-message emulation)
  tcp      Open MPI 5: osc/rdma over btl/tcp on loopback (active-message emulation)
  ucx      osc/ucx (only if this Open MPI has it)
  pt2pt    Open MPI 4.1: osc/pt2pt over btl/vader
  raw      ofi_rma_ref: raw libfabric on the same provider, the provider's limit

Per metric it reports min and median over the repetitions and the ratio of
the medians to ours, and for every row which component really carried the
traffic (btl-ofi's own MPI_T counters, and which mca_btl_ofi.so the process
mapped). A crash, a timeout or a refusal is recorded as a result.

With --net the two ranks are on two "hosts", network namespaces joined by veth
pairs (made and removed by the run itself, root needed), and the peers are the
MPIs a user could pick between hosts: osc/pt2pt and osc/ucx over TCP, stock
btl/ofi, osc/rdma over btl/tcp (Open MPI 5), MPICH and Intel MPI from PyPI
(scripts/install-mpis.sh); see compare_net.py.

Writes results.json, results.md and PNG plots under results/<timestamp>/.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace

import compare_net
import paired

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python_tests"))
import launcher  # noqa: E402  the suite's env-file reader and locked, bounded runner

EXIT_SKIP = 77
PROVIDERS_QUICK = ["shm", "sockets", "tcp;ofi_rxm"]
PROVIDERS_FULL = ["shm", "sockets", "tcp;ofi_rxm", "udp;ofi_rxd"]

# What each mode measures. Sizes include non-powers of two.
QUICK = {
    "lat_sizes": "1,8,100,4096,65536,1000000,1048576",
    "bw_sizes": "8,4096,65536,1000000,1048576,4194304",
    "lat_iters": "2000", "bw_iters": "200", "rate_iters": "200", "budget": "32M",
    "benches": ["latency", "bw", "atomic_rate"],
}
FULL = {
    "lat_sizes": None, "bw_sizes": None,
    "lat_iters": "10000", "bw_iters": "1000", "rate_iters": "2000", "budget": "256M",
    "benches": ["latency", "bw", "bw_fence", "bibw", "msgrate", "atomic_rate"],
}


# ---- configurations ---------------------------------------------------------

@dataclass
class Config:
    name: str          # "ours", "stock", ...
    provider: str      # libfabric provider, or "" when the configuration has none
    kind: str          # "mpi" (Open MPI's mpirun), "raw", or "hydra" (another MPI, --net)
    component_path: str = ""
    mca: list = field(default_factory=list)
    note: str = ""     # "hydra": the MPI's install root (its bin/mpiexec launches)
    env: dict = field(default_factory=dict)  # extra environment of its runs
    ours_dir: str = ""  # a btl-ofi configuration: the directory its DSO must be mapped from

    @property
    def label(self):
        return f"{self.name}[{self.provider}]" if self.provider else self.name


def read_env_file(path):
    """The variables a btl-ofi env file exports that the configurations need."""
    try:
        env = launcher.load_env_file(path)
    except (OSError, RuntimeError) as err:
        sys.exit(f"compare.py: {err}")
    wanted = ("OMPI_MCA_mca_base_component_path", "BTL_OFI_COMPONENT_DIR",
              "BTL_OFI_OMPI_PKGLIBDIR", "BTL_OFI_COMPONENT", "BTL_OFI_NODE_BTL",
              "BTL_OFI_OMPI_VERSION")
    missing = [k for k in wanted if not env.get(k)]
    if missing:
        sys.exit(f"compare.py: {path} does not export {', '.join(missing)}")
    paths = {k: env[k] for k in wanted}
    paths["PMIX_MCA_mca_base_component_path"] = env.get("PMIX_MCA_mca_base_component_path", "")
    paths["major"] = int(paths["BTL_OFI_OMPI_VERSION"].split(".")[0])
    return paths


def find_env_file(arg):
    candidates = [arg, os.environ.get("BTL_OFI_ENV_FILE"), os.path.join(REPO, "btl-ofi-env.sh")]
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    sys.exit("compare.py: no btl-ofi env file; set BTL_OFI_ENV_FILE or pass --env-file "
             "(make install puts it in $(pkgdatadir)/btl-ofi-env.sh)")


def has_osc_ucx(env):
    try:
        out = subprocess.run(["ompi_info"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False, "ompi_info did not run"
    for line in out.stdout.splitlines():
        if "MCA osc:" in line and " ucx " in line:
            return True, line.strip()
    return False, "this Open MPI has no osc/ucx (ompi_info lists none)"


# Core providers that libfabric 2.x offers as RDM providers by themselves, and the
# utility provider that their name selects first (`tcp` = tcp;ofi_rxm, as with
# FI_PROVIDER=tcp). Ours on such a name runs the plain provider: FI_PROVIDER=NAME
# with the utility provider excluded (btl-ofi then carries atomics, and gets where
# needed, as messages its target applies; its "selected provider" line says so).
PLAIN_RDM_2X = {"tcp": "ofi_rxm"}


def build_configs(providers, paths, ucx, net_iface=None, libfabric_major=0):
    """net_iface: ranks on different hosts (--net), reached through this interface:
    btl/tcp instead of the node BTL, no node-local configurations. libfabric_major >= 2:
    ours on a name in PLAIN_RDM_2X is the plain provider, not the stack it names."""
    rdma = ["--mca", "pml", "ob1", "--mca", "osc", "rdma"]
    ours_path, stock_path = paths["OMPI_MCA_mca_base_component_path"], paths["BTL_OFI_OMPI_PKGLIBDIR"]
    ours = paths["BTL_OFI_COMPONENT"]
    node = "tcp" if net_iface else paths["BTL_OFI_NODE_BTL"]
    configs = []
    for prov in providers:
        if libfabric_major >= 2 and prov in PLAIN_RDM_2X:
            pick, env = ["--mca", f"btl_{ours}_provider_exclude", PLAIN_RDM_2X[prov]], \
                {"FI_PROVIDER": prov}
        else:
            pick, env = ["--mca", f"btl_{ours}_provider_include", prov], {}
        configs.append(Config("ours", prov, "mpi", ours_path, rdma + [
            "--mca", "btl", f"self,{node},{ours}"] + pick, env=env))
        # The stock component excludes shm, sockets, tcp and udp by default: without
        # clearing its exclude list the window would silently go to another BTL.
        configs.append(Config("stock", prov, "mpi", stock_path, rdma + [
            "--mca", "btl", f"self,{node},ofi", "--mca", "btl_ofi_provider_include", prov,
            "--mca", "btl_ofi_provider_exclude", ""]))
        configs.append(Config("raw", prov, "raw"))
    # the node BTL with osc/rdma: btl/vader directly (4.1), active messages over btl/sm (5.0)
    if not net_iface:
        configs.append(Config(node, "", "mpi", stock_path, rdma + ["--mca", "btl", f"self,{node}"]))
    if paths["major"] >= 5:
        # what a 5.0 user gets between hosts without btl-ofi: active messages over btl/tcp
        configs.append(Config("tcp", "", "mpi", stock_path, rdma + ["--mca", "btl", "self,tcp"] + (
            [] if net_iface else ["--mca", "btl_tcp_if_include", "lo"])))
    if ucx[0]:
        # between hosts UCX gets TCP only: with its shared-memory transports it would
        # bypass the network (the namespaces share one kernel)
        configs.append(Config("ucx", "", "mpi", stock_path, [
            "--mca", "pml", "ob1", "--mca", "btl", f"self,{node}", "--mca", "osc", "ucx"],
            env={"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": net_iface} if net_iface else {}))
    if paths["major"] < 5:
        configs.append(Config("pt2pt", "", "mpi", stock_path, [
            "--mca", "pml", "ob1", "--mca", "btl", "self,tcp" if net_iface else "self,vader",
            "--mca", "osc", "pt2pt"]))
    else:
        # osc/rdma 5.0 says which BTL it uses, directly or through active messages, and
        # btl-ofi which provider it selected, with atomics and gets native or as messages
        for cfg in configs:
            if cfg.kind == "mpi" and "rdma" in cfg.mca:
                cfg.mca = cfg.mca + ["--mca", "osc_base_verbose", "100"]
            if cfg.name == "ours":
                cfg.mca = cfg.mca + ["--mca", "btl_base_verbose", "10"]
    return configs


def osc_path(stderr):
    """What osc/rdma 5.0 said it used (osc_base_verbose), or "" when it said nothing."""
    direct = sorted(set(re.findall(r"accelerated_query: selected btl: (\S+)", stderr)))
    if direct:
        return "osc/rdma direct over btl/" + ",".join(direct)
    alternate = sorted(set(re.findall(r"found alternate btl (\S+)", stderr)))
    if alternate:
        return "osc/rdma active messages over btl/" + ",btl/".join(alternate)
    return ""


def btl_selected(stderr):
    """What btl-ofi said it selected (btl_base_verbose 10), e.g. "provider tcp, atomics
    messages, gets native", or "" when it said nothing."""
    said = sorted(set(re.findall(r"selected provider (\S+) \(.*?\).*?atomics (\w+), gets (\w+)",
                                 stderr)))
    return "; ".join(f"provider {p}, atomics {a}, gets {g}" for p, a, g in said)


# ---- one run -------------------------------------------------------------------

def bench_args(bench, mode, kind):
    """Program and arguments of one benchmark for an MPI or the raw configuration."""
    lat = ["-S", mode["lat_sizes"]] if mode["lat_sizes"] else []
    bw = ["-S", mode["bw_sizes"]] if mode["bw_sizes"] else []
    rate = ["-S", mode["rate_sizes"]] if mode.get("rate_sizes") else []
    common = ["-j", "-B", mode["budget"]]
    if kind == "raw":
        table = {
            "latency": ["-t", "latency", "-i", mode["lat_iters"]] + lat,
            "bw": ["-t", "bw", "-i", mode["bw_iters"]] + bw,
            "bibw": ["-t", "bibw", "-i", mode["bw_iters"]] + bw,
            "msgrate": ["-t", "msgrate", "-i", mode["rate_iters"]] + rate,
            "atomic_rate": ["-t", "atomic_rate", "-i", mode["rate_iters"]],
        }
        return ("ofi_rma_ref", table[bench] + common) if bench in table else None
    table = {
        "latency": ("osc_latency", ["-i", mode["lat_iters"]] + lat),
        # an epoch per operation: MPI_Win_lock (shared / exclusive), the operation, unlock
        "latency_lock": ("osc_latency", ["-s", "lock", "-i", mode["lat_iters"]] + lat),
        "latency_lock_excl": ("osc_latency", ["-s", "lock_excl", "-i", mode["lat_iters"]] + lat),
        "bw": ("osc_bw", ["-i", mode["bw_iters"]] + bw),
        "bw_fence": ("osc_bw", ["-s", "fence", "-i", mode["bw_iters"]] + bw),
        "bibw": ("osc_bw", ["-d", "bi", "-i", mode["bw_iters"]] + bw),
        "msgrate": ("osc_msgrate", ["-i", mode["rate_iters"]] + rate),
        "atomic_rate": ("osc_atomic_rate", ["-i", mode["rate_iters"]]),
    }
    prog, args = table[bench]
    return prog, args + common


def run_env(cfg, base_env, paths):
    env = {k: v for k, v in base_env.items() if not k.startswith(("OMPI_MCA_", "PMIX_MCA_"))}
    env["BTL_OFI_COMPONENT"] = paths["BTL_OFI_COMPONENT"]  # the harness reads our counters by it
    env.update(cfg.env)
    if cfg.kind == "mpi":
        env["OMPI_MCA_mca_base_component_path"] = cfg.component_path
        if paths["PMIX_MCA_mca_base_component_path"]:
            env["PMIX_MCA_mca_base_component_path"] = paths["PMIX_MCA_mca_base_component_path"]
        if os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def locked_run(cmd, env, timeout):
    """Run under the machine-wide MPI lock, bounded (the whole process tree is killed at the
    timeout); returns (rc, stdout, stderr, seconds), rc None for a timeout."""
    run = launcher.run_argv(cmd, timeout, env, None)
    return run.returncode, run.stdout, run.stderr, run.seconds


def classify(rc, stderr):
    if rc is None:
        return "timeout"
    if rc == 0:
        return "ok"
    if rc == EXIT_SKIP:
        return "skipped"
    if rc < 0:
        return f"crashed (signal {-rc})"
    for sig, name in ((11, "SIGSEGV"), (6, "SIGABRT"), (7, "SIGBUS")):
        if f"signal {sig}" in stderr or rc == 128 + sig:
            return f"crashed ({name})"
    if "abort" in stderr.lower():
        return f"aborted (exit {rc})"
    return f"failed (exit {rc})"


def why_not(stderr):
    """The program's own reason for a run that did not end well (its last line that
    says so), without mpirun's boilerplate around it."""
    lines = [line.strip() for line in stderr.splitlines()
             if "mpirun" not in line and not line.startswith(("-", "*"))]
    for pattern in (r"not supported here", r"not supported|could not|cannot|error|failed|abort"):
        said = [line for line in lines if re.search(pattern, line, re.I)]
        if said:
            return said[-1][:200]
    return ""


def parse_records(stdout):
    meta, rows = {}, []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("meta"):
            meta = rec
        else:
            rows.append(rec)
    return meta, rows


def carried_label(cfg, meta, row, paths):
    """Who carried a row, from what the run proved (never from what was asked for)."""
    if cfg.kind == "raw":
        where = f"; fabric {meta['fabric']}, domain {meta['domain']}" if meta.get("domain") else ""
        return f"raw libfabric ({cfg.provider}{where})"
    if cfg.kind == "hydra":
        return f"{cfg.name} (its own build and launcher)"
    so = meta.get("btl_ofi_so", "")
    ours_dir = (cfg.ours_dir or paths["BTL_OFI_COMPONENT_DIR"]).rstrip("/") + "/"
    how = "".join(f"; {meta[k]}" for k in ("btl_selected", "osc_path") if meta.get(k))
    if row.get("carried_by") == "btl_ofi":
        return (f"btl-ofi (ours; counters moved{how})" if so.startswith(ours_dir) else
                f"btl-ofi counters moved, but mapped {so or 'no btl-ofi DSO'}")
    if so.startswith(ours_dir):
        return f"not btl-ofi (ours loaded, counters idle{how})"
    if so:
        return f"not btl-ofi (stock btl/ofi DSO loaded{how})"
    return f"not btl-ofi ({how[2:] or 'no btl-ofi DSO loaded'})"


def metric_key(bench, row):
    """(metric, op, size) for one record, or None for rows that are not compared."""
    b = row.get("bench")
    if b == "osc_latency":
        return ("lat_us" + bench[len("latency"):], row["op"], row["size"]), row["lat_us"]
    if b == "osc_bw":
        return (bench + "_MBps", row["op"], row["size"]), row["bw_MBps"]
    if b == "osc_msgrate":
        return ("msgrate_per_s", row["op"], row["size"]), row["msgs_per_s"]
    if b == "osc_atomic_rate":
        return ("atomic_ops_per_s", row["op"], row["size"]), row["ops_per_s"]
    if b == "ofi_rma_ref":
        test = row["test"]
        if test == "latency":
            return ("lat_us", row["op"], row["size"]), row["us_per_iter"]
        if test in ("bw", "bibw"):
            return (test + "_MBps", row["op"], row["size"]), row["bw_MBps"]
        if test == "msgrate":
            return ("msgrate_per_s", row["op"], row["size"]), row["ops_per_s"]
        if test == "atomic_rate":
            return ("atomic_ops_per_s", row["op"], row["size"]), row["ops_per_s"]
    return None


def run_one(cfg, bench, mode, args, paths, base_env, hosts=None, outdir=None):
    """One run; with hosts (--net) across the host namespaces, with their proof."""
    spec = bench_args(bench, mode, "raw" if cfg.kind == "raw" else "mpi")
    if spec is None:
        return None
    prog, prog_args = spec
    exe = os.path.join(cfg.component_path if cfg.kind == "hydra" else args.bin_dir, prog)
    env = run_env(cfg, base_env, paths)
    if cfg.kind == "raw":
        prog_args = ["-p", cfg.provider, "-T", str(args.timeout)] + prog_args
    evidence, crossed, proved = {}, True, ""
    if hosts is not None:
        if args.ranks > 2 and cfg.kind != "raw":
            prog_args = ["-y"] + prog_args  # ranks 2.. idle in MPI until rank 0 is done
        cmd, env = compare_net.command(cfg, exe, prog_args, env, hosts, outdir, args.ranks)
        rc, out, err, secs, evidence = compare_net.run(exe, cmd, env, args.timeout, hosts,
                                                       locked_run)
        crossed, proved = compare_net.proof(evidence, out + "\n" + err)
    elif cfg.kind == "raw":
        cmd = [exe] + prog_args
        rc, out, err, secs = locked_run(cmd, env, args.timeout)
    else:
        cmd = ["mpirun", "-np", "2"] + [a for k in cfg.env for a in ("-x", k)] + cfg.mca + \
            [exe] + prog_args
        rc, out, err, secs = locked_run(cmd, env, args.timeout)
    meta, rows = parse_records(out)
    meta["osc_path"] = osc_path(err)
    meta["btl_selected"] = btl_selected(err)
    status = classify(rc, err)
    result = {"config": cfg.label, "bench": bench, "cmd": cmd, "status": status, "rc": rc,
              "seconds": round(secs, 2), "meta": meta, "rows": [], "evidence": evidence,
              "stderr_tail": err.strip().splitlines()[-6:] if status != "ok" else [],
              "why": why_not(err) if status != "ok" else ""}
    for row in rows:
        key = metric_key(bench, row)
        if key is None:
            continue
        (metric, op, size), value = key
        who = carried_label(cfg, meta, row, paths)
        result["rows"].append({"metric": metric, "op": op, "size": size, "value": value,
                               "valid": row.get("valid", "yes") == "yes" and crossed,
                               "carried_by": f"{who}; {proved}" if proved else who,
                               "ofi_ops": row.get("ofi_ops")})
    return result


# ---- aggregation --------------------------------------------------------------

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


# ---- reports ------------------------------------------------------------------

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


def markdown(report, configs):
    stats, lines = report["stats_by_key"], []
    lines.append(f"# btl-ofi one-sided comparison ({report['mode']} mode)\n")
    lines.append(f"- date: {report['date']}")
    lines.append(f"- machine: {report['machine']}")
    lines.append(f"- command: `{report['command']}`")
    lines.append(f"- repetitions: {report['reps']}, interleaved; cell = median [min] and the "
                 "ratio of medians to ours on the same provider")
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
    lines.append("## Targets\n")
    for t in report["targets"]:
        mark = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        lines.append(f"- {t['target']}: **{mark}** ({t['detail']})")
    lines.append("")
    return "\n".join(lines)


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


# ---- main ---------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="the < 10 minute run `make bench` does")
    p.add_argument("--net", action="store_true",
                   help="network mode (`make bench-net`): one rank in each of two network "
                   "namespaces, made and removed by this run (root); Open MPI's peers, "
                   "MPICH and Intel MPI (scripts/install-mpis.sh) as well")
    p.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    p.add_argument("--providers", help="comma-separated; ';' inside a name is kept "
                   "(default quick: shm,sockets,tcp;ofi_rxm; full adds udp;ofi_rxd)")
    p.add_argument("--only", help="comma-separated configuration names to run "
                   "(ours,stock,raw,vader,sm,tcp,ucx,pt2pt)")
    p.add_argument("--benches", help="comma-separated benchmarks (latency,latency_lock,"
                   "latency_lock_excl,bw,bw_fence,bibw,"
                   "msgrate,atomic_rate)")
    p.add_argument("--lat-sizes", metavar="BYTES,...",
                   help="the latency benchmark's sizes (default: the mode's; e.g. 8)")
    p.add_argument("--bin-dir", default=os.environ.get("OSC_HARNESS_BIN", REPO),
                   help="where osc_latency, osc_bw, ... and ofi_rma_ref are (default: repo root)")
    p.add_argument("--env-file", help="btl-ofi env file (default $BTL_OFI_ENV_FILE, then the "
                   "build tree's btl-ofi-env.sh)")
    p.add_argument("--also", action="append", default=[], metavar="NAME=ENVFILE",
                   help="also run btl-ofi as another install's env file names it, as "
                        "configuration NAME beside ours (e.g. a build with other CPPFLAGS)")
    p.add_argument("--out", help="output directory (default results/<timestamp>)")
    p.add_argument("--ours-variant", action="append", default=[], metavar="NAME:PARAM=VALUE,...",
                   help="also run btl-ofi with these of its parameters (names after "
                        "btl_<component>_; a name starting with osc_, pml_, btl_, mpi_ "
                        "or opal_ is a whole MCA name), as configuration ours-NAME beside "
                        "ours, e.g. nocoalesce:put_coalesce=0 or "
                        "intrinsic:osc_rdma_acc_single_intrinsic=true")
    p.add_argument("--ranks", type=int, default=2,
                   help="--net: ranks, one per host namespace (3-8); rank 0 measures against "
                        "rank 1 while the others wait in MPI (the benchmarks' -y)")
    p.add_argument("--timeout", type=int, help="seconds per run (default 30 quick, 300 full); "
                   "a run that times out is not repeated in later repetitions")
    return p.parse_args()


# --ours-variant names that are whole MCA names, not the component's own
FULL_MCA_PREFIXES = ("osc_", "pml_", "btl_", "mpi_", "opal_")


def select_configs(args, providers, paths, ucx, hosts):
    net_notes = []
    configs = build_configs(providers, paths, ucx, hosts.iface if hosts else None,
                            compare_net.libfabric_major())
    for also in args.also:
        name, _, env_file = also.partition("=")
        if not name or not env_file:
            sys.exit(f"compare.py: --also {also!r}: want NAME=ENVFILE")
        other = read_env_file(env_file)
        if other["BTL_OFI_COMPONENT"] != paths["BTL_OFI_COMPONENT"]:
            sys.exit(f"compare.py: --also {name}: {env_file} is for component "
                     f"{other['BTL_OFI_COMPONENT']}, ours is {paths['BTL_OFI_COMPONENT']}")
        configs += [replace(c, name=name, component_path=other["OMPI_MCA_mca_base_component_path"],
                            ours_dir=other["BTL_OFI_COMPONENT_DIR"])
                    for c in configs if c.name == "ours"]
    for variant in args.ours_variant:
        name, _, settings = variant.partition(":")
        pairs = [kv.partition("=") for kv in settings.split(",") if kv]
        if not name or not pairs or any(not k or not eq for k, eq, _ in pairs):
            sys.exit(f"compare.py: --ours-variant {variant!r}: want NAME:PARAM=VALUE[,...]")
        mca = [x for k, _, v in pairs
               for x in ("--mca", k if k.startswith(FULL_MCA_PREFIXES)
                         else f"btl_{paths['BTL_OFI_COMPONENT']}_{k}", v)]
        configs += [replace(c, name=f"ours-{name}", mca=c.mca + mca)
                    for c in configs if c.name == "ours"]
    if hosts:
        configs += compare_net.family_configs(Config, compare_net.families(), net_notes)
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c.name in keep or c.name.split("-")[0] in keep]
    return configs, net_notes


def run_all(args, configs, mode, paths, base_env, hosts, outdir):
    """Every configuration and benchmark in turn, args.reps times (interleaved; each
    repetition starts one configuration further on, so that none always runs first, just
    after another program's exit, or always after the same neighbour)."""
    runs, start, hung = [], time.monotonic(), set()
    for rep in range(args.reps):
        turn = rep % len(configs) if configs else 0
        for cfg in configs[turn:] + configs[:turn]:
            for bench in mode["benches"]:
                if (cfg.label, bench) in hung:
                    runs.append({"config": cfg.label, "bench": bench, "rep": rep, "rows": [],
                                 "status": "not repeated (timed out before)", "seconds": 0})
                    continue
                result = run_one(cfg, bench, mode, args, paths, base_env, hosts, outdir)
                if result is None:
                    continue
                result["rep"] = rep
                runs.append(result)
                if result["status"] == "timeout":
                    hung.add((cfg.label, bench))
                print(f"  rep {rep + 1}/{args.reps} {cfg.label:26s} {bench:12s} "
                      f"{result['status']:22s} {result['seconds']:6.1f}s "
                      f"({time.monotonic() - start:5.0f}s total)", flush=True)
    return runs, start


def main():
    args = parse_args()
    mode = dict(compare_net.NET_MODE if args.net else QUICK if args.quick else FULL)
    if args.timeout is None:
        args.timeout = 120 if args.net else 30 if args.quick else 300
    if args.benches:
        mode["benches"] = args.benches.split(",")
    if args.lat_sizes:
        mode["lat_sizes"] = args.lat_sizes
    env_file = find_env_file(args.env_file)
    paths = read_env_file(env_file)
    providers = args.providers.split(",") if args.providers else \
        (compare_net.providers(paths["major"]) if args.net else
         PROVIDERS_QUICK if args.quick else PROVIDERS_FULL)
    if args.net and "shm" in providers:
        sys.exit("compare.py --net: shm is node-local, it cannot connect two hosts")
    if args.ranks != 2 and not (args.net and 2 < args.ranks <= 8):
        sys.exit("compare.py: --ranks takes 3-8, with --net")
    if args.net:
        compare_net.preflight()  # before anything is written
    base_env = dict(os.environ)
    ucx = has_osc_ucx(run_env(Config("probe", "", "mpi", paths["BTL_OFI_OMPI_PKGLIBDIR"]),
                              base_env, paths))
    for prog in ("osc_latency", "osc_bw", "osc_msgrate", "osc_atomic_rate", "ofi_rma_ref") + \
            (("osc_flush_visibility",) if args.net else ()):
        if not os.access(os.path.join(args.bin_dir, prog), os.X_OK):
            sys.exit(f"compare.py: {prog} not found in {args.bin_dir} (build it, or --bin-dir)")
    if not shutil.which("mpirun"):
        sys.exit("compare.py: mpirun not on PATH")

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or os.path.join(REPO, "results", f"{'net' if args.net else 'bench'}-{stamp}")
    os.makedirs(outdir, exist_ok=True)
    load_before = compare_net.loadavg()
    with (compare_net.namespaces(outdir, env_file, nhosts=max(3, args.ranks)) if args.net
          else contextlib.nullcontext()) \
            as hosts:
        configs, net_notes = select_configs(args, providers, paths, ucx, hosts)
        print(f"compare.py: {len(configs)} configurations x {len(mode['benches'])} benchmarks x "
              f"{args.reps} repetitions, interleaved; env file {env_file}; osc/ucx: {ucx[1]}")
        for note in net_notes:
            print(f"compare.py: {note}")
        print(f"compare.py: writing to {outdir}", flush=True)
        runs, start = run_all(args, configs, mode, paths, base_env, hosts, outdir)
        vis = compare_net.visibility(
            configs, lambda c: os.path.join(c.component_path if c.kind == "hydra" else args.bin_dir,
                                            "osc_flush_visibility"),
            lambda c: run_env(c, base_env, paths), args.timeout, hosts, outdir,
            locked_run) if args.net else {}

    stats, statuses = aggregate(runs)
    report = {
        "mode": "net" if args.net else "quick" if args.quick else "full",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_description(),
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "reps": args.reps, "osc_ucx": ucx[1],
        "providers": providers + sorted({c.provider for c in configs if c.provider} -
                                        set(providers)),
        "load": f"load average {load_before} at the start, {compare_net.loadavg()} at the end",
        "env_file": env_file, "component_paths": paths,
        "configs": [c.__dict__ for c in configs],
        "seconds": round(time.monotonic() - start, 1),
        "statuses": statuses, "stats_by_key": stats, "by_round": by_round(runs),
    }
    report["targets"] = evaluate_targets(stats, providers, paths["major"])
    if args.net:
        report["net_notes"] = net_notes
        report["visibility"] = vis
        report["net_summary"] = compare_net.summary_markdown(stats, configs, runs, fmt, ratio) + \
            compare_net.visibility_lines(vis)
        report["veth"] = compare_net.evidence_lines(runs)
        report["targets"] += compare_net.targets(stats, check, ratio, vis)
    md = markdown(report, configs)
    report["plots"] = plot(report, configs, outdir)
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(md + "\n" + "\n".join(f"![{os.path.basename(p)}]({os.path.basename(p)})"
                                      for p in report["plots"] if p.endswith(".png")) + "\n")
    serial = dict(report)
    serial["stats"] = [{"config": c, "metric": k[0], "op": k[1], "size": k[2], **s}
                       for c, m in stats.items() for k, s in sorted(m.items())]
    del serial["stats_by_key"], serial["by_round"]
    serial["runs"] = runs
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(serial, f, indent=1, default=list)
    print(md)
    print(f"compare.py: done in {report['seconds']:.0f}s; results in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
