#!/usr/bin/env python3
"""Peers on the same node over shm beside the network in one btl-ofi module
(btl_<c>_local_provider, NOTES.txt 2c): latency, side by side in one run.

Host namespaces from scripts/check-multihost.sh (made here, always removed);
osc_latency (lock_all + flush per operation, Win_create) between ranks 0 and
1, with ranks 2 and 3 idle (-y) where the job has four. Configurations, run
in turn `--rounds` times (interleaved, so the machine's noise falls on all of
them alike), medians reported:

  1-node shm        2 ranks on one host, provider shm: the reference
  on-node rails     4 ranks, 2 per host, ranks 0 and 1 on one host, provider
                    tcp;ofi_rxm: btl-ofi carries the pair over shm
  on-node rails, tcp thread   the same with btl_tcp_progress_thread=1: Open MPI's
                    btl/tcp (two-sided, to the other host) no longer polls its
                    sockets in every progress pass of the pair
  on-node net       the same with local_provider=none: the pair over tcp
  off-node rails    4 ranks, 2 per host, ranks 0 and 1 on different hosts
                    (mapped by node): tcp, with the shm domain open beside it
  off-node net      the same with local_provider=none

Targets printed (the issue's): on-node rails within 1.1x of 1-node shm;
off-node rails within 1.1x of off-node net (unchanged). Every run must show
btl-ofi's counters moving (osc_latency -r) and, in the rails runs, the
verbose line "peers on this node over shm" on every rank.

  python3 osc_harness/node_local_compare.py [--rounds N] [--iters N] [--out DIR]
(osc_latency from the repository root, where the build puts it; BTL_OFI_BIN_DIR
to take it from elsewhere)
Exit: 0 ran (targets are reported, not enforced: the machine is noisy), 1 a
run failed, 77 namespaces cannot be made here.
"""

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (parse_records, locked_run)
import compare_net  # noqa: E402  (namespaces)
import launcher  # noqa: E402  (python_tests/launcher.py, put on sys.path by compare_net)

BIN_DIR = os.environ.get("BTL_OFI_BIN_DIR", os.path.dirname(HERE))  # the build's osc_latency
OPS = "put,get,fop,cas"
SIZES = "8,4096,65536"
RAILS_LINE = "peers on this node over shm"
CONFIGS = [
    # name, ranks, hosts used (slots each), provider, our params, MPI params
    ("1-node shm", 2, 1, "shm", {}, {}),
    ("on-node rails", 4, 2, "tcp;ofi_rxm", {}, {}),
    ("on-node rails, tcp thread", 4, 2, "tcp;ofi_rxm", {}, {"btl_tcp_progress_thread": "1"}),
    ("on-node net", 4, 2, "tcp;ofi_rxm", {"local_provider": "none"}, {}),
    ("off-node rails", 4, 2, "tcp;ofi_rxm", {}, {"rmaps_base_mapping_policy": "node"}),
    ("off-node net", 4, 2, "tcp;ofi_rxm", {"local_provider": "none"},
     {"rmaps_base_mapping_policy": "node"}),
]
TARGETS = [("on-node rails", "1-node shm"), ("off-node rails", "off-node net")]


def hosts_for(hosts, nhosts, outdir):
    path = os.path.join(outdir, f"hostfile-{nhosts}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(f"{ip} slots=2\n" for ip in hosts.ips[:nhosts])
    return dataclasses.replace(hosts, hostfile=path)


def one_run(cfg, hosts, outdir, iters):
    name, nranks, nhosts, provider, ours, mca = cfg
    btl = f"self,{launcher.node_btl()},tcp,{launcher.component_name()}"
    args = ["-j", "-r", "-o", OPS, "-S", SIZES, "-i", str(iters)] + (["-y"] if nranks > 2 else [])
    argv = launcher.mpirun_argv(nranks, provider, mca, "rdma", btl,
                                program=os.path.join(BIN_DIR, "osc_latency"),
                                program_args=args, native=True,
                                hosts=hosts_for(hosts, nhosts, outdir), ours=ours)
    env = launcher.mpi_env()
    env.update(hosts.env())
    rc, out, err, _ = compare.locked_run(argv, env, 300)
    problems = []
    if rc != 0:
        problems.append(f"exit {rc}: {(err.strip().splitlines() or ['?'])[-1]}")
    said = (out + err).count(RAILS_LINE)
    if ("rails" in name) != (said > 0) or ("rails" in name and said != nranks):
        problems.append(f"'{RAILS_LINE}' on {said} of {nranks} ranks")
    _, rows = compare.parse_records(out)
    return {(r["op"], int(r["size"])): float(r["lat_us"]) for r in rows if "lat_us" in r}, \
        problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--out", default=None)
    opts = ap.parse_args()
    outdir = opts.out or tempfile.mkdtemp(prefix="node-local-compare-")
    os.makedirs(outdir, exist_ok=True)
    samples, failed = {}, []
    with compare_net.namespaces(outdir, launcher.env_file_path()) as hosts:
        for rnd in range(opts.rounds):
            for cfg in CONFIGS:
                lat, problems = one_run(cfg, hosts, outdir, opts.iters)
                print(f"round {rnd + 1} {cfg[0]}: {len(lat)} rows"
                      f"{'; ' + '; '.join(problems) if problems else ''}", flush=True)
                failed += [f"{cfg[0]}: {p}" for p in problems]
                for key, value in lat.items():
                    samples.setdefault(cfg[0], {}).setdefault(key, []).append(value)
    med = {c: {k: statistics.median(v) for k, v in rows.items()} for c, rows in samples.items()}
    names = [c[0] for c in CONFIGS]
    keys = sorted({k for rows in med.values() for k in rows},
                  key=lambda k: (OPS.split(",").index(k[0]), k[1]))
    lines = ["| op | bytes | " + " | ".join(f"{n} (us)" for n in names) +
             " | " + " | ".join(f"{a} / {b}" for a, b in TARGETS) + " |",
             "|---|---:|" + "---:|" * (len(names) + len(TARGETS))]
    for key in keys:
        cells = [f"{med.get(n, {}).get(key, float('nan')):.2f}" for n in names]
        ratios = []
        for a, b in TARGETS:
            x, y = med.get(a, {}).get(key), med.get(b, {}).get(key)
            ratios.append(f"{x / y:.2f}x" if x and y else "-")
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " | " +
                     " | ".join(ratios) + " |")
    table = "\n".join(lines)
    print(f"\nosc_latency medians of {opts.rounds} interleaved rounds, {opts.iters} iterations:\n")
    print(table)
    with open(os.path.join(outdir, "node_local.json"), "w", encoding="utf-8") as fh:
        json.dump({c: {f"{k[0]}/{k[1]}": v for k, v in rows.items()}
                   for c, rows in samples.items()}, fh, indent=1)
    with open(os.path.join(outdir, "node_local.md"), "w", encoding="utf-8") as fh:
        fh.write(table + "\n")
    for a, b in TARGETS:
        worst = max((med[a][k] / med[b][k] for k in keys if k in med.get(a, {})
                     and k in med.get(b, {})), default=float("nan"))
        print(f"target {a} within 1.1x of {b}: worst {worst:.2f}x "
              f"{'met' if worst <= 1.1 else 'NOT met'}")
    if failed:
        print("failed runs:\n  " + "\n  ".join(failed))
        return 1
    print(f"results: {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
