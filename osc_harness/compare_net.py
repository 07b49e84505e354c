"""compare.py --net: the same interleaved comparison with the two ranks on two
"hosts", the network namespaces scripts/check-multihost.sh makes (a hub with a
bridge, hosts h1 and h2 joined to it by veth pairs, 10.77.0.0/24).

- The namespaces are made here (check-multihost.sh --setup-only) and always
  removed (its --teardown), whatever happens in between.
- Open MPI runs are launched by python_tests/launcher.Hosts: mpirun in the hub,
  one orted per host namespace through scripts/netns-rsh, one rank each.
- The raw libfabric reference runs its two processes in h1 and h2
  (ofi_rma_ref -N).
- Other MPIs (MPICH, Intel MPI from PyPI, each in its own venv under the MPI
  cache, set up by scripts/install-mpis.sh together with their own build of
  the benchmarks) are launched by their own hydra across the same namespaces.

The benchmarks use h1 and h2. Two more checks run once per configuration,
with osc_flush_visibility built by that MPI (rank 0 puts 8 bytes into rank 1
and flushes; rank 1 makes no MPI call for 20 ms each round): its watch form
(2 hosts: rank 1 watches its own memory, and the round is stale if the old
value was still there after the flush had returned; the namespaces share one
clock) and its third-party form (h3 too: rank 2, told after the flush, gets
the bytes from rank 1). A configuration with stale rounds has an
MPI_Win_flush that returns before the data is at the target; it is shown,
and left out of the "ours <= best peer" latency targets, since its times do
not include what MPI's flush must wait for.

What every run proved is recorded with its rows: the bytes and packets each
host's veth sent while it ran (a run whose hosts did not both send is not a
network run, its rows are not counted), and the MPI, libfabric and UCX
libraries its rank processes really mapped (/proc/PID/maps).
"""

import contextlib
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python_tests"))
import launcher  # noqa: E402  (python_tests/launcher.py: Hosts, the netns launch)

SETUP = os.path.join(REPO, "scripts", "check-multihost.sh")
MPI_CACHE = os.environ.get("BTL_OFI_MPI_CACHE", "/var/cache/btl-ofi/mpis")
HUB_BRIDGE = "br0"  # the hub's bridge (check-multihost.sh): hydra's proxies call back on it
EXIT_CANNOT = 77

# The network metrics (issue 14, item 3, as far as the programs measure them).
NET_MODE = {
    "lat_sizes": "8,64,512,4096,32768,262144,1048576",
    "bw_sizes": "4096,16384,65536,262144,1048576,4194304", "rate_sizes": "8",
    "lat_iters": "2000", "bw_iters": "100", "rate_iters": "2000", "budget": "64M",
    "benches": ["latency", "bw", "msgrate"],
}
# A run is a network run only if every host it used sent at least this many packets.
MIN_PACKETS = 200
# osc_flush_visibility SIZE ROUNDS BUSY_MS: 8 bytes, 100 rounds, the target busy 20 ms each;
# on 2 ranks its watch form, on 3 its third-party form
VIS_ARGS = ["8", "100", "20"]
VIS_FORMS = (("watch", 2), ("third party", 3))

SUMMARY = [("lat_us", op, 8, f"{op} 8 B us") for op in ("put", "get", "acc", "fop", "cas")] + \
    [("bw_MBps", op, size, f"{op} {label} MB/s") for op in ("put", "get")
     for size, label in ((65536, "64K"), (1 << 20, "1M"), (4 << 20, "4M"))] + \
    [("msgrate_per_s", "put", 8, "put 8 B msgs/s")]


def providers(major):
    """Ours on Open MPI 4.1 / libfabric 1.17: tcp;ofi_rxm and sockets; on 5.0 /
    libfabric 2.x tcp;ofi_rxm and plain tcp (2.x has no sockets provider)."""
    return ["tcp;ofi_rxm", "tcp"] if major >= 5 else ["tcp;ofi_rxm", "sockets"]


