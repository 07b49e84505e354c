"""check-mpich-rma.sh's program: MPICH's test/mpi/rma tests that call an accumulate-type
operation, selected (mpich_rma_select.py), built with Open MPI's mpicc
(mpich_rma_build.py) and run here across host namespaces through osc/rdma and btl-ofi, a
failure again without btl-ofi, then the table (scripts/check-mpich-rma.sh's comment says
what and how).

    python3 scripts/mpich_rma.py REPO ENV_FILE TESTS VERSION [OPTION...]

REPO: the repository; ENV_FILE: btl-ofi's env file; TESTS: MPICH's test/mpi directory (of
the source check-mpich-rma.sh fetched); VERSION: its Debian source version; the options
are check-mpich-rma.sh's. Run through check-mpich-rma.sh, which checks for root and
fetches the source.
"""

import argparse
import concurrent.futures
import contextlib
import dataclasses
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from mpich_rma_build import Build
from mpich_rma_select import mark_skipped, parse_makefile_am, scan, select_cases

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python_tests"))
import launcher  # noqa: E402  the suite's env file, mpirun argv, Hosts and bounded runs

# A test that prints an error line per element can write gigabytes: such a run is
# stopped there (a failure), and its log keeps the start and the end of the output.
MAX_OUTPUT = 16 << 20


def log(msg):
    print(f"check-mpich-rma: {msg}", flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="check-mpich-rma.sh")
    p.add_argument("--intrinsic", action="store_true")
    p.add_argument("--intrinsic-only", action="store_true")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("--dtp", choices=("small", "all", "none"), default="small")
    p.add_argument("--only", default="")
    p.add_argument("--no-compare", action="store_true")
    p.add_argument("--with-dynamic", action="store_true")
    p.add_argument("--log-dir", default="")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--build-only", action="store_true")
    args = p.parse_args(argv)
    if not 2 <= args.hosts <= 4:
        p.error("--hosts takes 2, 3 or 4")
    return args


# ---------------------------------------------------------------- running
@dataclasses.dataclass
class Result:
    status: str        # pass, FAIL, skipped
    note: str = ""
    ofi_ranks: int = 0     # processes that printed btl-ofi's "selected provider" line
    ofi_nodes: int = 0     # on how many host namespaces
    log: str = ""
    tail: str = ""
    seconds: float = 0


BOILERPLATE_RE = re.compile(
    r"^-+$|Primary job +terminated normally|a non-zero exit code\. Per user-direction|"
    r"mpirun detected that one or more|the job to be terminated\. The first|^ *Process name:|"
    r"^ *Exit code:|plm:rsh: Warning: setpgid|orte_base_help_aggregate|more processes have "
    r"sent help message|^mpirun noticed that|^ *Local host:|^ *Process ID:|^ *PID:")


def compare_labels():
    """The two runs of a failed test without btl-ofi, as its table's columns name them
    (the node's BTL is the env file's, so after BTL_OFI_ENV_FILE is set)."""
    return {"pt2pt": "osc/pt2pt, btl/tcp",
            "onenode": f"osc/rdma, btl/{launcher.node_btl()}, one host"}


def onenode_caveat(prog):
    """On one node osc/rdma serves MPI_Win_allocate windows from its own shared memory: a
    program with no other kind of window never reaches osc/rdma's BTL path there."""
    if "allocate" in prog.flavors and not {"create", "dynamic"} & set(prog.flavors):
        return "MPI_Win_allocate only: osc/rdma's shared memory, not its BTL path"
    return ""


