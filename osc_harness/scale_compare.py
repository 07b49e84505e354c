#!/usr/bin/env python3
"""osc_scale at several rank counts, btl-ofi against osc/rdma over vader, interleaved.

Each repetition runs every rank count with every configuration in turn, so a
slow spell of the machine hits all of them alike; the table shows the median
over repetitions of each phase (ms, slowest rank, mean over rounds) and the
ratio ours / vader. Only ratios are meant to be compared (no absolute target).

  scale_compare.py [--np 2,4,8,16] [--reps 3] [--rounds 20] [--tcp]
                   [--before DIR]   # also a second btl-ofi build's component dir
The last rows of each rank count: the peak resident memory of the largest rank
(getrusage) and btl-ofi's endpoints per rank (MPI_T "peers"; 0 without btl-ofi).
--tcp adds Open MPI's one-sided path over btl/tcp (osc/pt2pt on 4.1, osc/rdma on 5.0).
Needs BTL_OFI_LIBEXECDIR, BTL_OFI_OMPI_PKGLIBDIR and OMPI_MCA_mca_base_component_path
from the env file (btl-ofi-env.sh); mpirun runs under flock /tmp/btl-ofi-mpi.lock.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

OURS = ["--mca", "btl", "self,vader,ofirma", "--mca", "osc", "rdma",
        "--mca", "btl_ofirma_provider_include", "shm"]
VADER = ["--mca", "btl", "self,vader", "--mca", "osc", "rdma"]
# Open MPI's one-sided path over btl/tcp: osc/pt2pt on 4.1 (osc/rdma needs atomics btl/tcp
# lacks); 5.0 has no osc/pt2pt, and its osc/rdma serves btl/tcp with active messages.
TCP_41 = ["--mca", "btl", "self,tcp", "--mca", "osc", "pt2pt"]
TCP_50 = ["--mca", "btl", "self,tcp", "--mca", "osc", "rdma"]
PHASES = ["MPI_Init", "Win_create first", "Win_create later", "lock_all", "put",
          "unlock_all", "Win_free", "round", "loop"]


def run_one(np_, mca, rounds, component_path=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if component_path:
        env["OMPI_MCA_mca_base_component_path"] = component_path
    exe = os.path.join(env["BTL_OFI_LIBEXECDIR"], "osc_scale")
    cmd = ["flock", "/tmp/btl-ofi-mpi.lock", "mpirun", "-np", str(np_), "--oversubscribe",
           *mca, exe, "-j", "-r", str(rounds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True)
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if "phase" in rec:
                rows[rec["phase"]] = rec
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", default="2,4,8,16")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--before", help="component dir of a second btl-ofi build ('before')")
    ap.add_argument("--tcp", action="store_true",
                    help="also Open MPI's one-sided path over btl/tcp")
    args = ap.parse_args()
    nps = [int(x) for x in args.np.split(",")]
    node = os.environ.get("BTL_OFI_NODE_BTL", "vader")
    major = int(os.environ.get("BTL_OFI_OMPI_VERSION", "4").split(".")[0])
    ours = [a.replace("vader", node) for a in OURS]
    configs = [("ours", ours, None), ("vader", [a.replace("vader", node) for a in VADER], None)]
    if args.tcp:
        configs.append(("tcp", TCP_50 if major >= 5 else TCP_41, None))
    if args.before:
        configs.insert(1, ("before", ours,
                           args.before + ":" + os.environ["BTL_OFI_OMPI_PKGLIBDIR"]))
    res = {}  # (np, config, phase) -> [ms]
    carried = {}
    for _ in range(args.reps):
        for np_ in nps:
            for name, mca, path in configs:
                rows = run_one(np_, mca, args.rounds, path)
                for ph in PHASES:
                    res.setdefault((np_, name, ph), []).append(rows[ph]["ms_mean"])
                mem = rows.get("memory", {})
                res.setdefault((np_, name, "peak RSS MiB"), []).append(mem.get("rss_max_MiB", 0))
                res.setdefault((np_, name, "btl-ofi endpoints"), []).append(
                    mem.get("peers_max", 0))
                if name in ("ours", "before"):
                    carried.setdefault((np_, name), []).append(rows["round"].get("put_count", 0))
    names = [c[0] for c in configs]
    head = f"{'ranks':>5} {'phase':>17} " + " ".join(f"{n + ' ms':>11}" for n in names)
    head += " " + " ".join(f"{n + '/vader':>13}" for n in names if n != "vader")
    print(f"# osc_scale, {args.reps} interleaved repetitions, {args.rounds} rounds; "
          "median ms (slowest rank, mean over rounds)")
    print(head)
    for np_ in nps:
        for ph in PHASES + ["peak RSS MiB", "btl-ofi endpoints"]:
            med = {n: statistics.median(res[(np_, n, ph)]) for n in names}
            line = f"{np_:>5} {ph:>17} " + " ".join(f"{med[n]:>11.3f}" for n in names)
            line += " " + " ".join(f"{med[n] / med['vader']:>13.2f}" if med["vader"] > 0
                                   else f"{'-':>13}" for n in names if n != "vader")
            print(line)
        print(f"{np_:>5} {'btl-ofi puts/round':>17} " +
              " ".join(f"{min(carried[(np_, n)]):>11.1f}" for n in names
                       if n in ("ours", "before")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
