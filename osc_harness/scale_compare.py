#!/usr/bin/env python3
"""osc_scale at several rank counts, btl-ofi against osc/rdma over vader, interleaved.

Each repetition runs every rank count with every configuration in turn, so a
slow spell of the machine hits all of them alike; the table shows the median
over repetitions of each phase (ms, slowest rank, mean over rounds) and the
ratio ours / vader. Only ratios are meant to be compared (no absolute target).

  scale_compare.py [--np 2,4,8,16] [--reps 3] [--rounds 20] [--tcp] [--fit]
                   [--before DIR]   # also a second btl-ofi build's component dir
The last rows of each rank count: the peak resident memory of the largest rank
(getrusage) and btl-ofi's endpoints per rank (MPI_T "peers"; 0 without btl-ofi).
--tcp adds Open MPI's one-sided path over btl/tcp (osc/pt2pt on 4.1, osc/rdma on 5.0).
--fit adds, per phase and configuration, how the cost grows with the ranks: the
exponent b of a least-squares fit ms = a * ranks^b over the rank counts (1: linear,
2: quadratic) and the slope of a straight-line fit (per rank added); a phase whose
exponent for btl-ofi exceeds the baseline's (vader) by more than 0.25 is marked
"FASTER THAN vader": what btl-ofi adds grows faster than the job there.
--start (one node) also times, per rank count n, n bare libfabric programs started at
once (fi_info -p shm: loading libfabric and its libraries and initialising its providers,
no MPI) and shows what remains of btl-ofi's MPI_Init beyond that against vader's.
--hosts 2,4,8 runs osc_scale with one rank per host namespace instead (root;
scripts/check-multihost.sh --setup-only makes them): btl-ofi over tcp;ofi_rxm
against Open MPI's one-sided path over btl/tcp, the baseline of those rows.
Needs BTL_OFI_LIBEXECDIR, BTL_OFI_OMPI_PKGLIBDIR and OMPI_MCA_mca_base_component_path
from the env file (btl-ofi-env.sh); mpirun runs under flock /tmp/btl-ofi-mpi.lock.
"""
import argparse
import fcntl
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

OURS = ["--mca", "btl", "self,vader,ofirma", "--mca", "osc", "rdma",
        "--mca", "btl_ofirma_provider_include", "shm"]
VADER = ["--mca", "btl", "self,vader", "--mca", "osc", "rdma"]
# Open MPI's one-sided path over btl/tcp: osc/pt2pt on 4.1 (osc/rdma needs atomics btl/tcp
# lacks); 5.0 has no osc/pt2pt, and its osc/rdma serves btl/tcp with active messages.
TCP_41 = ["--mca", "btl", "self,tcp", "--mca", "osc", "pt2pt"]
TCP_50 = ["--mca", "btl", "self,tcp", "--mca", "osc", "rdma"]
PHASES = ["MPI_Init", "Win_create first", "Win_create later", "lock_all", "put",
          "unlock_all", "Win_free", "round", "loop"]
ROWS = PHASES + ["peak RSS MiB", "btl-ofi endpoints"]  # what each table shows per count


def run_one(np_, mca, rounds, component_path=None, prefix=None, extra_env=None):
    """One osc_scale launch: {phase: record}. prefix: mpirun's argv up to its options
    (host namespaces: launcher.Hosts.argv_prefix); default a local oversubscribed run."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra_env or {})
    if component_path:
        env["OMPI_MCA_mca_base_component_path"] = component_path
    exe = os.path.join(env["BTL_OFI_LIBEXECDIR"], "osc_scale")
    start = prefix or ["mpirun", "-np", str(np_), "--oversubscribe"]
    cmd = ["flock", "/tmp/btl-ofi-mpi.lock", *start, *mca, exe, "-j", "-r", str(rounds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"scale_compare: exit {out.returncode}: {' '.join(cmd)}\n"
                         f"{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if "phase" in rec:
                rows[rec["phase"]] = rec
    return rows


def libfabric_start(count, provider="shm"):
    """Wall ms of count bare libfabric programs (fi_info -p provider) started at once, under
    the MPI lock like the launches: what loading libfabric (and the libraries it links,
    such as libpsm2, whose constructor calibrates its clock) and initialising its providers
    costs that many processes on this machine, before any MPI."""
    with open("/tmp/btl-ofi-mpi.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        begin = time.monotonic()
        procs = [subprocess.Popen(["fi_info", "-p", provider], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(count)]
        codes = [p.wait() for p in procs]
        ms = (time.monotonic() - begin) * 1000.0
    if any(codes):
        raise SystemExit(f"scale_compare: fi_info -p {provider} failed ({codes})")
    return ms


def print_start(res, starts, counts):
    """MPI_Init against libfabric's own start: what btl-ofi adds beyond loading libfabric."""
    print("\n# MPI_Init against libfabric's own start (n bare fi_info -p shm at once), "
          "median ms")
    print(f"{'ranks':>5} {'libfabric start':>16} {'ours MPI_Init':>14} {'vader MPI_Init':>15} "
          f"{'ours/vader':>11} {'(ours-start)/vader':>19}")
    for count in counts:
        start = statistics.median(starts[count])
        ours = statistics.median(res[(count, "ours", "MPI_Init")])
        vader = statistics.median(res[(count, "vader", "MPI_Init")])
        print(f"{count:>5} {start:>16.1f} {ours:>14.1f} {vader:>15.1f} {ours / vader:>11.2f} "
              f"{max(ours - start, 0.0) / vader:>19.2f}")


