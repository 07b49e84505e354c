#!/usr/bin/env python3
"""Where one 8-byte operation's time goes across hosts: perf profiles of ours and its peers.

One `osc_latency -o OP -S SIZE` run per configuration (compare.py --net's
configurations: ours, osc/pt2pt, MPICH, Intel MPI, ...; each MPI's own build
and launcher) across two network namespaces made by scripts/check-multihost.sh
and removed again. Every rank runs under `perf record -g`; per configuration
and rank the tool prints the time per operation and the share of samples in
the kernel, libfabric, the MPI library and its components, btl-ofi, and the
rest, then the top symbols. Needs root and perf.

    .venv/bin/python tools/net_profile.py [--only ours,impi] [--providers 'tcp;ofi_rxm']
                                          [--op cas] [--size 8] [--iters 20000] [--out DIR]

The perf data stays in DIR (perf report -i DIR/<config>.rank<N>.data). It
measures; it does not judge (exit 0 when the runs ran).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "osc_harness"))
sys.path.insert(0, os.path.join(REPO, "python_tests"))

import compare_configs  # noqa: E402
import compare_net  # noqa: E402
import compare_runs  # noqa: E402

# Which part of the stack a DSO belongs to, first match wins.
PARTS = [("btl-ofi", re.compile(r"mca_btl_ofirma|mca_btl_ofi\b")),
         ("libfabric", re.compile(r"libfabric|-fi\.so")),
         ("kernel", re.compile(r"\[kernel|\[vdso")),
         ("MPI", re.compile(r"libmpi|libopen-|libpmix|mca_|libucp|libuct|libucs|libhwloc|libevent")),
         ("libc", re.compile(r"libc\.so|libc-|ld-linux"))]

WRAPPER = """#!/bin/sh
# one rank under perf record, its file named after the rank
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-x}}}
exec perf record -q -F %(freq)d -g -o "%(out)s/$NAME.rank$r.data" -- "$@"
"""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="ours,pt2pt,mpich,impi",
                   help="configuration names, as compare.py --only (default ours,pt2pt,mpich,impi)")
    p.add_argument("--providers", default="tcp;ofi_rxm", help="ours' providers (default tcp;ofi_rxm)")
    p.add_argument("--op", default="cas", help="put, get, acc, fop or cas (default cas)")
    p.add_argument("--size", default="8", help="bytes (default 8)")
    p.add_argument("--iters", default="20000", help="timed operations (default 20000)")
    p.add_argument("--freq", type=int, default=2999, help="perf sampling frequency (default 2999)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per run (default 300)")
    p.add_argument("--out", default=os.path.join(REPO, "results", "net-profile"),
                   help="where the perf data and the report go")
    return p.parse_args()


def dso_shares(data):
    """{part: percent of samples} of one perf.data, by DSO."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "-q",
                          "--sort", "dso", "-g", "none"], capture_output=True, text=True)
    shares = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.+?)\s*$", line)
        if not m:
            continue
        part = next((name for name, pat in PARTS if pat.search(m[2])), "other")
        shares[part] = shares.get(part, 0.0) + float(m[1])
    return shares


def top_symbols(data, n=8):
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "-q",
                          "--sort", "dso,sym", "-g", "none"], capture_output=True, text=True)
    rows = [ln.strip() for ln in out.stdout.splitlines() if re.match(r"\s*[\d.]+%", ln)]
    return [re.sub(r"\s+", " ", r) for r in rows[:n]]


def latency(stdout, op):
    for line in stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == op:
            return f[3]
    return "?"


def main():
    args = parse_args()
    compare_net.preflight()
    if not subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).stdout:
        sys.exit("net_profile.py: perf not found (apt install linux-perf)")
    os.makedirs(args.out, exist_ok=True)
    env_file = compare_configs.find_env_file(None)
    paths = compare_configs.read_env_file(env_file)
    base_env = dict(os.environ)
    ucx = compare_configs.has_osc_ucx(compare_runs.run_env(
        compare_configs.Config("probe", "", "mpi", paths["BTL_OFI_OMPI_PKGLIBDIR"]), base_env,
        paths))
    wrapper = os.path.join(args.out, "perf-rank.sh")
    with open(wrapper, "w") as f:
        f.write(WRAPPER % {"freq": args.freq, "out": os.path.abspath(args.out)})
    os.chmod(wrapper, 0o755)
    prog_args = ["-o", args.op, "-S", args.size, "-i", args.iters]
    report = [f"# net_profile.py: {args.op} {args.size} B + MPI_Win_flush, {args.iters} operations, "
              f"perf record -F {args.freq} -g on each rank; shares of each rank's samples", "",
              "| configuration | rank | us/op | kernel | libfabric | MPI | btl-ofi | libc | other |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tops = []
    with compare_net.namespaces(args.out, env_file) as hosts:
        sel = types.SimpleNamespace(also=[], ours_variant=[], only=args.only)
        configs, notes = compare_configs.select_configs(sel, args.providers.split(","), paths,
                                                        ucx, hosts)
        for note in notes:
            print(f"net_profile.py: {note}")
        for cfg in [c for c in configs if c.kind != "raw"]:
            exe = os.path.join(cfg.component_path if cfg.kind == "hydra" else REPO, "osc_latency")
            name = re.sub(r"[^\w.-]+", "_", cfg.label)
            env = dict(compare_runs.run_env(cfg, base_env, paths), NAME=name)
            cmd, env = compare_net.command(cfg, wrapper, [exe] + prog_args, env, hosts, args.out)
            if cfg.kind == "mpi":
                cmd = cmd[:-len(prog_args) - 2] + ["-x", "NAME"] + cmd[-len(prog_args) - 2:]
            print(f"net_profile.py: {cfg.label}: {shlex.join(cmd)}", flush=True)
            rc, out, err, _ = compare_runs.locked_run(cmd, env, args.timeout)
            if rc != 0:
                report.append(f"| {cfg.label} | - | failed (exit {rc}) | | | | | | |")
                print(err[-2000:])
                continue
            for rank in (0, 1):
                data = os.path.join(args.out, f"{name}.rank{rank}.data")
                if not os.path.isfile(data):
                    report.append(f"| {cfg.label} | {rank} | no perf data | | | | | | |")
                    continue
                s = dso_shares(data)
                report.append(f"| {cfg.label} | {rank} | {latency(out, args.op)} | " + " | ".join(
                    f"{s.get(p, 0.0):.0f} %" for p in
                    ("kernel", "libfabric", "MPI", "btl-ofi", "libc", "other")) + " |")
                tops.append(f"{cfg.label}, rank {rank}:\n" +
                            "\n".join(f"    {t}" for t in top_symbols(data)))
    text = "\n".join(report + ["", "Top symbols (self time):", ""] + tops) + "\n"
    with open(os.path.join(args.out, "profile.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
