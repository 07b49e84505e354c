#!/usr/bin/env python3
"""Several domains in one btl-ofi module, measured side by side in one run
(NOTES.txt 2c, 2d). Host namespaces from scripts/check-multihost.sh (made
here, always removed); every configuration runs in turn `--rounds` times
(interleaved, so the machine's noise falls on all of them alike); medians, the
least of the rounds, and targets judged by both and by the median of each round's
own ratio (this machine runs in a fast and a slow mode 2-3x apart, for minutes at a
time: a round's configurations mostly share one, so the ratio within a round is the
steadiest measure; rounds whose two values are not in one mode are left out), and
that median with its 90% bootstrap interval: a target is met where every row's
interval lies within the bound, NOT met where one lies wholly beyond it, undecided
where the noise cannot tell (rows with fewer than half the rounds, or than 8, in one
mode are undecided too). A last table gives those paired medians and intervals row by
row, a column for each pair a target compares.

--mode node-local (default): peers on the same node over shm beside the
network (btl_<c>_local_provider). osc_latency between ranks 0 and 1
(lock_all + flush per operation, Win_create), ranks 2 and 3 idle (-y) where
the job has four:
  1-node shm        2 ranks on one host, provider shm: the reference
  1-node shm, 4 ranks   4 ranks on one host (ranks 2 and 3 idle, -y), provider shm: the
                    job of the rows below on one node, its bystanders included
  1-node shm, 4 ranks, tcp thread   the same with btl_tcp_progress_thread=1: the rails
                    rows' Open MPI settings on one node (the thread costs a one-node job
                    too, though btl/tcp has no peer there)
  2-host shm        the job of the rails rows below (4 ranks, 2 per host, btl/tcp's thread)
                    over provider shm alone: no network domain to read at all. shm reaches
                    every rank only because these host namespaces share one machine's
                    memory and processes; the row is what the job's shape costs here (four
                    processes and their daemons on two cores), the best the rails can do
  on-node rails     4 ranks, 2 per host, ranks 0 and 1 on one host, provider
                    tcp;ofi_rxm: btl-ofi carries the pair over shm
  on-node rails, tcp thread   the same with btl_tcp_progress_thread=1: Open MPI's
                    btl/tcp (two-sided, to the other host) no longer polls its
                    sockets in every progress pass of the pair
  on-node rails, tcp thread, busy poll 200us   the same with local_busy_poll_us=200: the
                    network CQ read once in 200 us (not 20) while the shm domain is at work
  on-node rails, tcp thread, wake   the same with wake=1: the idle tcp CQ left to an
                    io_uring poll of its descriptor (btl_ofi_wake.h), neither it nor the
                    clock read meanwhile (the default with libfabric 2 and later)
  on-node rails, tcp thread, pace   the same with wake=0: the tcp CQ read at the pace
                    alone (the default with libfabric 1.x)
  on-node rails, tcp thread, every pass   the same with idle_poll_ratio=0: btl-ofi's
                    network CQ read at every pass (as before the pace, NOTES.txt 2c)
  on-node net       the same with local_provider=none: the pair over tcp
  off-node rails    4 ranks, 2 per host, ranks 0 and 1 on different hosts
                    (mapped by node): tcp, with the shm domain open beside it
  off-node rails, wake   the same with wake=1; off-node rails, pace: with wake=0
  off-node net      the same with local_provider=none
Each also runs osc_latency -g 200 (put, get, fop of 8 bytes, 200 us untimed before each:
the target has gone quiet, so a network CQ read at a pace (btl_<c>_idle_poll_ratio,
NOTES.txt 2c) is where a pause would show): rows lat_us_after_200us.
Targets printed (the issue's): on-node rails (also with the tcp thread) within 1.1x of
1-node shm; off-node rails within 1.1x of off-node net (unchanged), steady and sporadic;
and on-node rails with the tcp thread within 1.1x of 1-node shm with the same settings
(4 ranks, the tcp thread) and of 2-host shm (the same job's shape); the same for
on-node rails with wake and with the pace; off-node rails with wake within 1.1x of
off-node rails with the pace.

--mode stripes: large puts and gets over two NICs (btl_<c>_stripe_min). The
hosts get two veth interfaces each on subnets of their own, each shaped to
--rate (check-multihost.sh --nics 2 --rate); one rank per host, tcp;ofi_rxm,
btl_<c>_domain_include=mheth*. osc_bw (put and get, 16 per flush, at most
32 MiB per size) and osc_latency (8 bytes):
  1 NIC             btl_<c>_stripe_min=0
  2 NICs, min M     striping from M bytes (M = 64 KiB, 256 KiB: the default, 1 MiB)
Targets printed: bandwidth at 1-4 MiB with striping at least 1.5x one NIC's;
8-byte latency within 1.1x of one NIC's.

Every run of btl-ofi must show its counters moving (-r) and, where the
configuration says so, the verbose line of its domains on every rank; every
run must have put ranks 0 and 1 where its name says (the programs' meta
record: pair_one_node).
--others (--mode stripes) adds MPICH ch4:ofi (compare_net's venv, bash
scripts/install-mpis.sh) with its multi-NIC striping off and on
(MPIR_CVAR_CH4_OFI_ENABLE_MULTI_NIC_STRIPING=1, MAX_NICS=2, threshold 64 KiB)
and, on Open MPI 4.1, osc/pt2pt over btl/tcp on both subnets (Open MPI's own
multi-NIC path: osc/rdma does not take btl/tcp); a table shows the bytes each
NIC sent during the bandwidth runs of each configuration.

  python3 osc_harness/domains_compare.py [--mode node-local|stripes] [--rounds N]
                                         [--iters N] [--rate RATE] [--out DIR] [--others]
                                         [--config NAME]... [--also NAME=ENVFILE]...
--also runs every btl-ofi configuration again with another install (a build before a change:
its env file), interleaved, and judges ours within 1.03x of it row by row.
(the programs from the repository root, where the build puts them;
BTL_OFI_BIN_DIR to take them from elsewhere)
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
import compare_configs  # noqa: E402  (Config)
import compare_net  # noqa: E402  (namespaces)
import compare_runs  # noqa: E402  (parse_records, locked_run)
import launcher  # noqa: E402  (python_tests/launcher.py, put on sys.path by compare_net)

BIN_DIR = os.environ.get("BTL_OFI_BIN_DIR", os.path.dirname(HERE))  # the build's programs
RAILS_LINE = "peers on this node over shm"
STRIPES_LINE = "striping puts and gets"
NET = "tcp;ofi_rxm"


GAP_US = 200  # osc_latency -g of the sporadic rows (node-local)


@dataclasses.dataclass
class Config:
    name: str
    nranks: int
    nhosts: int        # hosts used, ranks spread over them by slot
    provider: str
    ours: dict
    mca: dict = dataclasses.field(default_factory=dict)
    line: str = ""     # the verbose line every rank must print ("" none may)
    unlike: str = ""   # a verbose line no rank may print
    btl: str = ""      # Open MPI's btl list ("": self, the node BTL, tcp and ours)
    map_by: str = ""   # mpirun --map-by ("": by slot, filling each host in turn)
    osc: str = "rdma"
    mpich: dict = None  # MPICH (compare_net's venv, hydra) with these variables
    env_file: str = ""  # btl-ofi as another install's env file names it (--also)


NODE_LOCAL = {
    "configs": [
        Config("1-node shm", 2, 1, "shm", {}),
        Config("1-node shm, 4 ranks", 4, 1, "shm", {}),
        Config("1-node shm, 4 ranks, tcp thread", 4, 1, "shm", {},
               {"btl_tcp_progress_thread": "1"}),
        Config("2-host shm", 4, 2, "shm", {}, {"btl_tcp_progress_thread": "1"},
               unlike=RAILS_LINE),
        Config("on-node rails", 4, 2, NET, {}, line=RAILS_LINE),
        Config("on-node rails, tcp thread", 4, 2, NET, {}, {"btl_tcp_progress_thread": "1"},
               line=RAILS_LINE),
        Config("on-node rails, tcp thread, busy poll 200us", 4, 2, NET,
               {"local_busy_poll_us": 200}, {"btl_tcp_progress_thread": "1"}, line=RAILS_LINE),
        Config("on-node rails, tcp thread, wake", 4, 2, NET, {"wake": 1},
               {"btl_tcp_progress_thread": "1"}, line=RAILS_LINE),
        Config("on-node rails, tcp thread, pace", 4, 2, NET, {"wake": 0},
               {"btl_tcp_progress_thread": "1"}, line=RAILS_LINE),
        Config("on-node rails, tcp thread, every pass", 4, 2, NET, {"idle_poll_ratio": 0},
               {"btl_tcp_progress_thread": "1"}, line=RAILS_LINE),
        Config("on-node net", 4, 2, NET, {"local_provider": "none"}, unlike=RAILS_LINE),
        Config("off-node rails", 4, 2, NET, {}, line=RAILS_LINE, map_by="node"),
        Config("off-node rails, wake", 4, 2, NET, {"wake": 1}, line=RAILS_LINE, map_by="node"),
        Config("off-node rails, pace", 4, 2, NET, {"wake": 0}, line=RAILS_LINE, map_by="node"),
        Config("off-node net", 4, 2, NET, {"local_provider": "none"}, unlike=RAILS_LINE,
               map_by="node"),
    ],
    # (program, metric, ops, sizes, more arguments[, the metric's name in the table])
    "benches": [("osc_latency", "lat_us", "put,get,fop,cas", "8,4096,65536", []),
                # sporadic: 200 us untimed before each operation, so the target has gone
                # quiet (a network CQ it reads at a pace, NOTES.txt 2c) when it comes
                ("osc_latency", "lat_us", "put,get,fop", "8", ["-g", str(GAP_US)],
                 f"lat_us_after_{GAP_US}us")],
    # (a, b, metric, sizes (None: all), highest ratio a/b allowed, lowest)
    "targets": [("on-node rails", "1-node shm", "lat_us", None, 1.1, None),
                ("on-node rails, tcp thread", "1-node shm", "lat_us", None, 1.1, None),
                ("on-node rails, tcp thread", "1-node shm, 4 ranks", "lat_us", None, 1.1, None),
                ("on-node rails, tcp thread", "1-node shm, 4 ranks, tcp thread", "lat_us", None,
                 1.1, None),
                ("on-node rails, tcp thread", "2-host shm", "lat_us", None, 1.1, None),
                ("on-node rails, tcp thread, busy poll 200us", "1-node shm", "lat_us", None, 1.1,
                 None),
                ("on-node rails, tcp thread, busy poll 200us", "2-host shm", "lat_us", None, 1.1,
                 None),
                ("on-node rails, tcp thread, wake", "1-node shm, 4 ranks, tcp thread", "lat_us",
                 None, 1.1, None),
                ("off-node rails", "off-node net", "lat_us", None, 1.1, None),
                ("off-node rails, wake", "off-node rails, pace", "lat_us", None, 1.1, None),
                ("off-node rails, wake", "off-node rails, pace", f"lat_us_after_{GAP_US}us", None,
                 1.1, None),
                ("on-node rails, tcp thread, pace", "1-node shm, 4 ranks, tcp thread", "lat_us",
                 None, 1.1, None),
                ("off-node rails", "off-node net", f"lat_us_after_{GAP_US}us", None, 1.1,
                 None)],
    "setup": [],
}

STRIPED = {"domain_include": "mheth*"}
STRIPES = {
    "configs": [
        Config("1 NIC", 2, 2, NET, {**STRIPED, "stripe_min": 0}, unlike=STRIPES_LINE),
        Config("2 NICs, min 64K", 2, 2, NET, {**STRIPED, "stripe_min": 65536},
               line=STRIPES_LINE),
        Config("2 NICs, min 256K", 2, 2, NET, STRIPED, line=STRIPES_LINE),
        Config("2 NICs, min 1M", 2, 2, NET, {**STRIPED, "stripe_min": 1 << 20},
               line=STRIPES_LINE),
    ],
    # (program, metric, ops, sizes, more arguments): 16 per flush, at most 32 MiB a size
    "benches": [("osc_bw", "bw_MBps", "put,get", "65536,262144,1048576,4194304",
                 ["-W", "16", "-B", "32M"]),
                ("osc_latency", "lat_us", "put,get", "8", [])],
    "targets": [("2 NICs, min 256K", "1 NIC", "bw_MBps", (1 << 20, 4 << 20), None, 1.5),
                ("2 NICs, min 256K", "1 NIC", "lat_us", (8,), 1.1, None)],
    "setup": ["--nics", "2"],
}
# MPICH ch4:ofi with its multi-NIC striping off and on (threshold 64 KiB), and Open MPI's own
# two-NIC path, osc/pt2pt over btl/tcp on both subnets (btl/tcp spreads over every interface;
# osc/rdma does not take btl/tcp, which has no atomics; Open MPI 4.1 only, 5.0 has no
# osc/pt2pt): side by side with the configurations above.
MPICH_STRIPING = {"MPIR_CVAR_CH4_OFI_ENABLE_MULTI_NIC_STRIPING": "1",
                  "MPIR_CVAR_CH4_OFI_MAX_NICS": "2",
                  "MPIR_CVAR_CH4_OFI_MULTI_NIC_STRIPING_THRESHOLD": "65536"}
OTHERS = [
    Config("MPICH, striping off", 2, 2, NET, {}, mpich={}),
    Config("MPICH, striping on", 2, 2, NET, {}, mpich=MPICH_STRIPING),
]
STOCK_TCP = Config("stock osc/pt2pt, btl/tcp on both", 2, 2, "", {},
                   {"btl_tcp_if_include": "10.77.0.0/24,10.78.0.0/24"}, btl="self,tcp",
                   osc="pt2pt")


def with_build(mode, name, env_file, ap):
    """mode with each btl-ofi configuration run again by another build of it (its env file),
    and a target per configuration: ours within 1.03x of it on every row (latency: ours / it;
    bandwidth: it / ours)."""
    if not name or not env_file or not os.path.exists(env_file):
        ap.error(f"--also {name}={env_file}: want NAME=ENVFILE of an installed build")
    if launcher.load_env_file(env_file).get("BTL_OFI_COMPONENT") != launcher.component_name():
        ap.error(f"--also {name}: {env_file} is for another component name than ours")
    ours = [c for c in mode["configs"] if c.mpich is None and not c.btl]
    again = [dataclasses.replace(c, name=f"{c.name} [{name}]", env_file=env_file) for c in ours]
    targets = []
    for c in ours:
        for bench in mode["benches"]:
            label = bench[5] if len(bench) > 5 else bench[1]
            faster_is_less = bench[1] == "lat_us"
            a, b = (c.name, f"{c.name} [{name}]") if faster_is_less else \
                (f"{c.name} [{name}]", c.name)
            targets.append((a, b, label, None, 1.03, None))
    return dict(mode, configs=mode["configs"] + again, targets=mode["targets"] + targets)


def hosts_for(hosts, cfg, outdir):
    slots = (cfg.nranks + cfg.nhosts - 1) // cfg.nhosts
    path = os.path.join(outdir, f"hostfile-{cfg.nhosts}x{slots}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(f"{ip} slots={slots}\n" for ip in hosts.ips[:cfg.nhosts])
    return dataclasses.replace(hosts, hostfile=path)


def nic_bytes(hosts):
    """{iface: bytes it sent, summed over the host namespaces}."""
    return {name: sum(compare_net.tx_bytes(ns, name) for ns in hosts.namespaces)
            for name in hosts.ifaces}


def mpich_argv(cfg, prog, args, hosts, outdir):
    """MPICH's run of prog (its own build, compare_net's venv), or None if not installed."""
    fam = next((f for f in compare_net.families() if f.kind == "mpich" and not f.missing()),
               None)
    if fam is None:
        return None, None
    net = compare_configs.Config(cfg.name, cfg.provider, "hydra", note=fam.root,
                                 env=dict(fam.env(""), MPIR_CVAR_CH4_NETMOD="ofi",
                                          FI_PROVIDER=cfg.provider, **cfg.mpich))
    return compare_net.command(net, os.path.join(fam.bin_dir, prog), args,
                               dict(os.environ), hosts, outdir, cfg.nranks)


def one_run(cfg, bench, hosts, outdir, iters, drop_caches=False):
    """({(metric, op, size): value}, problems, {iface: bytes sent during the run})."""
    prog, metric, ops, sizes, more = bench[:5]
    label = bench[5] if len(bench) > 5 else metric
    btl = cfg.btl or f"self,{launcher.node_btl()},tcp,{launcher.component_name()}"
    ours = cfg.mpich is None and not cfg.btl  # btl-ofi's: its counters must move (-r)
    args = ["-j", *(["-r"] if ours else []), "-o", ops, "-S", sizes, "-i", str(iters), *more] + \
        (["-y"] if cfg.nranks > 2 else [])
    if cfg.mpich is not None:
        argv, env = mpich_argv(cfg, prog, args, hosts, outdir)
        if argv is None:
            return {}, ["MPICH not installed (bash scripts/install-mpis.sh)"], {}
    else:
        # a parameter the hosts' launch sets already (btl_tcp_if_include) takes the new value
        # in place: mpirun refuses one parameter given twice
        argv = launcher.mpirun_argv(cfg.nranks, cfg.provider or None, {}, cfg.osc, btl,
                                    program=os.path.join(BIN_DIR, prog), program_args=args,
                                    native=True, hosts=hosts_for(hosts, cfg, outdir),
                                    ours=cfg.ours)
        for name, value in cfg.mca.items():
            at = [i for i in range(len(argv) - 2) if argv[i] == "--mca" and argv[i + 1] == name]
            if at:
                argv[at[0] + 2] = str(value)
            else:
                at = argv.index("mpirun") + 1
                argv[at:at] = ["--mca", name, str(value)]
        if cfg.map_by:
            # an option of mpirun's own on Open MPI 4.1 (ORTE) and 5.0 (PRRTE) alike, where the
            # MCA parameter (rmaps_base_mapping_policy) is ORTE's alone
            at = argv.index("mpirun") + 1
            argv[at:at] = ["--map-by", cfg.map_by]
        env = launcher.mpi_env()
        if cfg.env_file:
            env.update(launcher.load_env_file(cfg.env_file))
        env.update(hosts.env())
    if drop_caches:
        compare_runs.drop_page_cache()
    before = nic_bytes(hosts)
    rc, out, err, _ = compare_runs.locked_run(argv, env, 300)
    after = nic_bytes(hosts)
    sent = {name: after[name] - before[name] for name in before}
    problems = []
    if rc != 0:
        problems.append(f"exit {rc}: {(err.strip().splitlines() or ['?'])[-1]}")
    if cfg.line and (out + err).count(cfg.line) != cfg.nranks:
        problems.append(f"'{cfg.line}' on {(out + err).count(cfg.line)} of {cfg.nranks} ranks")
    if cfg.unlike and cfg.unlike in out + err:
        problems.append(f"'{cfg.unlike}' printed")
    meta, rows = compare_runs.parse_records(out)
    # where the measured pair was (osc_latency's and osc_bw's meta record): on one host unless
    # the configuration spreads ranks over hosts by node or has one rank per host. This
    # build's programs must say it; MPICH's (install-mpis.sh) may predate it.
    one_node = not (cfg.map_by == "node" or (cfg.nranks == 2 and cfg.nhosts == 2))
    said = meta.get("pair_one_node")
    if meta and (said is not None or cfg.mpich is None) and said is not one_node:
        problems.append(f"ranks 0 and 1 on {'one node' if said else 'two nodes'}, expected "
                        f"{'one node' if one_node else 'two nodes'}")
    return {(label, r["op"], int(r["size"])): float(r[metric]) for r in rows if metric in r}, \
        problems, sent


def table(mode, med, names):
    keys = sorted({k for rows in med.values() for k in rows})
    lines = ["| metric | op | bytes | " + " | ".join(names) + " |",
             "|---|---|---:|" + "---:|" * len(names)]
    for key in keys:
        cells = [f"{med.get(n, {}).get(key, float('nan')):.2f}" for n in names]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratios_of(stat):
    """(a, b) -> {row: a's value / b's value} of one statistic of the rounds."""
    return lambda a, b: {k: v / stat[b][k] for k, v in stat.get(a, {}).items()
                         if stat.get(b, {}).get(k)}


# the paired statistics (shared with compare.py)
from paired import (BOOT_LEVEL, BOOT_MIN_ROUNDS, BOOT_RESAMPLES, BOOT_SEED,  # noqa: E402,F401
                    SAME_MODE, median_interval, pair_intervals, paired_ratios,
                    same_mode_ratios)


def in_target(key, metric, sizes):
    """Whether a row (metric, op, size) is one a target of that metric and sizes judges."""
    return key[0] == metric and (sizes is None or key[2] in sizes)


def interval_targets(mode, by_round):
    """Each target judged by the paired ratios with their bootstrap intervals: met where
    every row's interval lies within the bound, NOT met where some row's lies wholly beyond
    it, else undecided (this machine's noise cannot tell), naming those rows."""
    out = []
    for a, b, metric, sizes, most, least in mode["targets"]:
        if most is None:
            # a gain wanted (striping's bandwidth, 1.5x and more): its rounds' ratios lie
            # outside SAME_MODE, which is for configurations that differ by far less
            out.append(f"target {a} / {b} ({metric}) at least {least}x: not judged this way "
                       f"(a gain: the rounds' ratios lie outside the mode window)")
            continue
        rows = {k: m for k, (m, n) in pair_intervals(by_round, a, b).items()
                if in_target(k, metric, sizes) and n >= BOOT_MIN_ROUNDS}
        # rows of both whose rounds fell in one mode less than half the time, or too few
        # rounds in all: not told
        lost = [k for k in by_round.get(a, {}) if k in by_round.get(b, {}) and k not in rows
                and in_target(k, metric, sizes)]
        if not rows:
            out.append(f"target {a} / {b} ({metric}): undecided, no row with half the "
                       f"rounds, and {BOOT_MIN_ROUNDS} at least, in one mode")
            continue
        # beyond: the row's interval lies wholly past the bound; within: wholly inside
        beyond = [k for k, m in rows.items() if m[1] > most]
        within = [k for k, m in rows.items() if m[2] <= most]
        worst = max(rows.items(), key=lambda kv: kv[1][0])
        verdict = "NOT met" if beyond else \
            "met" if len(within) == len(rows) and not lost else "undecided"
        doubt = [k for k in rows if k not in within and k not in beyond] + lost
        out.append(f"target {a} / {b} ({metric}) at most {most}x: worst "
                   f"{'/'.join(map(str, worst[0][1:]))} {worst[1][0]:.2f}x "
                   f"({BOOT_LEVEL:.0%} interval {worst[1][1]:.2f}-{worst[1][2]:.2f}) {verdict}"
                   + (f"; beyond: {', '.join('/'.join(map(str, k[1:])) for k in beyond)}"
                      if beyond else "")
                   + (f"; undecided: {', '.join('/'.join(map(str, k[1:])) for k in doubt)}"
                      if doubt and not beyond else ""))
    return out


def interval_table(mode, by_round):
    """The paired ratios of every judged target's pair, a column each, row by row (the rows
    its targets judge): median (BOOT_LEVEL interval; rounds in one mode), as
    interval_targets judges them."""
    judged = {}  # (a, b) -> [(metric, sizes)] of its targets with an upper bound
    for a, b, metric, sizes, most, _least in mode["targets"]:
        if most is not None:
            judged.setdefault((a, b), []).append((metric, sizes))
    pairs = list(judged)
    cols = [pair_intervals(by_round, a, b) for a, b in pairs]
    # every judged row both configurations ran: "(under half)" where too few of its rounds
    # were in one mode
    rows = [{k for k in by_round.get(a, {}) if k in by_round.get(b, {})
             and any(in_target(k, metric, sizes) for metric, sizes in judged[a, b])}
            for a, b in pairs]
    keys = sorted(set().union(*rows)) if rows else []
    if not keys:
        return ""
    lines = ["| metric | op | bytes | " + " | ".join(f"{a} / {b}" for a, b in pairs) + " |",
             "|---|---|---:|" + "---:|" * len(pairs)]

    def cell(key, col, mine):
        if key not in mine:
            return ""  # a row none of this pair's targets judges
        if key not in col:
            return "(under half)"
        (med, low, high), n = col[key]
        return f"{med:.2f} ({low:.2f}-{high:.2f}; {n})"

    for key in keys:
        cells = [cell(key, col, mine) for col, mine in zip(cols, rows)]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(mode, ratios_of_pair):
    out = []
    for a, b, metric, sizes, most, least in mode["targets"]:
        ratios = [r for k, r in ratios_of_pair(a, b).items() if in_target(k, metric, sizes)]
        if not ratios:
            out.append(f"target {a} / {b} ({metric}): no rows")
        elif most is not None:
            out.append(f"target {a} / {b} ({metric}) at most {most}x: worst {max(ratios):.2f}x "
                       f"{'met' if max(ratios) <= most else 'NOT met'}")
        else:
            out.append(f"target {a} / {b} ({metric}) at least {least}x: worst "
                       f"{min(ratios):.2f}x {'met' if min(ratios) >= least else 'NOT met'}")
    return out


def parse_args():
    """(the parser, for its errors; the options)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("node-local", "stripes"), default="node-local")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--rate", default="400mbit",
                    help="tc rate of each NIC (--mode stripes); none: unshaped")
    ap.add_argument("--out", default=None)
    ap.add_argument("--config", action="append", default=[], metavar="NAME",
                    help="run this configuration (its name as in the table; repeat the "
                         "option for more; default: all)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=ENVFILE",
                    help="also run each btl-ofi configuration with another install of it (its "
                         "env file), as '<configuration> [NAME]', interleaved, judged within "
                         "1.03x of ours row by row (a before/after comparison of two builds)")
    ap.add_argument("--drop-caches", action="store_true",
                    help="drop the page cache before every run (root), as compare.py does")
    ap.add_argument("--others", action="store_true",
                    help="--mode stripes: also MPICH (striping off, on) and Open MPI's "
                         "osc/pt2pt over btl/tcp on both NICs")
    return ap, ap.parse_args()


def choose_mode(opts, ap):
    """The mode's configurations, benchmarks and targets as --others, --config and --also
    make them."""
    mode = NODE_LOCAL if opts.mode == "node-local" else STRIPES
    if opts.mode == "stripes" and opts.others:
        mode = dict(mode, configs=mode["configs"] + OTHERS +
                    ([STOCK_TCP] if launcher.ompi_major() < 5 else []))
    if opts.config:
        want = opts.config
        names = [c.name for c in mode["configs"]]
        unknown = [n for n in want if n not in names]
        if unknown:
            ap.error(f"--config: no configuration {', '.join(map(repr, unknown))}; there are: "
                     f"{', '.join(map(repr, names))}")
        mode = dict(mode, configs=[c for c in mode["configs"] if c.name in want],
                    targets=[t for t in mode["targets"] if t[0] in want and t[1] in want])
    for also in opts.also:
        mode = with_build(mode, *also.partition("=")[::2], ap)
    return mode


def iters_of(bench, iters):
    """A run's iterations: --iters for osc_latency, a hundredth for osc_bw (5 at least), a
    quarter for the sporadic rows (50 at least)."""
    n = iters if bench[0] == "osc_latency" else max(iters // 100, 5)
    if "-g" in bench[4]:
        n = max(iters // 4, 50)  # each pays the pause too
    return n


def measure(opts, mode, setup, outdir):
    """Every configuration and benchmark in turn, opts.rounds times, in host namespaces made
    and removed here: (samples, by_round, failed runs, bytes each NIC sent during each
    configuration's osc_bw runs, the NICs)."""
    samples, by_round, failed, shares = {}, {}, [], {}
    with compare_net.namespaces(outdir, launcher.env_file_path(), setup) as hosts:
        for rnd in range(opts.rounds):
            for cfg in mode["configs"]:
                for bench in mode["benches"]:
                    got, problems, sent = one_run(cfg, bench, hosts, outdir,
                                                  iters_of(bench, opts.iters), opts.drop_caches)
                    if bench[0] == "osc_bw":
                        for name, value in sent.items():
                            shares.setdefault(cfg.name, {}).setdefault(name, 0)
                            shares[cfg.name][name] += value
                    print(f"round {rnd + 1} {cfg.name} {bench[0]}: {len(got)} rows"
                          f"{'; ' + '; '.join(problems) if problems else ''}", flush=True)
                    failed += [f"{cfg.name} {bench[0]}: {p}" for p in problems]
                    for key, value in got.items():
                        samples.setdefault(cfg.name, {}).setdefault(key, []).append(value)
                        by_round.setdefault(cfg.name, {}).setdefault(key, {})[rnd] = value
    return samples, by_round, failed, shares, hosts.ifaces


def nic_table(names, shares, ifaces):
    """The bytes each NIC sent during each configuration's osc_bw runs."""
    text = "\n\nbytes each NIC sent during the osc_bw runs (all rounds, both hosts):\n\n"
    text += "| configuration | " + " | ".join(ifaces) + " | share of the busiest |\n"
    text += "|---|" + "---:|" * (len(ifaces) + 1) + "\n"
    for name in names:
        sent = shares.get(name, {})
        total = max(sum(sent.values()), 1)
        text += f"| {name} | " + " | ".join(f"{sent.get(i, 0) / 2**20:.0f} MiB"
                                            for i in ifaces) + \
            f" | {max(sent.values() or [0]) / total:.2f} |\n"
    return text


def results_text(opts, mode, med, low, by_round, shares, ifaces):
    """The tables: medians, the least of the rounds, the NICs' bytes (more than one NIC),
    the targets' paired ratios."""
    text = table(mode, med, [c.name for c in mode["configs"]])
    # this machine's runs fall into a fast and a slow mode (2-3x apart, every configuration
    # alike, for minutes at a time): the least of the rounds compares fast with fast
    text += f"\n\nleast of the {opts.rounds} rounds:\n\n" + \
        table(mode, low, [c.name for c in mode["configs"]])
    if len(ifaces) > 1:
        text += nic_table([c.name for c in mode["configs"]], shares, ifaces)
    paired = interval_table(mode, by_round)
    if paired:
        text += (f"\n\nthe targets' pairs, the median of the rounds' own ratios ({BOOT_LEVEL:.0%} "
                 f"bootstrap interval; rounds in one mode):\n\n" + paired)
    return text


def print_targets(mode, med, low, by_round):
    """The targets judged four ways: by the medians, by the least of the rounds, by the
    median of the rounds' own ratios, and by that median's bootstrap interval."""
    print("\n".join(targets(mode, ratios_of(med))))
    print("by the least of the rounds:\n" + "\n".join(targets(mode, ratios_of(low))))
    # the steadiest of the three here: each round's two values side by side, in one mode
    print("by the median of the rounds' own ratios (rounds in one mode):\n" +
          "\n".join(targets(mode, paired_ratios(by_round))))
    # ... and whether this machine's noise lets that median tell at all
    print(f"by the same, with its {BOOT_LEVEL:.0%} bootstrap interval (met: every row's "
          f"interval within the bound; undecided: some row's straddles it):\n" +
          "\n".join(interval_targets(mode, by_round)))


def main():
    ap, opts = parse_args()
    mode = choose_mode(opts, ap)
    setup = mode["setup"] + (["--rate", opts.rate]
                             if opts.mode == "stripes" and opts.rate != "none" else [])
    if opts.drop_caches and (why := compare_runs.drop_caches_refused()):
        ap.error(why)
    outdir = opts.out or tempfile.mkdtemp(prefix=f"{opts.mode}-compare-")
    os.makedirs(outdir, exist_ok=True)
    samples, by_round, failed, shares, ifaces = measure(opts, mode, setup, outdir)
    med = {c: {k: statistics.median(v) for k, v in rows.items()} for c, rows in samples.items()}
    low = {c: {k: min(v) for k, v in rows.items()} for c, rows in samples.items()}
    text = results_text(opts, mode, med, low, by_round, shares, ifaces)
    print(f"\nmedians of {opts.rounds} interleaved rounds ({opts.mode}"
          f"{', each NIC ' + opts.rate if opts.mode == 'stripes' else ''}):\n")
    print(text)
    with open(os.path.join(outdir, f"{opts.mode}.json"), "w", encoding="utf-8") as fh:
        json.dump({c: {"/".join(map(str, k)): v for k, v in rows.items()}
                   for c, rows in samples.items()}, fh, indent=1)
    with open(os.path.join(outdir, f"{opts.mode}.md"), "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    print_targets(mode, med, low, by_round)
    if failed:
        print("failed runs:\n  " + "\n  ".join(failed))
        return 1
    print(f"results: {outdir}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
