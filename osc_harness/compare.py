#!/usr/bin/env python3
"""Compare btl-ofi with the other ways of carrying one-sided MPI, interleaved.

One invocation runs every configuration in turn (A B C A B C ...) for N
repetitions, so slow drifts of the machine hit all of them alike:

  ours     btl-ofi (btl/ofirma) + osc/rdma on a provider (on libfabric 2.x, ours on
           `tcp` is the plain RDM tcp provider, not tcp;ofi_rxm: compare_configs.PLAIN_RDM_2X)
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

compare_configs.py holds the configurations, compare_runs.py the runs and what they
said, compare_stats.py the medians, ratios and targets, compare_report.py results.md,
the plots and results.json; this file the command line and the order of a run.
"""

import argparse
import contextlib
import datetime
import os
import shutil
import sys
import time
from dataclasses import dataclass

import compare_configs
import compare_net
import compare_report
import compare_runs
import compare_stats

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

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
    p.add_argument("--drop-caches", action="store_true",
                   help="drop the page cache before every run (root), so that no install's "
                        "code keeps its physical pages through the comparison: between two "
                        "installs of one source, paired ratios otherwise moved by up to 4%% "
                        "(PERFORMANCE.md)")
    p.add_argument("--timeout", type=int, help="seconds per run (default 30 quick, 300 full); "
                   "a run that times out is not repeated in later repetitions")
    return p.parse_args()


@dataclass
class Setup:
    """What a run settles before its first measurement."""
    mode: dict        # what it measures (QUICK, FULL or compare_net.NET_MODE, with --benches)
    env_file: str
    paths: dict       # read from the env file (compare_configs.read_env_file)
    providers: list
    base_env: dict
    ucx: tuple        # (osc/ucx present, what ompi_info said)
    outdir: str
    load_before: str


def choose_mode(args):
    """What the run measures, and args.timeout's default for it."""
    mode = dict(compare_net.NET_MODE if args.net else QUICK if args.quick else FULL)
    if args.timeout is None:
        args.timeout = 120 if args.net else 30 if args.quick else 300
    if args.benches:
        mode["benches"] = args.benches.split(",")
    if args.lat_sizes:
        mode["lat_sizes"] = args.lat_sizes
    return mode


def choose_providers(args, paths):
    providers = args.providers.split(",") if args.providers else \
        (compare_net.providers(paths["major"]) if args.net else
         PROVIDERS_QUICK if args.quick else PROVIDERS_FULL)
    if args.net and "shm" in providers:
        sys.exit("compare.py --net: shm is node-local, it cannot connect two hosts")
    if args.ranks != 2 and not (args.net and 2 < args.ranks <= 8):
        sys.exit("compare.py: --ranks takes 3-8, with --net")
    return providers


def check_programs(args):
    for prog in ("osc_latency", "osc_bw", "osc_msgrate", "osc_atomic_rate", "ofi_rma_ref") + \
            (("osc_flush_visibility",) if args.net else ()):
        if not os.access(os.path.join(args.bin_dir, prog), os.X_OK):
            sys.exit(f"compare.py: {prog} not found in {args.bin_dir} (build it, or --bin-dir)")
    if not shutil.which("mpirun"):
        sys.exit("compare.py: mpirun not on PATH")


def prepare(args):
    """The mode, the env file, the providers, --net's checks, osc/ucx, the programs and the
    output directory, in that order: a run that cannot start stops before it writes."""
    mode = choose_mode(args)
    env_file = compare_configs.find_env_file(args.env_file)
    paths = compare_configs.read_env_file(env_file)
    providers = choose_providers(args, paths)
    if args.net:
        compare_net.preflight()  # before anything is written
    base_env = dict(os.environ)
    ucx = compare_configs.has_osc_ucx(compare_runs.run_env(
        compare_configs.Config("probe", "", "mpi", paths["BTL_OFI_OMPI_PKGLIBDIR"]),
        base_env, paths))
    check_programs(args)
    if args.drop_caches and (why := compare_runs.drop_caches_refused()):
        sys.exit(f"compare.py: {why}")

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or os.path.join(REPO, "results", f"{'net' if args.net else 'bench'}-{stamp}")
    os.makedirs(outdir, exist_ok=True)
    return Setup(mode, env_file, paths, providers, base_env, ucx, outdir, compare_net.loadavg())


def measure(args, setup):
    """Every configuration's runs (--net: in the host namespaces, made and removed here,
    then the flush visibility checks); (configs, net_notes, runs, start, visibility)."""
    mode, paths, base_env, outdir = setup.mode, setup.paths, setup.base_env, setup.outdir
    with (compare_net.namespaces(outdir, setup.env_file, nhosts=max(3, args.ranks)) if args.net
          else contextlib.nullcontext()) \
            as hosts:
        configs, net_notes = compare_configs.select_configs(args, setup.providers, paths,
                                                            setup.ucx, hosts)
        print(f"compare.py: {len(configs)} configurations x {len(mode['benches'])} benchmarks x "
              f"{args.reps} repetitions, interleaved; env file {setup.env_file}; "
              f"osc/ucx: {setup.ucx[1]}")
        for note in net_notes:
            print(f"compare.py: {note}")
        print(f"compare.py: writing to {outdir}", flush=True)
        runs, start = compare_runs.run_all(args, configs, mode, paths, base_env, hosts, outdir)
        vis = compare_net.visibility(
            configs, lambda c: os.path.join(c.component_path if c.kind == "hydra" else args.bin_dir,
                                            "osc_flush_visibility"),
            lambda c: compare_runs.run_env(c, base_env, paths), args.timeout, hosts, outdir,
            compare_runs.locked_run) if args.net else {}
    return configs, net_notes, runs, start, vis


def make_report(args, setup, configs, runs, start, net_notes, vis):
    """The report results.md and results.json are written from."""
    stats, statuses = compare_stats.aggregate(runs)
    providers, paths = setup.providers, setup.paths
    report = {
        "mode": "net" if args.net else "quick" if args.quick else "full",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": compare_report.machine_description(),
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "reps": args.reps, "osc_ucx": setup.ucx[1], "drop_caches": args.drop_caches,
        "providers": providers + sorted({c.provider for c in configs if c.provider} -
                                        set(providers)),
        "load": f"load average {setup.load_before} at the start, "
                f"{compare_net.loadavg()} at the end",
        "env_file": setup.env_file, "component_paths": paths,
        "configs": [c.__dict__ for c in configs],
        "seconds": round(time.monotonic() - start, 1),
        "statuses": statuses, "stats_by_key": stats, "by_round": compare_stats.by_round(runs),
        "machine_modes": compare_stats.machine_modes(runs),
    }
    report["targets"] = compare_stats.evaluate_targets(stats, providers, paths["major"])
    if args.net:
        report["net_notes"] = net_notes
        report["visibility"] = vis
        report["net_summary"] = compare_net.summary_markdown(
            stats, configs, runs, compare_report.fmt, compare_stats.ratio) + \
            compare_net.visibility_lines(vis)
        report["veth"] = compare_net.evidence_lines(runs)
        report["targets"] += compare_net.targets(stats, compare_stats.check, compare_stats.ratio,
                                                 vis)
    return report


def main():
    args = parse_args()
    setup = prepare(args)
    configs, net_notes, runs, start, vis = measure(args, setup)
    report = make_report(args, setup, configs, runs, start, net_notes, vis)
    md = compare_report.write_results(report, configs, runs, setup.outdir)
    print(md)
    print(f"compare.py: done in {report['seconds']:.0f}s; results in {setup.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
