"""Rank program: run a plan of one-sided checks and report them as JSON lines.

    python rank_prog.py PLAN.json REPORT.jsonl

Rank 0 appends one JSON object per line to REPORT (flushed as it goes, so a
hang still leaves the checks before it on record):
  {"type": "start", "nranks", "thread_level", "counters": [[state, detail] per rank]}
  {"type": "check", "id", "errors": [...], "deltas": {counter: sum over ranks}, "seconds"}
  {"type": "end", "registrations_live": [before, after] summed over ranks}
Judging what these mean is the test driver's job (outcome.py), not this one's.
A plan's "bind_by_local_rank" (a list of cpus) binds local rank r to the r-th
(modulo) before MPI starts. A plan's "leave_mpit_open" leaves MPI_T initialized at
exit (no MPI_T_finalize), as user code may: Open MPI then keeps its BTLs open.
A plan's "stale_shm_regions" (N) puts in /dev/shm, before MPI starts, what a killed
process of an earlier job left there: files by the names libfabric's shm gives this
process's first N endpoints by default ("<pid>:<uid>:<i>"), 4 KiB of zeros (a region of
no version this libfabric knows). The start record lists every rank's pid ("pids").
Exit status: 0 when every check ran (whatever their results), else an error.
"""

import json
import os
import sys
import time
import traceback


def all_checks():
    """kind -> check function: rank_checks' own and those of the modules of special checks,
    which build on rank_checks (so the registry lives here, above them all)."""
    import rank_attach
    import rank_checks
    import rank_concurrency
    import rank_domain
    import rank_idle
    import rank_linked_list
    import rank_many_windows
    import rank_max_attach
    import rank_nic_down
    import rank_node_local
    import rank_own_cas
    import rank_rcache
    import rank_reglimit
    import rank_stripes

    checks = dict(rank_checks.CHECKS)
    for more in (rank_concurrency.CONCURRENCY_CHECKS,
                 rank_attach.ATTACH_CHECKS, rank_linked_list.LINKED_LIST_CHECKS,
                 rank_max_attach.MAX_ATTACH_CHECKS,
                 rank_rcache.RCACHE_CHECKS, rank_reglimit.REGLIMIT_CHECKS,
                 rank_domain.DOMAIN_CHECKS, rank_many_windows.MANY_WINDOWS_CHECKS,
                 rank_idle.IDLE_CHECKS, rank_node_local.NODE_LOCAL_CHECKS,
                 rank_stripes.STRIPES_CHECKS, rank_nic_down.NIC_DOWN_CHECKS,
                 rank_own_cas.OWN_CAS_CHECKS):
        checks.update(more)
    return checks


def before_mpi(plan):
    """What the plan asks of this process before MPI starts: its cpu
    (bind_by_local_rank) and an earlier job's shm regions (stale_shm_regions)."""
    cpus = plan.get("bind_by_local_rank")
    if cpus:
        # bound before MPI_Init, as mpirun --bind-to would (Open MPI 4.1 and 5.0 alike)
        local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
        os.sched_setaffinity(0, {cpus[local % len(cpus)]})
    for i in range(plan.get("stale_shm_regions", 0)):
        with open(f"/dev/shm/{os.getpid()}:{os.getuid()}:{i}", "wb") as fh:
            fh.write(bytes(4096))


def run_check(comm, ctx, checks, counters, spec):
    """One check of the plan on every rank; on rank 0 its record (errors and counter
    deltas summed over the ranks), elsewhere None."""
    rank = comm.Get_rank()
    comm.Barrier()
    before = counters.snapshot()
    start = time.monotonic()
    try:
        errors = checks[spec["kind"]](ctx, spec)
    except Exception as exc:  # an MPI error class or a bug: report, keep going
        errors = [f"rank {rank}: {type(exc).__name__}: {exc}",
                  traceback.format_exc(limit=4).strip().splitlines()[-3].strip()]
        print(f"CHECK-ERROR {spec['id']} rank {rank}: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
    seconds = time.monotonic() - start
    after = counters.snapshot()
    delta = {k: after[k] - before.get(k, 0) for k in after}
    gathered = comm.gather([errors, delta], root=0)
    if rank != 0:
        return None
    total = {}
    all_errors = []
    for r, (errs, d) in enumerate(gathered):
        all_errors += [e if e.startswith("rank ") else f"rank {r}: {e}" for e in errs]
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return {"type": "check", "id": spec["id"], "errors": all_errors[:12],
            "n_errors": len(all_errors), "deltas": total, "seconds": round(seconds, 4)}


def main(plan_path, report_path):
    with open(plan_path, encoding="utf-8") as fh:
        plan = json.load(fh)
    before_mpi(plan)
    import mpi4py

    mpi4py.rc.thread_level = plan.get("thread_level", "multiple")
    from mpi4py import MPI

    import rank_checks
    import rank_mpit

    checks = all_checks()

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    counters = rank_mpit.OfiCounters()
    out = open(report_path, "a", encoding="utf-8") if rank == 0 else None

    def emit(record):
        out.write(json.dumps(record) + "\n")
        out.flush()

    states = comm.gather([counters.state, counters.detail], root=0)
    pids = comm.gather(os.getpid(), root=0)
    if rank == 0:
        emit({"type": "start", "nranks": comm.Get_size(), "thread_level": MPI.Query_thread(),
              "counters": states, "pids": pids})
    ctx = rank_checks.Ctx(comm)
    ctx.counters = counters  # for checks that judge phases of their own
    live_before = comm.reduce(counters.snapshot().get("registrations_live", 0), root=0)
    for spec in plan["checks"]:
        record = run_check(comm, ctx, checks, counters, spec)
        if rank == 0:
            emit(record)
    comm.Barrier()
    live_after = comm.reduce(counters.snapshot().get("registrations_live", 0), root=0)
    if rank == 0:
        emit({"type": "end", "registrations_live": [live_before, live_after]})
        out.close()
    if not plan.get("leave_mpit_open"):
        counters.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