def record(res, carried, count, name, rows):
    """Keep one launch's phases, memory and btl-ofi's puts under (count, name)."""
    for ph in PHASES:
        res.setdefault((count, name, ph), []).append(rows[ph]["ms_mean"])
    mem = rows.get("memory", {})
    res.setdefault((count, name, "peak RSS MiB"), []).append(mem.get("rss_max_MiB", 0))
    res.setdefault((count, name, "btl-ofi endpoints"), []).append(mem.get("peers_max", 0))
    if name in ("ours", "before"):
        carried.setdefault((count, name), []).append(rows["round"].get("put_count", 0))


def print_table(res, carried, counts, names, base, unit):
    """Medians per count and phase, and each configuration's ratio to base."""
    head = f"{unit:>5} {'phase':>17} " + " ".join(f"{n + ' ms':>11}" for n in names)
    head += " " + " ".join(f"{n + '/' + base:>13}" for n in names if n != base)
    print(head)
    for count in counts:
        for ph in ROWS:
            med = {n: statistics.median(res[(count, n, ph)]) for n in names}
            line = f"{count:>5} {ph:>17} " + " ".join(f"{med[n]:>11.3f}" for n in names)
            line += " " + " ".join(f"{med[n] / med[base]:>13.2f}" if med[base] > 0
                                   else f"{'-':>13}" for n in names if n != base)
            print(line)
        print(f"{count:>5} {'btl-ofi puts/round':>17} " +
              " ".join(f"{min(carried[(count, n)]):>11.1f}" for n in names
                       if n in ("ours", "before")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", default="2,4,8,16")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--before", help="component dir of a second btl-ofi build ('before')")
    ap.add_argument("--tcp", action="store_true",
                    help="also Open MPI's one-sided path over btl/tcp")
    ap.add_argument("--fit", action="store_true",
                    help="also fit each cost against the ranks (exponent and slope)")
    ap.add_argument("--start", action="store_true",
                    help="also time n bare libfabric programs started at once (fi_info)")
    ap.add_argument("--hosts", help="host namespace counts (e.g. 2,4,8), one rank each, "
                    "instead of ranks on one node (root; scripts/check-multihost.sh)")
    args = ap.parse_args()
    if args.hosts:
        return main_hosts(args, [int(x) for x in args.hosts.split(",")])
    nps = [int(x) for x in args.np.split(",")]
    node = os.environ.get("BTL_OFI_NODE_BTL", "vader")
    ours = [a.replace("vader", node) for a in OURS]
    configs = [("ours", ours, None), ("vader", [a.replace("vader", node) for a in VADER], None)]
    if args.tcp:
        configs.append(("tcp", tcp_config(), None))
    if args.before:
        configs.insert(1, ("before", ours,
                           args.before + ":" + os.environ["BTL_OFI_OMPI_PKGLIBDIR"]))
    res = {}  # (np, config, phase) -> [ms]
    carried = {}
    starts = {}  # np -> [ms of np bare libfabric starts at once]
    for _ in range(args.reps):
        for np_ in nps:
            for name, mca, path in configs:
                record(res, carried, np_, name, run_one(np_, mca, args.rounds, path))
            if args.start:
                starts.setdefault(np_, []).append(libfabric_start(np_))
    names = [c[0] for c in configs]
    print(f"# osc_scale, {args.reps} interleaved repetitions, {args.rounds} rounds; "
          "median ms (slowest rank, mean over rounds)")
    print_table(res, carried, nps, names, "vader", "ranks")
    if args.start:
        print_start(res, starts, nps)
    if args.fit and len(nps) >= 3:
        print_fits(res, nps, names, "vader", "ranks")
    return 0


def tcp_config():
    major = int(os.environ.get("BTL_OFI_OMPI_VERSION", "4").split(".")[0])
    return TCP_50 if major >= 5 else TCP_41


def main_hosts(args, counts):
    """osc_scale with one rank per host namespace: btl-ofi over tcp;ofi_rxm against Open
    MPI's one-sided path over btl/tcp (no shared memory reaches another host). Every count
    has host namespaces of its own (check-multihost.sh --setup-only), all made first, so
    that each repetition runs every count and configuration in turn."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    sys.path.insert(0, os.path.join(repo, "python_tests"))
    import launcher  # noqa: E402  (the host namespaces' mpirun prefix)
    script = os.path.join(repo, "scripts", "check-multihost.sh")
    # btl/tcp carries the two-sided traffic between hosts (without a BTL that reaches a
    # peer, ob1 4.1.4 crashes in its first send instead of saying so)
    configs = [("ours", ["--mca", "btl", "self,tcp,ofirma", "--mca", "osc", "rdma",
                         "--mca", "btl_ofirma_provider_include", "tcp;ofi_rxm"]),
               ("tcp", tcp_config())]
    sets = {}
    res, carried = {}, {}
    try:
        for count in counts:
            workdir = tempfile.mkdtemp(prefix=f"scale-hosts{count}-")
            subprocess.run(["bash", script, "--setup-only", "--hosts", str(count),
                            "--log-dir", workdir], check=True, capture_output=True, text=True)
            sets[count] = launcher.Hosts.from_conf(os.path.join(workdir, "netns.conf"))
        for _ in range(args.reps):
            for count in counts:
                hosts = sets[count]
                for name, mca in configs:
                    rows = run_one(count, mca, args.rounds, prefix=hosts.argv_prefix(count),
                                   extra_env=hosts.env())
                    record(res, carried, count, name, rows)
    finally:
        for hosts in sets.values():
            subprocess.run(["bash", script, "--teardown", hosts.conf], capture_output=True)
    names = [c[0] for c in configs]
    print(f"# osc_scale across host namespaces (one rank each, tcp;ofi_rxm for btl-ofi), "
          f"{args.reps} interleaved repetitions, {args.rounds} rounds; median ms (slowest "
          "rank, mean over rounds)")
    print_table(res, carried, counts, names, "tcp", "hosts")
    if args.fit and len(counts) >= 3:
        print_fits(res, counts, names, "tcp", "hosts")
    return 0


def fit_line(xs, ys):
    """Least-squares ys = c + d * xs: (c, d)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    d = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - d * mx, d


def fit_power(xs, ys):
    """Least-squares ys = a * xs^b (a straight line on logarithms): b, or None where a value
    is not > 0."""
    if any(y <= 0 for y in ys):
        return None
    return fit_line([math.log(x) for x in xs], [math.log(y) for y in ys])[1]


def print_fits(res, counts, names, base, unit):
    """Growth of each cost with the count, per configuration (medians over repetitions)."""
    print(f"\n# growth with the {unit} ({','.join(map(str, counts))}): exponent b of "
          f"ms = a * {unit}^b (1 linear, 2 quadratic), and the straight line's slope per "
          f"one more")
    print(f"{'phase':>17} " + " ".join(f"{n + ' b':>9} {n + ' /' + unit[:-1]:>12}"
                                       for n in names))
    for ph in ROWS:
        cells, exps = [], {}
        for n in names:
            ys = [statistics.median(res[(count, n, ph)]) for count in counts]
            b = fit_power(counts, ys)
            exps[n] = b
            cells.append(f"{b:>9.2f}" if b is not None else f"{'-':>9}")
            cells.append(f"{fit_line(counts, ys)[1]:>12.4f}")
        mark = ""
        if exps.get("ours") is not None and exps.get(base) is not None and \
                exps["ours"] > exps[base] + 0.25:
            mark = f"  FASTER THAN {base}"
        print(f"{ph:>17} " + " ".join(cells) + mark)


if __name__ == "__main__":
    sys.exit(main())