def libfabric_major():
    """The major version of the libfabric fi_info reports (`fi_info --version`), 0 if none."""
    try:
        out = subprocess.run(["fi_info", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    m = re.search(r"libfabric:\s*(\d+)\.", out.stdout)
    return int(m.group(1)) if m else 0


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def cannot(reason):
    """Stop: a network run is impossible here. Never a one-host run in its place."""
    print(f"compare.py --net: NOT RUN: {reason}; a network run needs root and network "
          "namespaces (no one-host run is made instead)", file=sys.stderr)
    sys.exit(EXIT_CANNOT)


def preflight():
    if os.geteuid() != 0:
        cannot(f"running as uid {os.geteuid()}, network namespaces need root")
    for tool in ("ip", "unshare"):
        if not shutil.which(tool):
            cannot(f"'{tool}' not found")


@contextlib.contextmanager
def namespaces(outdir, env_file, setup_args=(), nhosts=3):
    """nhosts host namespaces (h3 for the visibility check, h3.. for --ranks) for the duration of the block, removed on any exit
    (an exception, Ctrl-C, or SIGTERM, which is turned into SystemExit here). setup_args go
    to check-multihost.sh --setup-only (--nics N, --rate R)."""
    preflight()
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    logdir = os.path.join(outdir, "netns")
    os.makedirs(logdir, exist_ok=True)
    env = dict(os.environ, BTL_OFI_ENV_FILE=env_file)
    conf = os.path.join(logdir, "netns.conf")
    try:
        out = subprocess.run(["bash", SETUP, "--setup-only", "--hosts", str(nhosts), *setup_args,
                              "--log-dir", logdir],
                             env=env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0 or not os.path.isfile(conf):
            cannot(f"check-multihost.sh --setup-only exited {out.returncode}: "
                   f"{(out.stdout + out.stderr).strip().splitlines()[-1:]}")
        print(out.stdout.strip().splitlines()[0], flush=True)
        yield launcher.Hosts.from_conf(conf)
    finally:
        if os.path.isfile(conf):
            down = subprocess.run(["bash", SETUP, "--teardown", conf], capture_output=True,
                                  text=True, timeout=120)
            print((down.stdout + down.stderr).strip().splitlines()[-1], flush=True)
        signal.signal(signal.SIGTERM, previous)


# ---- other MPIs ------------------------------------------------------------------

class Family:
    """One MPI installed from PyPI into its own venv under MPI_CACHE, with the
    benchmarks built by its own compiler wrapper in <venv>/bench-bin."""

    def __init__(self, kind, root):
        self.kind, self.root = kind, root
        self.name = os.path.basename(root)
        self.version = self.name.split("-", 1)[1]
        self.bin_dir = os.path.join(root, "bench-bin")

    def missing(self):
        need = [os.path.join(self.root, "bin", "mpiexec")] + \
            [os.path.join(self.bin_dir, p) for p in ("osc_latency", "osc_bw", "osc_msgrate")]
        return [p for p in need if not os.access(p, os.X_OK)]

    def env(self, libfabric_dir):
        """Only this MPI's programs and libraries: no Open MPI, no other libfabric."""
        env = {"PATH": os.path.join(self.root, "bin") + ":/usr/sbin:/usr/bin:/sbin:/bin",
               "LD_LIBRARY_PATH": libfabric_dir or ""}
        if self.kind == "impi":
            env.update(I_MPI_ROOT=self.root, I_MPI_FABRICS="ofi", I_MPI_DEBUG="5")
        else:
            env["MPIR_CVAR_DEBUG_SUMMARY"] = "1"
        return env


def families(cache=MPI_CACHE):
    found = []
    for kind in ("mpich", "impi"):
        for root in sorted(glob.glob(os.path.join(cache, f"{kind}-*"))):
            found.append(Family(kind, root))
    return found


def family_configs(Config, fams, notes):
    """MPICH ch4:ofi on tcp;ofi_rxm (also without inject writes) and tcp, ch4:ucx on UCX's tcp; Intel MPI on
    tcp;ofi_rxm and tcp with MPICH's libfabric, and on tcp;ofi_rxm (and tcp, where the
    system's libfabric is 2.x) with the system's."""
    mpich = next((f for f in fams if f.kind == "mpich"), None)
    mpich_lf = os.path.join(mpich.root, "lib", "mpich") if mpich else ""
    system_lf = "/usr/lib/x86_64-linux-gnu"
    configs = []
    if not fams:
        notes.append(f"no other MPI installed under {MPI_CACHE} (bash scripts/install-mpis.sh): "
                     "Open MPI's configurations only")
    for fam in fams:
        gone = fam.missing()
        if gone:
            notes.append(f"{fam.name}: not run, missing {', '.join(gone)} "
                         "(bash scripts/install-mpis.sh)")
            continue
        if fam.kind == "mpich":
            for prov in ("tcp;ofi_rxm", "tcp"):
                configs.append(Config(f"{fam.name}-ofi", prov, "hydra", fam.bin_dir, env=dict(
                    fam.env(""), MPIR_CVAR_CH4_NETMOD="ofi", FI_PROVIDER=prov),
                    note=fam.root))
            # MPICH puts of up to the inject size with fi_inject_write, which completes
            # when the buffer may be reused, so MPI_Win_flush has nothing to wait for; its
            # own CVAR says that "may break the synchronization" on tcp;ofi_rxm. With it
            # off, small puts are delivery-complete writes, the semantics btl-ofi keeps.
            configs.append(Config(f"{fam.name}-ofi-noinject", "tcp;ofi_rxm", "hydra", fam.bin_dir,
                                  env=dict(fam.env(""), MPIR_CVAR_CH4_NETMOD="ofi",
                                           FI_PROVIDER="tcp;ofi_rxm",
                                           MPIR_CVAR_CH4_OFI_DISABLE_INJECT_WRITE="1"),
                                  note=fam.root))
            # UCX would otherwise pick its shared-memory transports: the namespaces share a kernel
            configs.append(Config(f"{fam.name}-ucx", "", "hydra", fam.bin_dir, env=dict(
                fam.env(""), MPIR_CVAR_CH4_NETMOD="ucx", UCX_TLS="tcp,self"), note=fam.root))
        else:
            if not mpich_lf:
                notes.append(f"{fam.name}: run with the system's libfabric only "
                             "(no MPICH venv to take libfabric 2.x from)")
            for prov in ("tcp;ofi_rxm", "tcp") if mpich_lf else ():
                configs.append(Config(f"{fam.name}", prov, "hydra", fam.bin_dir, env=dict(
                    fam.env(mpich_lf), FI_PROVIDER=prov), note=fam.root))
            # the system's libfabric 2.x has a plain RDM tcp too (1.17's tcp is MSG only)
            for prov in ("tcp;ofi_rxm", "tcp") if libfabric_major() >= 2 else ("tcp;ofi_rxm",):
                configs.append(Config(f"{fam.name}-syslf", prov, "hydra", fam.bin_dir, env=dict(
                    fam.env(system_lf), FI_PROVIDER=prov), note=fam.root))
    return configs


# ---- one network run ------------------------------------------------------------

def hydra_hostfile(hosts, outdir):
    path = os.path.join(outdir, "netns", "hydra-hosts")
    with open(path, "w") as f:
        f.writelines(f"{ip}:1\n" for ip in hosts.ips)
    return path


def command(cfg, exe, prog_args, env, hosts, outdir, nranks=2):
    """(argv, env) of one run of exe across the first nranks host namespaces."""
    env = dict(env, **hosts.env(), PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    if cfg.kind == "raw":
        return [exe, "-N", ",".join(hosts.namespaces[:2])] + prog_args, env
    if cfg.kind == "hydra":
        for k in [k for k in env if k.startswith(("OMPI_", "PMIX_", "FI_", "UCX_"))
                  and k not in cfg.env and k not in hosts.env()]:
            del env[k]
        env.update(cfg.env)
        mpiexec = os.path.join(cfg.note, "bin", "mpiexec")
        return ["ip", "netns", "exec", hosts.hub, mpiexec, "-f", hydra_hostfile(hosts, outdir),
                "-launcher", "ssh", "-launcher-exec", hosts.agent, "-iface", HUB_BRIDGE,
                "-n", str(nranks), "-ppn", "1", exe] + prog_args, env
    argv = hosts.argv_prefix(nranks) + [a for k in cfg.env for a in ("-x", k)] + cfg.mca
    return argv + [exe] + prog_args, env


def tx_bytes(ns, iface, stat="tx_bytes"):
    """One counter of an interface in a network namespace (0 if it cannot be read)."""
    r = subprocess.run(["ip", "netns", "exec", ns, "cat",
                        f"/sys/class/net/{iface}/statistics/{stat}"],
                       capture_output=True, text=True, timeout=30)
    text = r.stdout.strip()
    return int(text) if text.isdigit() else 0


def veth_counters(hosts):
    """{namespace: (tx_bytes, tx_packets)} of each host's interface."""
    return {ns: (tx_bytes(ns, hosts.iface), tx_bytes(ns, hosts.iface, "tx_packets"))
            for ns in hosts.namespaces}


LIB_RE = re.compile(r"(\S*/(lib(mpi|fabric|ucp|uct)\S*\.so[.\d]*|mca_(osc|btl|pml)_\w+\.so))$")


class MapsProbe(threading.Thread):
    """While a run lasts, which libraries the processes running exe map
    (/proc/PID/maps of every process whose executable is exe)."""

    def __init__(self, exe):
        super().__init__(daemon=True)
        self.exe, self.libs, self.pids = {exe, os.path.realpath(exe)}, set(), set()
        self.done = threading.Event()

    def runs_exe(self, pid):
        """By /proc/PID/exe, or by argv[0] where exe cannot be resolved from here (a
        process in another mount namespace below a chroot, as in scripts/debroot.sh)."""
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0].decode(errors="replace")
        return os.readlink(f"/proc/{pid}/exe") in self.exe or argv0 in self.exe

    def run(self):
        while not self.done.wait(0.25):
            for pid in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    if not self.runs_exe(pid):
                        continue
                    with open(f"/proc/{pid}/maps") as f:
                        maps = f.read()
                except OSError:
                    continue
                self.pids.add(pid)
                for line in maps.splitlines():
                    m = LIB_RE.search(line)
                    if m:
                        self.libs.add(m.group(1))

    def stop(self):
        self.done.set()
        self.join(timeout=5)
        return {"rank_pids_seen": len(self.pids), "mapped": sorted(self.libs)}


def run(exe, cmd, env, timeout, hosts, locked_run):
    """locked_run(cmd, env, timeout) with the veth counters and the libraries the
    processes running exe mapped."""
    before = veth_counters(hosts)
    probe = MapsProbe(exe)
    probe.start()
    try:
        rc, out, err, secs = locked_run(cmd, env, timeout)
    finally:
        seen = probe.stop()
    after = veth_counters(hosts)
    sent = {ns: (after[ns][0] - before[ns][0], after[ns][1] - before[ns][1]) for ns in after}
    return rc, out, err, secs, {"veth": sent, **seen}


def proof(evidence, output, nhosts=2):
    """(crossed, text): did each of the first nhosts hosts send, and what the run showed beyond its counters
    (the MPI's own word, the libraries and components its ranks mapped). The text
    is the same for every run of a configuration; the byte counts stay in evidence."""
    pkts = [p for _, p in list(evidence.get("veth", {}).values())[:nhosts]]
    crossed = bool(pkts) and min(pkts) >= MIN_PACKETS
    parts = [] if crossed else ["NOT a network run (a host sent < %d packets)" % MIN_PACKETS]
    said = []
    for pat in (r"MPICH \d[\w.]*", r"libfabric provider: [^\n]*",
                r"Intel\(R\) MPI Library, Version \S+", r"libfabric version: \S+", r"UCX netmod"):
        said += sorted(set(m.strip() for m in re.findall(pat, output)))
    if said:
        parts.append("says " + "; ".join(said))
    return crossed, "; ".join(parts)


def mapped_text(mapped):
    libs = sorted(lib for lib in mapped if not os.path.basename(lib).startswith("mca_"))
    comps = sorted({os.path.basename(lib)[4:-3] for lib in mapped
                    if os.path.basename(lib).startswith("mca_")})
    return "; ".join((["mapped " + ", ".join(libs)] if libs else []) +
                     (["components " + ",".join(comps)] if comps else []))


def evidence_lines(runs):
    """Per configuration, over all its runs: the fewest packets a host sent in one run,
    the bytes, and every MPI/libfabric/UCX library and MCA component its ranks mapped."""
    out = {}
    for run in runs:
        ev = run.get("evidence", {})
        if not ev.get("veth"):
            continue
        low = min(p for _, p in list(ev["veth"].values())[:2])
        cur = out.setdefault(run["config"], {"low": low, "kib": 0, "n": 0, "seen": 0,
                                             "mapped": set()})
        cur["low"] = min(cur["low"], low)
        cur["kib"] += sum(b for b, _ in ev["veth"].values()) // 1024
        cur["n"] += 1
        cur["seen"] += bool(ev.get("rank_pids_seen"))
        cur["mapped"] |= set(ev.get("mapped", []))
    return {c: f"veth: {v['n']} runs, {v['kib']} KiB sent in all, every host >= {v['low']} "
               f"packets per run; rank processes seen in {v['seen']} of {v['n']} runs" +
               (f"; {mapped_text(v['mapped'])}" if v["mapped"] else "")
            for c, v in out.items()}


def visibility(configs, exe_of, env_of, timeout, hosts, outdir, locked_run):
    """{label: {form: {...}}}: osc_flush_visibility's watch and third-party forms,
    once per MPI configuration. exe_of(cfg) is the program built for that MPI,
    env_of(cfg) its environment."""
    out = {}
    for cfg in (c for c in configs if c.kind != "raw"):
        exe = exe_of(cfg)
        for form, nranks in VIS_FORMS:
            res = out.setdefault(cfg.label, {})[form] = {}
            if not os.access(exe, os.X_OK):
                res["status"] = f"not run: no {exe} (make install; scripts/install-mpis.sh)"
                continue
            cmd, env = command(cfg, exe, VIS_ARGS, env_of(cfg), hosts, outdir, nranks=nranks)
            rc, o, e, secs, ev = run(exe, cmd, env, timeout, hosts, locked_run)
            m = re.search(r"rounds=(\d+) stale=(\d+)", o)
            crossed, proved = proof(ev, o + "\n" + e, nhosts=nranks)
            res.update(cmd=cmd, rc=rc, seconds=round(secs, 1), evidence=ev, proof=proved)
            if m and rc in (0, 1, 2) and crossed:
                res.update(status="ok", rounds=int(m.group(1)), stale=int(m.group(2)),
                           line=o[m.start():].splitlines()[0])
            else:
                why = (o + e).strip().splitlines()[-1:] or ["no output"]
                res.update(status=f"failed (exit {rc}{'' if crossed else ', not across the hosts'})",
                           why="".join(ch for ch in why[0] if ch.isprintable())[:200])
            print(f"  visibility {cfg.label:26s} {form:11s} {res['status']}" +
                  (f": stale {res['stale']}/{res['rounds']}" if "stale" in res else ""), flush=True)
    return out


def stale_rounds(vis_of_config):
    """Stale rounds over the forms that ran, or None if none did."""
    counts = [r["stale"] for r in vis_of_config.values() if "stale" in r]
    return sum(counts) if counts else None


def visibility_lines(vis):
    """The report's section on it."""
    lines = ["## Does MPI_Win_flush complete at the target? "
             f"(osc_flush_visibility {' '.join(VIS_ARGS)})\n",
             "Rank 0 puts 8 bytes into rank 1 and flushes; rank 1 makes no MPI call for 20 ms "
             "each round. watch (2 hosts): rounds in which rank 1 still saw the old value in its "
             "memory after rank 0's flush had returned (one clock: the namespaces share a "
             "kernel). third party (3 hosts): rounds in which rank 2, told after the flush, got "
             "the old value from rank 1.\n",
             "| configuration | " + " | ".join(f for f, _ in VIS_FORMS) + " | |",
             "|---|" + "---:|" * len(VIS_FORMS) + "---|"]
    for label, forms in vis.items():
        cells = [f"{r['stale']}/{r['rounds']}" if "stale" in r else
                 f"{r['status']}{': ' + r['why'] if r.get('why') else ''}" for r in forms.values()]
        n = stale_rounds(forms)
        verdict = "not measured" if n is None else "flush completes at the target" if n == 0 \
            else "flush returns before the data is at the target: not a latency peer"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {verdict} |")
    return lines + [""]


# ---- report -----------------------------------------------------------------------

def summary_markdown(stats, configs, runs, fmt, ratio, ref="ours[tcp;ofi_rxm]"):
    """One row per configuration, one column per network metric: median [min], and
    the ratio of medians to ours on tcp;ofi_rxm; then the runs that did not end well."""
    lines = ["## Summary across the namespaces (median [min], ratio to "
             f"{ref})\n", "| configuration | " + " | ".join(c[3] for c in SUMMARY) + " |",
             "|---|" + "---:|" * len(SUMMARY)]
    for cfg in configs:
        cells = []
        for metric, op, size, _ in SUMMARY:
            s = stats.get(cfg.label, {}).get((metric, op, size))
            if not s or not s.get("n"):
                cells.append("-")
                continue
            r = ratio(stats, cfg.label, ref, (metric, op, size))
            cells.append(f"{fmt(s['median'], metric)} [{fmt(s['min'], metric)}]" +
                         (f" {r:.2f}x" if r is not None and cfg.label != ref else ""))
        lines.append(f"| {cfg.label} | " + " | ".join(cells) + " |")
    lines.append("")
    bad = {}
    for run in runs:
        if run["status"] != "ok":
            text = run["status"] + (f": {run['why']}" if run.get("why") else "")
            bad.setdefault((run["config"], run["bench"]), {}).setdefault(text, 0)
            bad[(run["config"], run["bench"])][text] += 1
    if bad:
        lines.append("Runs that did not end well (the program's or MPI's own words):\n")
        lines += [f"- {c} {b}: " + "; ".join(f"{n}x {t}" for t, n in v.items())
                  for (c, b), v in bad.items()]
        lines.append("")
    return lines


def targets(stats, check, ratio, vis=None, ref="ours[tcp;ofi_rxm]"):
    """Issue 14 item 4 on the network: ours at or below the best peer on every
    latency row, at or above it on every bandwidth row (peers: every other MPI
    configuration; the raw reference is not a peer). A peer whose flush was seen
    to return before the data reached the target (vis) is no latency peer: its
    times leave out what MPI's flush must wait for. Ours must show no stale round."""
    vis = vis or {}
    t = []
    for form, r in vis.get(ref, {}).items():
        if "stale" in r:
            t.append({"target": f"net flush completes at the target ({form})",
                      "met": r["stale"] == 0,
                      "detail": f"{r['stale']} stale rounds of {r['rounds']}"})
    for metric, op, size, title in SUMMARY:
        key = (metric, op, size)
        low = metric == "lat_us"
        peers = [(c, s[key]["median"]) for c, s in stats.items()
                 if not c.startswith(("ours[", "ours-", "raw[")) and s.get(key, {}).get("n")
                 and not (low and stale_rounds(vis.get(c, {})))]
        if not peers:
            continue
        best = min(peers, key=lambda p: p[1]) if low else max(peers, key=lambda p: p[1])
        check(t, f"net {title}: ours {'<=' if low else '>='} best peer ({best[0]})",
              ratio(stats, ref, best[0], key), 1.0, "<=" if low else ">=",
              f"ours/{best[0]} median")
    return t
