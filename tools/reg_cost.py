#!/usr/bin/env python3
"""What a NIC's registration cost does to one-sided latency, with and without
btl-ofi's registration cache (issue 25 item 5; NOTES.txt section 3d).

ofi_strictmr in its verbs-like MR mode (FI_MR_LOCAL, as verbs and efa) over
shm charges every fi_mr_reg a fixed time plus a time per page
(FI_OFI_STRICTMR_REG_COST_US / _REG_COST_PAGE_NS), as registering with a NIC
does. Two configurations run interleaved (A B A B ...) for --reps repetitions,
so the machine's drift hits both alike:

  cache   btl-ofi's defaults (btl_<c>_rcache_size 64)
  nocache btl_<c>_rcache_size 0: every local registration is made and closed

Each run is osc_latency (put and get from user buffers, 8 B, 64 KiB, 1 MiB,
-W 1: one operation per flush) on a Win_create window and on a dynamic
window, plus Win_allocate (on one node osc/rdma reaches a peer's allocated
memory by load and store, so no BTL and no registration are involved: shown
to say so). Printed: a Markdown table of median latency per configuration
and the ratio nocache / cache, with the strict provider's registration count
and charged time per run, and btl-ofi's cache hits. It measures; it does not
judge (exit 0 when every run finished through btl-ofi).

    .venv/bin/python tools/reg_cost.py [--reps 3] [--cost-us 30] [--page-ns 150]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python_tests"))
import launcher  # noqa: E402
import matrix  # noqa: E402

CONFIGS = {"cache": {}, "nocache": {"rcache_size": "0"}}
FLAVORS = ("create", "dynamic", "allocate")
SIZES = "8,64K,1M"


def one_run(flavor, ours, args, workdir):
    env = launcher.mpi_env()
    report = Path(workdir) / f"strictmr-{flavor}-{len(os.listdir(workdir))}.jsonl"
    env.update({"FI_PROVIDER_PATH": str(matrix.strict_provider_dir()),
                "FI_OFI_STRICTMR_MR_MODE": ",".join(matrix.STRICT_SETS["verbs-like"]),
                "FI_OFI_STRICTMR_KEY_SIZE": "4",
                "FI_OFI_STRICTMR_REG_COST_US": str(args.cost_us),
                "FI_OFI_STRICTMR_REG_COST_PAGE_NS": str(args.page_ns),
                "FI_OFI_STRICTMR_REPORT": str(report)})
    prog = Path(env["BTL_OFI_LIBEXECDIR"]) / "osc_latency"
    program_args = ["-o", "put,get", "-S", SIZES, "-i", str(args.iters), "-W", "1", "-j",
                    "-w", flavor]
    argv = launcher.mpirun_argv(2, "shm;ofi_strictmr", program=prog, program_args=program_args,
                                native=True, verbose=False, ours=ours,
                                forward=sorted(k for k in env if k.startswith("FI_")))
    run = launcher.run_argv(argv, 600, env, workdir)
    rows = [r for r in (json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{"))
            if "op" in r]
    charged = {"reg_charged": 0, "reg_charged_us": 0}
    if report.exists():
        for line in report.read_text().splitlines():
            events = json.loads(line).get("events", {})
            for k in charged:
                charged[k] += events.get(k, 0)
    return run, rows, charged


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--cost-us", type=int, default=30)
    ap.add_argument("--page-ns", type=int, default=150)
    args = ap.parse_args()
    lat = {}      # (flavor, op, size, config) -> [us]
    carried = {}  # (flavor, config) -> set of carried_by values
    regs = {}     # (flavor, config) -> [charged registrations per run]
    with tempfile.TemporaryDirectory(prefix="reg-cost-") as workdir:
        for rep in range(args.reps):
            for flavor in FLAVORS:
                for name, ours in CONFIGS.items():
                    run, rows, charged = one_run(flavor, ours, args, workdir)
                    if run.returncode not in (0, 2) or not rows:
                        print(f"{flavor} {name}: exit {run.returncode}\n{run.stderr[-1500:]}",
                              file=sys.stderr)
                        return 1
                    regs.setdefault((flavor, name), []).append(charged["reg_charged"])
                    for r in rows:
                        lat.setdefault((flavor, r["op"], r["size"], name), []).append(r["lat_us"])
                        carried.setdefault((flavor, name), set()).add(r.get("carried_by"))
            print(f"repetition {rep + 1} of {args.reps} done", file=sys.stderr)
    print(f"Registration cost {args.cost_us} us + {args.page_ns} ns per 4 KiB page "
          f"(ofi_strictmr verbs-like over shm), osc_latency -W 1, {args.iters} iterations, "
          f"median of {args.reps} interleaved repetitions.\n")
    print("| window | op | size | cache (us) | nocache (us) | nocache / cache | "
          "registrations per run, cache / nocache | carried by |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for (flavor, op, size, name) in sorted(k for k in lat if k[3] == "cache"):
        on = statistics.median(lat[(flavor, op, size, "cache")])
        off = statistics.median(lat.get((flavor, op, size, "nocache"), [float("nan")]))
        regs_on = statistics.median(regs[(flavor, "cache")])
        regs_off = statistics.median(regs[(flavor, "nocache")])
        via = ",".join(sorted(str(v) for v in carried[(flavor, "cache")]))
        print(f"| {flavor} | {op} | {size} | {on:.2f} | {off:.2f} | {off / on:.2f} | "
              f"{regs_on:.0f} / {regs_off:.0f} | {via} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
