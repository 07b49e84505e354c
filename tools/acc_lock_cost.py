#!/usr/bin/env python3
"""How many BTL operations, and so network round trips, one MPI one-sided call costs
through btl-ofi, and how long it takes (open-mpi/ompi#11410; NOTES.txt 10).

Rank 0 calls each operation on one 8-byte element of the last rank's window (64 for acc64),
then MPI_Win_flush; the other ranks wait in a barrier, which turns their progress engines.
Per row: microseconds per call (best of --reps) and the put, get and atomic operations that
btl-ofi carried for it, and the reads that proved a flush (a round trip each where the
provider gives no delivery completion, NOTES.txt 5), from rank 0's btl_<component>_*
counters (MPI_T), and how often it read its completion queues meanwhile (cq_polls: the
finer a wait loop, the more reads per call):

    put8 get8          8-byte MPI_Put / MPI_Get: the reference, one round trip
    fop cas            MPI_Fetch_and_op (MPI_SUM) / MPI_Compare_and_swap, MPI_INT64_T
    acc1 acc64         MPI_Accumulate (MPI_SUM) of 1 / 64 MPI_INT64_T
    gacc1              MPI_Get_accumulate (MPI_SUM) of 1 MPI_INT64_T
    none               no operation: what the epoch itself costs

Epochs: lock_all (MPI_Win_lock_all around the loop), shared / exclusive (MPI_Win_lock on the
target around the loop), and epoch_shared / epoch_exclusive: MPI_Win_lock, the operation,
MPI_Win_unlock for every call (no flush: the unlock completes it), as some one-sided
libraries do; epoch_nocheck: the same shared epoch with MPI_MODE_NOCHECK (no lock taken);
epoch_all: MPI_Win_lock_all, the operation on every other rank, MPI_Win_unlock_all.
Settings, one mpirun each:

    default       Open MPI's defaults
    intrinsic     --mca osc_rdma_acc_single_intrinsic true
    same_op       the window's info key accumulate_ops=same_op
    no_amo        --mca osc_rdma_acc_use_amo false

By default two host namespaces (scripts/check-multihost.sh, made here and removed again),
one rank each (--ranks N: N namespaces, ranks 1..N-2 idle bystanders, all on this machine's
cores); --one-node runs the ranks on this host instead. Needs root for the namespaces, the
env file of an installed btl-ofi (BTL_OFI_ENV_FILE or the default) and the venv's mpi4py.

    .venv/bin/python tools/acc_lock_cost.py [--provider P] [--one-node] [--ranks N]
        [--settings default,intrinsic,...] [--epochs lock_all,...] [--ops-list fop,...]
        [--flavor create] [--osc pt2pt] [--ops N] [--reps R] [-- MCA VALUE ...]

Trailing MCA pairs go to every mpirun. It measures; it does not judge (exit 0 when every
job ran; 1 when one failed, with its output).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python_tests"))

OPS = ("put8", "get8", "fop", "cas", "acc1", "acc64", "gacc1", "none")
EPOCHS = ("lock_all", "shared", "exclusive", "epoch_shared", "epoch_exclusive", "epoch_nocheck",
          "epoch_all")
SETTINGS = {
    "default": ({}, None),
    "intrinsic": ({"osc_rdma_acc_single_intrinsic": "true"}, None),
    "same_op": ({}, {"accumulate_ops": "same_op"}),
    "no_amo": ({"osc_rdma_acc_use_amo": "false"}, None),
}
COUNTED = ("put_count", "get_count", "atomic_count", "proof_reads", "cq_polls")


def calls(win, MPI, np, target):
    """The operations, each a callable on target's window."""
    one, res, cmp_ = np.ones(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    many, buf = np.ones(64, np.int64), np.zeros(1, np.int64)
    return {
        "put8": lambda: win.Put(one, target),
        "get8": lambda: win.Get(buf, target),
        "fop": lambda: win.Fetch_and_op(one, res, target, 0, MPI.SUM),
        "cas": lambda: win.Compare_and_swap(one, cmp_, res, target, 0),
        "acc1": lambda: win.Accumulate(one, target, 0, MPI.SUM),
        "acc64": lambda: win.Accumulate(many, target, 0, MPI.SUM),
        "gacc1": lambda: win.Get_accumulate(one, res, target, 0, MPI.SUM),
        "none": lambda: None,
    }


def epochs(win, MPI, target):
    """name -> (open the loop, close the loop, open one call, close one call)."""
    nothing = lambda: None  # noqa: E731
    flush = lambda: win.Flush(target)  # noqa: E731
    shared = lambda: win.Lock(target, MPI.LOCK_SHARED)  # noqa: E731
    exclusive = lambda: win.Lock(target, MPI.LOCK_EXCLUSIVE)  # noqa: E731
    unlock = lambda: win.Unlock(target)  # noqa: E731
    nocheck = lambda: win.Lock(target, MPI.LOCK_SHARED, MPI.MODE_NOCHECK)  # noqa: E731
    return {
        "lock_all": (win.Lock_all, win.Unlock_all, nothing, flush),
        "shared": (shared, unlock, nothing, flush),
        "exclusive": (exclusive, unlock, nothing, flush),
        "epoch_shared": (nothing, nothing, shared, unlock),
        "epoch_exclusive": (nothing, nothing, exclusive, unlock),
        "epoch_nocheck": (nothing, nothing, nocheck, unlock),
        "epoch_all": (nothing, nothing, win.Lock_all, win.Unlock_all),
    }


def rank_main(args):
    """Inside mpirun: the measurement, printed by rank 0 as tab-separated rows."""
    import numpy as np
    from mpi4py import MPI
    from rank_mpit import OfiCounters

    comm, counters = MPI.COMM_WORLD, OfiCounters()
    target = comm.size - 1
    info = MPI.Info.Create()
    for pair in filter(None, args.info.split(",")):
        key, value = pair.split("=", 1)
        info.Set(key, value)
    if args.flavor == "allocate":
        win = MPI.Win.Allocate(64 * 8, 8, info=info, comm=comm)
        np.frombuffer(win.tomemory(), dtype=np.int64)[:] = 0
    else:
        memory = np.zeros(64, np.int64)  # kept alive with the window
        win = MPI.Win.Create(memory, 8, info=info, comm=comm)
    comm.Barrier()
    each = [calls(win, MPI, np, peer) for peer in range(1, comm.size)]  # the last is target's
    ops, loops = each[-1], epochs(win, MPI, target)
    if comm.rank == 0:
        print(f"#counters\t{counters.state}", flush=True)
    for ename in args.epochs.split(","):
        open_loop, close_loop, open_call, close_call = loops[ename]
        for oname in args.ops_list.split(","):
            call, best = ops[oname], None
            if ename == "epoch_all":  # the operation on every other rank
                call = lambda name=oname: [peer_ops[name]() for peer_ops in each]  # noqa: E731
            for _ in range(args.reps):
                comm.Barrier()
                if comm.rank == 0:
                    open_loop()
                    for _ in range(max(1, args.ops // 10)):  # warm-up
                        open_call(), call(), close_call()
                    c0, t0 = counters.snapshot(), time.perf_counter()
                    for _ in range(args.ops):
                        open_call()
                        call()
                        close_call()
                    us = (time.perf_counter() - t0) / args.ops * 1e6
                    c1 = counters.snapshot()
                    close_loop()
                    per = [(c1.get(k, 0) - c0.get(k, 0)) / args.ops for k in COUNTED]
                    best = (us, per) if best is None or us < best[0] else best
                comm.Barrier()
            if comm.rank == 0:
                print("\t".join([ename, oname, f"{best[0]:.2f}"] +
                                [f"{x:.2f}" for x in best[1]]), flush=True)
    win.Free()
    return 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--provider", default="tcp;ofi_rxm")
    p.add_argument("--one-node", action="store_true", help="ranks on this host, no namespaces")
    p.add_argument("--ranks", type=int, default=2, help="ranks (one per namespace; default 2)")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--epochs", default="lock_all,exclusive")
    p.add_argument("--ops-list", default=",".join(OPS))
    p.add_argument("--ops", type=int, default=1000, help="calls per row (default 1000)")
    p.add_argument("--reps", type=int, default=3, help="runs per row, best kept (default 3)")
    p.add_argument("--flavor", choices=("allocate", "create"), default="allocate",
                   help="MPI_Win_allocate (default) or MPI_Win_create: on one node osc/rdma "
                        "serves an allocated window from shared memory, without any BTL")
    p.add_argument("--osc", default="rdma",
                   help="the osc component (default rdma, through btl-ofi; pt2pt or ucx run "
                        "without btl-ofi, for comparison: no counters)")
    p.add_argument("--info", default="", help=argparse.SUPPRESS)
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("mca", nargs="*", help="MCA NAME VALUE pairs for every mpirun")
    args = p.parse_args()
    unknown = ([s for s in args.settings.split(",") if s not in SETTINGS] +
               [e for e in args.epochs.split(",") if e not in EPOCHS] +
               [o for o in args.ops_list.split(",") if o not in OPS])
    if unknown:
        p.error(f"unknown setting, epoch or operation: {', '.join(unknown)}")
    if len(args.mca) % 2 or args.ranks < 2:
        p.error("MCA arguments come in pairs; --ranks is at least 2")
    return args


def one_setting(args, name, env, hosts, logdir):
    """One mpirun for setting name: its rows, or None (its output printed) if it failed."""
    import launcher

    mca, info = SETTINGS[name]
    mca = dict(mca, **dict(zip(args.mca[::2], args.mca[1::2])))
    rank_args = ["--rank", "--flavor", args.flavor, "--ops", str(args.ops), "--reps",
                 str(args.reps), "--epochs",
                 args.epochs, "--ops-list", args.ops_list,
                 "--info", ",".join(f"{k}={v}" for k, v in (info or {}).items())]
    node_btl = "tcp" if hosts else env.get("BTL_OFI_NODE_BTL", "vader")
    ours = args.osc == "rdma"
    argv = launcher.mpirun_argv(args.ranks, provider=args.provider if ours else None,
                                hosts=hosts, osc=args.osc,
                                btl=f"self,{node_btl}" + (f",{env['BTL_OFI_COMPONENT']}" if ours
                                                          else ""),
                                program=os.path.abspath(__file__), verbose=False, mca=mca,
                                program_args=rank_args)
    run = launcher.run_argv(argv, 1800, env, logdir)
    if run.returncode != 0:
        print(f"acc_lock_cost: setting {name} failed (rc {run.returncode}):\n"
              f"{run.stdout[-2000:]}{run.stderr[-3000:]}", file=sys.stderr)
        return None
    return [line.split("\t") for line in run.stdout.splitlines() if "\t" in line]


def table(args, results, where):
    print(f"# btl-ofi round trips: {where}, osc/{args.osc}"
          f"{', provider ' + args.provider if args.osc == 'rdma' else ''}, {args.ranks} ranks, "
          f"MPI_Win_{args.flavor}, {args.ops} calls per row, best of {args.reps}; Open MPI "
          f"{os.environ.get('BTL_OFI_OMPI_VERSION', '?')}\n")
    print("| setting | epoch | operation | us/call | puts | gets | atomics | proof reads "
          "| CQ reads |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, rows in results.items():
        for row in rows:
            if row[0] == "#counters":
                if row[1] != "ok":
                    print(f"| {name} | (btl-ofi counters {row[1]}: not btl-ofi's traffic) "
                          "| | | | | | | |")
                continue
            print(f"| {name} | " + " | ".join(row) + " |")


def main():
    args = parse_args()
    if args.rank:
        return rank_main(args)
    import launcher

    env = dict(os.environ, **launcher.load_env_file(), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.setdefault("BTL_OFI_OMPI_VERSION", env.get("BTL_OFI_OMPI_VERSION", "?"))
    results, failed = {}, False
    with tempfile.TemporaryDirectory(prefix="acc_lock_cost.") as logdir:
        if args.one_node:
            for name in args.settings.split(","):
                rows = one_setting(args, name, env, None, logdir)
                failed |= rows is None
                results[name] = rows or []
            table(args, results, "one node")
            return 1 if failed else 0
        if os.geteuid() != 0:
            sys.exit("acc_lock_cost: needs root (network namespaces), or --one-node")
        setup = os.path.join(REPO, "scripts", "check-multihost.sh")
        conf = os.path.join(logdir, "netns.conf")
        made = subprocess.run(["bash", setup, "--setup-only", "--hosts", str(args.ranks),
                               "--log-dir", logdir], env=env, capture_output=True, text=True,
                              timeout=180)
        try:
            if made.returncode != 0:
                sys.exit(f"acc_lock_cost: check-multihost.sh --setup-only: {made.stderr.strip()}")
            hosts = launcher.Hosts.from_conf(conf)
            env.update(hosts.env())
            for name in args.settings.split(","):
                rows = one_setting(args, name, env, hosts, logdir)
                failed |= rows is None
                results[name] = rows or []
        finally:
            if os.path.isfile(conf):
                subprocess.run(["bash", setup, "--teardown", conf], capture_output=True,
                               timeout=120)
    table(args, results, f"{args.ranks} host namespaces")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