class Runner:
    def __init__(self, args, env, hosts, logdir):
        self.args, self.env, self.hosts, self.logdir = args, env, hosts, logdir
        self.component = launcher.component_name()
        self.ompi_major = launcher.ompi_major()
        self.selected_re = re.compile(
            rf"\[([^:\]]+):(\d+)\] btl:{re.escape(self.component)}: selected provider (\S+) "
            rf"\(fabric ([^,]*), domain ([^)]*)\)")
        self.shown_selection = False
        self.hostfiles = {}
        self.nrun = 0

    def hosts_for(self, ranks, shared=False):
        """The hosts for a job of `ranks` and how they are spread: one rank per host where
        there are enough, else ceil(ranks/hosts) on each, round robin (--map-by node); for
        a test with MPI_Win_allocate_shared two ranks on the first host (slots filled)."""
        per = -(-ranks // len(self.hosts.namespaces))
        if shared:
            per = max(per, 2)
        if per == 1:
            return self.hosts, ""
        if per not in self.hostfiles:
            path = os.path.join(self.logdir, f"hostfile-{per}")
            with open(path, "w", encoding="utf-8") as fh:
                for ip in self.hosts.ips:
                    fh.write(f"{ip} slots={per}\n")
            self.hostfiles[per] = dataclasses.replace(self.hosts, hostfile=path)
        return self.hostfiles[per], (f"{per} on the first host, osc sm,rdma" if shared
                                     else f"{per} per host")

    def argv(self, case, setting, prog):
        binary = prog.binary
        hosts, _ = self.hosts_for(case.ranks, prog.shared)
        if setting.startswith("onenode"):
            hosts = None
        forward = [e.split("=", 1)[0] for e in case.env]
        if "LD_LIBRARY_PATH" in self.env:
            forward.append("LD_LIBRARY_PATH")
        mca = {"mpi_yield_when_idle": "1"}
        if setting == "pt2pt":
            osc, btl, provider, verbose = "pt2pt", "self,tcp", None, False
            if self.ompi_major >= 5:  # no osc/pt2pt: osc/rdma's active messages over btl/tcp
                osc = "rdma"
        elif setting.startswith("onenode"):
            osc, btl, provider, verbose = "rdma", f"self,{launcher.node_btl()}", None, False
            if setting == "onenode-intrinsic":
                mca["osc_rdma_acc_single_intrinsic"] = "true"
        else:
            osc, btl, provider, verbose = "rdma", f"self,tcp,{self.component}", "tcp;ofi_rxm", True
            if setting == "intrinsic":
                mca["osc_rdma_acc_single_intrinsic"] = "true"
        if prog.shared:  # osc/sm makes the node's shared window, the other osc the rest
            osc = "sm," + osc
        argv = launcher.mpirun_argv(case.ranks, provider=provider, mca=mca, osc=osc, btl=btl,
                                    program=str(binary), program_args=case.args,
                                    verbose=verbose, native=True, hosts=hosts, forward=forward)
        if hosts is not None and hosts is not self.hosts and not prog.shared:
            # round robin over the hosts, so that every host carries ranks
            i = argv.index("--bind-to")
            argv[i:i] = ["--map-by", "node"]
        return argv

    def run(self, case, setting, prog):
        self.nrun += 1
        env = dict(self.env)
        for e in case.env:
            k, _, v = e.partition("=")
            env[k] = v
        timeout = max(self.args.timeout, case.time_limit)
        argv = self.argv(case, setting, prog)
        slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", case.label)[:120]
        logfile = os.path.join(self.logdir, f"{self.nrun:03d}-{slug}.{setting}.log")
        workdir = tempfile.mkdtemp(prefix="run-", dir=self.logdir)
        with open(logfile, "w", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(map(_quote, argv)) + "\n")
            fh.flush()
            with contextlib.redirect_stderr(fh):  # stacks of a timed-out run go here
                run = launcher.run_argv(argv, timeout, env, workdir, max_output=MAX_OUTPUT)
            fh.write(f"\n---- stdout\n{run.stdout}\n---- stderr\n{run.stderr}\n"
                     f"---- exit {run.returncode}, {run.seconds:.1f} s"
                     f"{' (timed out)' if run.timed_out else ''}\n")
        shutil.rmtree(workdir, ignore_errors=True)
        out = run.stdout + run.stderr
        sel = self.selected_re.findall(out)
        ours = setting in ("default", "intrinsic")
        if sel and not self.shown_selection and ours:
            line = next(l for l in out.splitlines() if self.selected_re.search(l))
            log(f"proof of path (btl_base_verbose 10, {case.label}): {line.strip()}")
            self.shown_selection = True
        # one line per process that selected a provider: [node:pid] btl:<c>: selected ...
        ofi_pids = {(node, pid) for node, pid, *_ in sel}
        ofi_nodes = {node for node, _ in ofi_pids}
        res = Result(status="pass", ofi_ranks=len(ofi_pids), ofi_nodes=len(ofi_nodes),
                     log=logfile, seconds=run.seconds)
        # the tail without btl_base_verbose's own lines (and bml's) and mpirun's boilerplate
        tail_lines = [l for l in out.splitlines()
                      if l.strip() and not re.match(r"^\[[^\]]+\] (mca: |select: |btl:)", l)
                      and not BOILERPLATE_RE.search(l)]
        res.tail = "\n".join(tail_lines[-12:])
        if run.timed_out:
            res.status, res.note = "FAIL", f"timeout {timeout:.0f} s"
        elif run.flooded:
            res.status, res.note = "FAIL", f"killed after {MAX_OUTPUT >> 20} MiB of output"
        elif run.returncode != 0:
            res.status, res.note = "FAIL", f"exit {run.returncode}"
        elif not re.search(r"^\s*No Errors\s*$", run.stdout, re.M):
            res.status, res.note = "FAIL", "no \" No Errors\" line"
        elif ours and res.ofi_ranks < case.ranks:
            res.status = "FAIL"
            res.note = f"btl-ofi selected a provider on {res.ofi_ranks} of {case.ranks} ranks"
        if setting.startswith("onenode"):
            res.note = "; ".join(filter(None, (res.note, onenode_caveat(prog))))
        return res


def _quote(a):
    return a if re.match(r"^[A-Za-z0-9_./=:,+-]+$", a) else "'" + a.replace("'", "'\\''") + "'"


def setup_hosts(repo, n, logdir, env):
    setup = os.path.join(repo, "scripts", "check-multihost.sh")
    made = subprocess.run(["bash", setup, "--setup-only", "--hosts", str(n), "--log-dir", logdir],
                          env=env, capture_output=True, text=True, timeout=180)
    conf = os.path.join(logdir, "netns.conf")
    if made.returncode == 77:
        print(made.stdout.strip())
        sys.exit(77)
    if made.returncode != 0:
        sys.exit(f"check-mpich-rma: check-multihost.sh --setup-only: "
                 f"{(made.stderr or made.stdout).strip()}")
    return conf


def teardown_hosts(repo, conf):
    if os.path.isfile(conf):
        r = subprocess.run(["bash", os.path.join(repo, "scripts", "check-multihost.sh"),
                            "--teardown", conf], capture_output=True, text=True, timeout=120)
        log((r.stdout.strip().splitlines() or ["teardown: no output"])[-1])


# ---------------------------------------------------------------- the steps of a run
@dataclasses.dataclass
class Check:
    """One run of the check: its options, its cases and what each run of them gave."""
    args: argparse.Namespace
    settings: list               # default, intrinsic: a column each
    compare: dict                # compare_labels()
    cases: list = dataclasses.field(default_factory=list)
    byname: dict = dataclasses.field(default_factory=dict)   # the chosen programs
    results: dict = dataclasses.field(default_factory=dict)  # (id(case), setting): Result
    runner: Runner = None


def prepare(check, env, tests, version, envfile, only):
    """Build MTest, choose the programs that call an accumulate-type operation, build them
    and select their cases (check.byname, check.cases)."""
    args = check.args
    build = Build(env, args.rebuild, tests, version)
    log(f"build directory {build.dir} (mpicc {build.mpicc})")
    build.library()
    progs = parse_makefile_am(tests / "rma" / "Makefile.am")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(functools.partial(scan, build), progs))
    chosen = [p for p in progs if p.calls]
    log(f"{len(chosen)} of {len(progs)} programs in rma/Makefile.am call an accumulate-type "
        f"operation: {' '.join(p.name for p in chosen)}")
    mark_skipped(chosen, envfile.get("BTL_OFI_OMPI_VERSION", "0"), args.with_dynamic)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(build.compile, [p for p in chosen if not p.skip]))
    check.byname = {p.name: p for p in chosen}
    check.cases = select_cases(tests, chosen, args.dtp, only)


