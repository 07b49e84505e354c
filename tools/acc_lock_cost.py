#!/usr/bin/env python3
"""What osc/rdma's accumulate lock costs across hosts (open-mpi/ompi#11410).

8-byte MPI_Fetch_and_op, MPI_Accumulate and MPI_Compare_and_swap, each followed
by MPI_Win_flush, from rank 0 to rank 1 on two network namespaces (made by
scripts/check-multihost.sh and removed again), under three passive-target
epochs: MPI_Win_lock_all, MPI_Win_lock(SHARED) and MPI_Win_lock(EXCLUSIVE).
Per row: the time per operation and how many BTL atomics btl-ofi carried per
operation (its btl_<component>_atomic_count counter). Needs root, the env file
of an installed btl-ofi (BTL_OFI_ENV_FILE or the default) and the venv's mpi4py.

    .venv/bin/python tools/acc_lock_cost.py [--provider P] [--ops N] [--reps R] [-- MCA VALUE ...]

Trailing MCA pairs go to mpirun (e.g. -- osc_rdma_acc_single_intrinsic true).
It measures; it does not judge (exit 0 when the job ran).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python_tests"))


def rank_main(ops, reps):
    """Inside mpirun: the measurement, printed by rank 0."""
    import numpy as np
    from mpi4py import MPI
    from rank_mpit import OfiCounters

    comm, counters = MPI.COMM_WORLD, OfiCounters()
    win = MPI.Win.Allocate(8, 8, comm=comm)
    np.frombuffer(win.tomemory(), dtype=np.int64)[:] = 0
    one, res, cmp_ = np.ones(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    calls = {"fetch_and_op": lambda: win.Fetch_and_op(one, res, 1, 0, MPI.SUM),
             "accumulate": lambda: win.Accumulate(one, 1, 0, MPI.SUM),
             "compare_and_swap": lambda: win.Compare_and_swap(one, cmp_, res, 1, 0)}
    epochs = {"lock_all": (win.Lock_all, win.Unlock_all),
              "lock shared": (lambda: win.Lock(1, MPI.LOCK_SHARED), lambda: win.Unlock(1)),
              "lock exclusive": (lambda: win.Lock(1, MPI.LOCK_EXCLUSIVE), lambda: win.Unlock(1))}
    if comm.rank == 0:
        print(f"counters: {counters.state}; {ops} operations per row, best of {reps}")
        print(f"{'epoch':16s} {'operation':18s} {'us/op':>8s} {'BTL atomics/op':>15s}")
    for ename, (open_epoch, close_epoch) in epochs.items():
        for cname, call in calls.items():
            best = None
            for _ in range(reps):
                comm.Barrier()
                if comm.rank == 0:
                    open_epoch()
                    for _ in range(ops // 10):  # warm-up
                        call()
                        win.Flush(1)
                    a0, t0 = counters.snapshot().get("atomic_count", 0), time.perf_counter()
                    for _ in range(ops):
                        call()
                        win.Flush(1)
                    us = (time.perf_counter() - t0) / ops * 1e6
                    per_op = (counters.snapshot().get("atomic_count", 0) - a0) / ops
                    close_epoch()
                    best = (us, per_op) if best is None or us < best[0] else best
                comm.Barrier()
            if comm.rank == 0:
                print(f"{ename:16s} {cname:18s} {best[0]:8.2f} {best[1]:15.2f}", flush=True)
    win.Free()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--provider", default="tcp;ofi_rxm")
    p.add_argument("--ops", type=int, default=2000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("mca", nargs="*", help="MCA NAME VALUE pairs for mpirun")
    args = p.parse_args()
    if args.rank:
        return rank_main(args.ops, args.reps)
    if os.geteuid() != 0 or len(args.mca) % 2:
        sys.exit("acc_lock_cost: needs root (network namespaces); MCA arguments come in pairs")
    import launcher

    env = dict(os.environ, **launcher.load_env_file(), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    setup = os.path.join(REPO, "scripts", "check-multihost.sh")
    with tempfile.TemporaryDirectory(prefix="acc_lock_cost.") as logdir:
        conf = os.path.join(logdir, "netns.conf")
        made = subprocess.run(["bash", setup, "--setup-only", "--hosts", "2", "--log-dir", logdir],
                              env=env, capture_output=True, text=True, timeout=120)
        try:
            if made.returncode != 0:
                sys.exit(f"acc_lock_cost: check-multihost.sh --setup-only: {made.stderr.strip()}")
            hosts = launcher.Hosts.from_conf(conf)
            env.update(hosts.env())
            argv = launcher.mpirun_argv(
                2, provider=args.provider, btl="self,tcp," + env["BTL_OFI_COMPONENT"],
                program=os.path.abspath(__file__), hosts=hosts, verbose=False,
                mca=dict(zip(args.mca[::2], args.mca[1::2])),
                program_args=["--rank", "--ops", str(args.ops), "--reps", str(args.reps)])
            run = launcher.run_argv(argv, 900, env, logdir)
            print(run.stdout, end="")
            if run.returncode != 0:
                print(run.stderr[-2000:], file=sys.stderr)
            return run.returncode
        finally:
            if os.path.isfile(conf):
                subprocess.run(["bash", setup, "--teardown", conf], capture_output=True, timeout=120)


if __name__ == "__main__":
    sys.exit(main())