def run_again(check, case, prog, failed):
    """A failed case again without btl-ofi: osc/pt2pt over btl/tcp, then osc/rdma on one
    host (with acc_single_intrinsic if only that setting failed)."""
    onenode = "onenode" if "default" in failed else "onenode-intrinsic"
    for setting, what in (("pt2pt", check.compare["pt2pt"]),
                          (onenode, check.compare["onenode"])):
        res = check.runner.run(case, setting, prog)
        check.results[(id(case), setting.split("-")[0])] = res
        log(f"    again, {what}: {res.status}"
            f"{' (' + res.note + ')' if res.note else ''} {res.seconds:.1f} s")


def run_cases(check):
    """Each case not skipped in each setting, a failure again without btl-ofi."""
    results = check.results
    torun = [c for c in check.cases if not c.skip]
    for i, case in enumerate(torun, 1):
        prog = check.byname[case.program]
        for setting in check.settings:
            res = check.runner.run(case, setting, prog)
            results[(id(case), setting)] = res
            log(f"[{i}/{len(torun)}] {case.label} ({case.ranks} ranks, {setting}): "
                f"{res.status}{' (' + res.note + ')' if res.note else ''} "
                f"{res.seconds:.1f} s")
        failed = [s for s in check.settings if results[(id(case), s)].status == "FAIL"]
        if failed and not check.args.no_compare:
            run_again(check, case, prog, failed)


def run_all(check, repo, env, logdir):
    """The cases across host namespaces made for them and torn down after; False if
    interrupted."""
    conf = os.path.join(logdir, "netns.conf")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        setup_hosts(repo, check.args.hosts, logdir, env)
        hosts = launcher.Hosts.from_conf(conf)
        env.update(hosts.env())
        check.runner = Runner(check.args, env, hosts, logdir)
        run_cases(check)
    except KeyboardInterrupt:
        log("interrupted")
        return False
    finally:
        teardown_hosts(repo, conf)
    return True


# ---------------------------------------------------------------- the table
def case_cells(check, case):
    """The cells of a case that was not skipped, and how many of its settings passed and
    failed."""
    cells, npass, nfail = [], 0, 0
    for s in check.settings:
        r = check.results.get((id(case), s))
        if r is None:
            cells.append("not run")
            continue
        npass += r.status == "pass"
        nfail += r.status == "FAIL"
        cells.append(r.status + (f" ({r.note})" if r.note else "") +
                     ("" if r.status != "pass" else
                      f", btl-ofi {r.ofi_ranks}/{case.ranks} on {r.ofi_nodes}"))
    for c in ([] if check.args.no_compare else check.compare):
        r = check.results.get((id(case), c))
        cells.append("" if r is None else r.status + (f" ({r.note})" if r.note else ""))
    return cells, npass, nfail


def print_table(check, heading):
    """The table, a row per case; the numbers passed, failed and skipped."""
    heads = {"default": "defaults", "intrinsic": "acc_single_intrinsic"}
    cols = [heads[s] for s in check.settings] + \
        ([] if check.args.no_compare else [f"failed: again {check.compare[c]}"
                                           for c in check.compare])
    print()
    print(heading)
    print()
    print("| test | ranks | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---|" * len(cols))
    npass = nfail = nskip = 0
    for case in check.cases:
        ranks = str(case.ranks) if case.ranks else "-"
        if case.ranks and not case.skip:
            _, spread = check.runner.hosts_for(case.ranks, check.byname[case.program].shared)
            ranks += f" ({spread})" if spread else ""
        if case.skip:
            nskip += 1
            cells = [f"skipped: {case.skip}"] + [""] * (len(cols) - 1)
        else:
            cells, p, f = case_cells(check, case)
            npass, nfail = npass + p, nfail + f
        print(f"| {case.label} | {ranks} | " + " | ".join(cells) + " |")
    return npass, nfail, nskip


def print_failures(check):
    """Each failure: its note, log and output's tail, and the runs without btl-ofi."""
    results, settings = check.results, check.settings
    fails = [(c, s, results[(id(c), s)]) for c in check.cases for s in settings
             if (id(c), s) in results and results[(id(c), s)].status == "FAIL"]
    for case, s, r in fails:
        if s == "intrinsic" and ("default" in settings and
                                 results[(id(case), "default")].status == "FAIL"):
            print(f"\n---- FAIL {case.label} ({case.ranks} ranks, intrinsic): {r.note}; "
                  f"log {r.log}")
            continue
        print(f"\n---- FAIL {case.label} ({case.ranks} ranks, {s}): {r.note}; log {r.log}")
        print(r.tail)
        for c, what in check.compare.items():
            p = results.get((id(case), c))
            if p is not None:
                print(f"  again, {what}: {p.status}{' (' + p.note + ')' if p.note else ''}"
                      f"; log {p.log}")


def main():
    repo, env_file, tests, version = sys.argv[1:5]
    tests = Path(tests)
    os.environ["BTL_OFI_ENV_FILE"] = env_file
    compare = compare_labels()
    args = parse_args(sys.argv[5:])
    env = launcher.mpi_env()
    envfile = launcher.load_env_file()
    settings = (["intrinsic"] if args.intrinsic_only else
                ["default", "intrinsic"] if args.intrinsic else ["default"])
    only = re.compile(args.only) if args.only else None
    check = Check(args, settings, compare)

    prepare(check, env, tests, version, envfile, only)
    if args.build_only:
        for c in check.cases:
            print(f"{c.label:60s} {c.ranks or '-':>3}  {'skipped: ' + c.skip if c.skip else 'run'}")
        return 0

    logdir = args.log_dir or tempfile.mkdtemp(prefix="check-mpich-rma.", dir="/tmp")
    os.makedirs(logdir, exist_ok=True)
    ompi = envfile.get('BTL_OFI_OMPI_VERSION', '?')
    log(f"logs in {logdir}; Open MPI {ompi} from {env_file}, "
        f"component {launcher.component_name()}, settings: {', '.join(settings)}")
    if not run_all(check, repo, env, logdir):
        return 130
    npass, nfail, nskip = print_table(
        check, f"# MPICH {version} test/mpi/rma, accumulate-type tests; Open MPI {ompi} "
        f"({env_file}); osc/rdma over btl self,tcp,{launcher.component_name()}, tcp;ofi_rxm, "
        f"{args.hosts} host namespaces")
    print_failures(check)
    print(f"\n{npass} passed, {nfail} failed ({nskip} skipped); logs in {logdir}")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
