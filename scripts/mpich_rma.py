"""check-mpich-rma.sh's program: MPICH's test/mpi/rma tests that call an accumulate-type
operation, selected, built with Open MPI's mpicc and run across host namespaces through
osc/rdma and btl-ofi (scripts/check-mpich-rma.sh's comment says what and how).

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
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO, ENV_FILE, TESTS, VERSION = sys.argv[1:5]
TESTS = Path(TESTS)
RMA = TESTS / "rma"
os.environ["BTL_OFI_ENV_FILE"] = ENV_FILE
sys.path.insert(0, os.path.join(REPO, "python_tests"))
import launcher  # noqa: E402

OPS = ("MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap",
       "MPI_Raccumulate", "MPI_Rget_accumulate")
CALL_RE = re.compile(r"\b(" + "|".join(OPS) + r")\s*\(")
SHARED_RE = re.compile(r"\bMPI_Win_allocate_shared\s*\(")
DYNAMIC_RE = re.compile(r"\bMPI_Win_create_dynamic\s*\(")
FLAVOR_RES = {"create": re.compile(r"\bMPI_Win_create\s*\("),
              "allocate": re.compile(r"\bMPI_Win_allocate\s*\("),
              "shared": SHARED_RE, "dynamic": DYNAMIC_RE}
# A test that prints an error line per element can write gigabytes: such a run is
# stopped there (a failure), and its log keeps the start and the end of the output.
MAX_OUTPUT = 16 << 20
LINEMARK_RE = re.compile(r'^# (\d+) "([^"]*)"')
DTP_TYPES = ("MPI_INT", "MPI_INT:4+MPI_DOUBLE:8")  # test/mpi/configure.ac's default
# Programs whose accumulate-type calls all go to an MPI_Win_allocate_shared window of one
# node's ranks (osc/sm): never through btl-ofi (read from their sources, MPICH 4.0.2)
SHARED_ONLY = {
    "strided_getacc_indexed_shared": "its MPI_Get_accumulate goes to an MPI_Win_allocate_shared "
                                     "window of one node's ranks (osc/sm), never through btl-ofi",
    "mutex_bench_shared": "its mutex (MPI_Fetch_and_op, MPI_Compare_and_swap) lives in an "
                          "MPI_Win_allocate_shared window of one node's ranks (osc/sm), never "
                          "through btl-ofi",
}
DTP_SMALL = 1018  # counts of the first line of each rma test in dtp-test-config.txt

MPITESTCONF = """\
/* written by btl-ofi's scripts/check-mpich-rma.sh instead of test/mpi/configure:
   the macros MTest and the rma tests read, as configure finds them on Linux/glibc */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_MPI_WIN_CREATE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
/* configure --enable-strictmpi, for an MPI that is not MPICH: no MPICH-only checks */
#define USE_STRICT_MPI 1
#endif
"""
# DTPools' dtpools_custom.c uses two MPI-1 names that MPI-3.0 removed; Open MPI 4.1's
# mpi.h makes them a static assertion. The MPI_Type_create_* calls take the same arguments.
MPI1_COMPAT = """\
#include <mpi.h>
#undef MPI_Type_hvector
#undef MPI_Type_hindexed
#define MPI_Type_hvector MPI_Type_create_hvector
#define MPI_Type_hindexed MPI_Type_create_hindexed
"""


def log(msg):
    print(f"check-mpich-rma: {msg}", flush=True)


def parse_args():
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
    args = p.parse_args(sys.argv[5:])
    if not 2 <= args.hosts <= 4:
        p.error("--hosts takes 2, 3 or 4")
    return args


# ---------------------------------------------------------------- Makefile.am, testlist
@dataclasses.dataclass
class Program:
    name: str
    sources: list
    cppflags: list
    ldadd: list
    condition: str = ""          # an automake conditional it is built under
    calls: tuple = ()            # accumulate-type operations its source calls
    shared: bool = False         # it makes an MPI_Win_allocate_shared window
    dynamic: bool = False        # it makes an MPI_Win_create_dynamic window
    flavors: tuple = ()          # the window flavors its own source makes
    skip: str = ""               # why it is not run (set while selecting or building)
    binary: Path = None


def parse_makefile_am(path):
    text = path.read_text().replace("\\\n", " ")
    names, values, cond = [], {}, ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"if\s+(!?\w+)$", line)
        if m:
            cond = m.group(1)
            continue
        if line in ("endif", "else"):
            cond = "" if line == "endif" else "!" + cond
            continue
        m = re.match(r"([A-Za-z_0-9]+)\s*(\+?=)\s*(.*)$", line)
        if not m:
            continue
        key, op, val = m.groups()
        if key == "noinst_PROGRAMS":
            names += [(n, cond) for n in val.split()]
        else:
            values[key] = (values.get(key, "") + " " + val) if op == "+=" else val
    progs = []
    for name, c in names:
        sources = values.get(f"{name}_SOURCES", f"{name}.c").split()
        progs.append(Program(
            name=name, sources=[s for s in sources if s.endswith(".c")],
            cppflags=values.get(f"{name}_CPPFLAGS", "").replace("$(AM_CPPFLAGS)", "").split(),
            ldadd=values.get(f"{name}_LDADD", "").replace("$(LDADD)", "").split(),
            condition=c))
    return progs


@dataclasses.dataclass
class Case:
    program: str
    ranks: int
    args: list
    time_limit: float = 0
    env: list = dataclasses.field(default_factory=list)
    skip: str = ""

    @property
    def label(self):
        return " ".join([self.program] + self.args)


def parse_testlist(path):
    cases = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        skip = ""
        if line.startswith("@largetest@"):
            line = line[len("@largetest@"):]
            skip = "a large test (MPICH runs it only when configured with --enable-large-tests)"
        elif line.startswith("@"):
            skip = f"conditional in MPICH's configure ({line.split('@')[1]})"
            line = line.split("@", 2)[2]
        words = line.split()
        case = Case(program=words[0], ranks=int(words[1]), args=[], skip=skip)
        for word in words[2:]:
            key, _, val = word.partition("=")
            if key == "arg":
                case.args.append(val)
            elif key == "timeLimit":
                case.time_limit = float(val)
            elif key == "env":
                case.env.append(val)
            elif key == "xfail":
                case.skip = case.skip or f"MPICH expects it to fail (xfail={val})"
            elif key == "mpiversion":
                pass  # every selected test is MPI-3; Open MPI 4.1 is MPI 3.1
        cases.append(case)
    return cases


def dtp_cases(config, mode):
    """test/mpi/maint/gentests_dtp.sh: one line per type and count of each config line,
    the seed counting up from 1 over the whole file (every directory), so the rma lines
    get the seeds MPICH's own testlist.dtp has."""
    cases, seed = [], 1
    for raw in config.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        f = raw.split(":")
        pathname, extra, counts, passthru, procs = f[0], f[1].split(), f[2].split(), f[3], f[4]
        mintest = int(f[5])
        maxtest = int(f[6]) if len(f) > 6 and f[6] else mintest
        testdir, testname = os.path.split(pathname)
        time_limit = 0
        for word in passthru.split():
            if word.startswith("timeLimit="):
                time_limit = float(word.split("=", 1)[1])
        for dtype in DTP_TYPES:
            testsize, first = 0, 0
            for count in counts:
                c = int(count)
                if testsize == 0:
                    testsize, first = maxtest, c
                else:
                    testsize = max(mintest, min(maxtest, testsize * first // c))
                nlines = 2 if testdir in ("pt2pt", "part") else 1
                for _ in range(nlines):
                    if testdir == "rma":
                        case = Case(program=testname, ranks=int(procs),
                                    args=[f"-type={dtype}", f"-count={c}", f"-seed={seed}",
                                          f"-testsize={testsize}"] + extra,
                                    time_limit=time_limit)
                        if mode == "none":
                            case.skip = "a DTPools test (--dtp none)"
                        elif mode == "small" and c > DTP_SMALL:
                            case.skip = f"count {c} (--dtp all runs it)"
                        cases.append(case)
                    seed += 1
    return cases


# ---------------------------------------------------------------- build
class Build:
    def __init__(self, env, rebuild):
        self.env = env
        self.mpicc = shutil.which("mpicc", path=env.get("PATH"))
        if not self.mpicc:
            sys.exit(f"check-mpich-rma: no mpicc in PATH={env.get('PATH')}")
        show = subprocess.run([self.mpicc, "--showme"], env=env, capture_output=True,
                              text=True).stdout.strip()
        key = hashlib.sha256(f"{os.path.realpath(self.mpicc)}\n{show}\n{VERSION}".encode())
        self.dir = Path(f"/var/tmp/btl-ofi-mpich-rma-{VERSION}-{key.hexdigest()[:12]}")
        if rebuild and self.dir.exists():
            shutil.rmtree(self.dir)
        (self.dir / "include").mkdir(parents=True, exist_ok=True)
        (self.dir / "dtpools" / "include").mkdir(parents=True, exist_ok=True)
        (self.dir / "bin").mkdir(exist_ok=True)
        (self.dir / "obj").mkdir(exist_ok=True)
        self._write(self.dir / "include" / "mpitestconf.h", MPITESTCONF)
        self._write(self.dir / "dtpools" / "dtpoolsconf.h", "/* nothing needed */\n")
        self._write(self.dir / "mpi1_compat.h", MPI1_COMPAT)
        # dtpools_internal.h includes "../dtpoolsconf.h": found through dtpools/include
        self.incs = ["-I", str(self.dir / "include"), "-I", str(TESTS / "include"),
                     "-I", str(TESTS / "dtpools" / "include"),
                     "-I", str(self.dir / "dtpools" / "include")]
        self.headers = [self.dir / "include" / "mpitestconf.h"] + \
            sorted((TESTS / "include").glob("*.h")) + \
            sorted((TESTS / "dtpools" / "include").glob("*.h"))
        self.lib = self.dir / "libmtest.a"

    @staticmethod
    def _write(path, text):
        if not path.exists() or path.read_text() != text:
            path.write_text(text)

    @staticmethod
    def _stale(target, deps):
        if not target.exists():
            return True
        t = target.stat().st_mtime
        return any(Path(d).stat().st_mtime > t for d in deps)

    def _cc(self, argv):
        r = subprocess.run([self.mpicc] + argv, env=self.env, capture_output=True, text=True,
                           errors="replace")
        return r.returncode, r.stderr

    def library(self):
        units = [(TESTS / "util" / f, []) for f in ("mtest.c", "mtest_common.c", "mtest_single.c")]
        units += [(s, ["-include", str(self.dir / "mpi1_compat.h")]
                   if s.name == "dtpools_custom.c" else [])
                  for s in sorted((TESTS / "dtpools" / "src").glob("*.c"))]
        objs = []
        for src, extra in units:
            obj = self.dir / "obj" / (src.parent.name + "_" + src.stem + ".o")
            if self._stale(obj, [src] + self.headers):
                rc, err = self._cc(["-O2", "-c", *extra, *self.incs, str(src), "-o", str(obj)])
                if rc:
                    sys.exit(f"check-mpich-rma: cannot compile {src}:\n{err[-3000:]}")
            objs.append(obj)
        if self._stale(self.lib, objs):
            self.lib.unlink(missing_ok=True)
            subprocess.run(["ar", "rcs", str(self.lib)] + [str(o) for o in objs], check=True)

    def scan(self, prog):
        """The accumulate-type calls in the program's own preprocessed source."""
        calls, shared, local_text = set(), False, []
        for src in prog.sources:
            r = subprocess.run([self.mpicc, "-E", *prog.cppflags, *self.incs, str(RMA / src)],
                               env=self.env, capture_output=True, text=True, errors="replace")
            if r.returncode:
                raw = (RMA / src).read_text(errors="replace")
                calls |= set(m.group(1) for m in CALL_RE.finditer(raw))
                first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr[:200])
                prog.skip = f"does not preprocess with Open MPI: {first.strip()}"
                continue
            own = False
            for line in r.stdout.splitlines():
                m = LINEMARK_RE.match(line)
                if m:
                    own = os.path.dirname(os.path.abspath(m.group(2))) == str(RMA)
                    continue
                if own:
                    local_text.append(line)
        text = "\n".join(local_text)
        calls |= set(m.group(1) for m in CALL_RE.finditer(text))
        shared = bool(SHARED_RE.search(text))
        prog.calls, prog.shared = tuple(sorted(calls)), shared
        prog.dynamic = bool(DYNAMIC_RE.search(text))
        prog.flavors = tuple(f for f, rx in FLAVOR_RES.items() if rx.search(text))
        return prog

    def compile(self, prog):
        prog.binary = self.dir / "bin" / prog.name
        srcs = [RMA / s for s in prog.sources]
        stamp = self.dir / "bin" / f"{prog.name}.failed"
        if not self._stale(prog.binary, srcs + self.headers + [self.lib]):
            return prog
        if not self._stale(stamp, srcs + self.headers + [self.lib]):
            prog.skip = stamp.read_text().strip()
            return prog
        rc, err = self._cc(["-O2", *prog.cppflags, *self.incs, *map(str, srcs), str(self.lib),
                            "-lm", *prog.ldadd, "-o", str(prog.binary)])
        if rc:
            lines = [l for l in err.splitlines() if "error" in l] or err.splitlines() or ["?"]
            first = re.sub(r"^\S*/", "", lines[0].strip())
            prog.skip = f"does not compile with Open MPI's mpicc: {first}"
            stamp.write_text(prog.skip + "\n")
            prog.binary.unlink(missing_ok=True)
        else:
            stamp.unlink(missing_ok=True)
        return prog


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
COMPARE = {"pt2pt": "osc/pt2pt, btl/tcp",
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


def setup_hosts(n, logdir, env):
    setup = os.path.join(REPO, "scripts", "check-multihost.sh")
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


def teardown_hosts(conf):
    if os.path.isfile(conf):
        r = subprocess.run(["bash", os.path.join(REPO, "scripts", "check-multihost.sh"),
                            "--teardown", conf], capture_output=True, text=True, timeout=120)
        log((r.stdout.strip().splitlines() or ["teardown: no output"])[-1])


def main():
    args = parse_args()
    env = launcher.mpi_env()
    envfile = launcher.load_env_file()
    settings = (["intrinsic"] if args.intrinsic_only else
                ["default", "intrinsic"] if args.intrinsic else ["default"])
    only = re.compile(args.only) if args.only else None

    # ---- select and build
    build = Build(env, args.rebuild)
    log(f"build directory {build.dir} (mpicc {build.mpicc})")
    build.library()
    progs = parse_makefile_am(RMA / "Makefile.am")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(build.scan, progs))
    chosen = [p for p in progs if p.calls]
    log(f"{len(chosen)} of {len(progs)} programs in rma/Makefile.am call an accumulate-type "
        f"operation: {' '.join(p.name for p in chosen)}")
    version = envfile.get("BTL_OFI_OMPI_VERSION", "0")
    vtuple = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    dynamic_hangs = vtuple[:1] == (4,) and vtuple <= (4, 1, 4)
    for p in chosen:
        if p.name in SHARED_ONLY and not p.skip:
            p.skip = SHARED_ONLY[p.name]
        if p.dynamic and dynamic_hangs and not args.with_dynamic and not p.skip:
            p.skip = (f"MPI_Win_create_dynamic: hangs across hosts inside osc/rdma on Open MPI "
                      f"{version} (open-mpi/ompi#10518; --with-dynamic)")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(build.compile, [p for p in chosen if not p.skip]))
    byname = {p.name: p for p in chosen}

    cases = [c for c in parse_testlist(RMA / "testlist.in") if c.program in byname]
    dtp_config = TESTS / "maint" / "dtp-test-config.txt"
    if dtp_config.exists():
        cases += [c for c in dtp_cases(dtp_config, args.dtp) if c.program in byname]
    listed = {c.program for c in cases}
    for p in chosen:
        if p.name not in listed:
            why = (f"built under automake's {p.condition}" if p.condition else
                   "in no testlist: MPICH does not run it")
            cases.append(Case(program=p.name, ranks=0, args=[], skip=f"{why}"))
    for c in cases:
        if "-op=put" in c.args and not c.skip:  # win_dynamic_rma_flush_get picks its operation
            c.skip = "-op=put: puts only, no accumulate-type operation"
    if only:
        cases = [c for c in cases if only.search(c.label)]
    for c in cases:
        p = byname[c.program]
        if not c.skip and p.skip:
            c.skip = p.skip
    if args.build_only:
        for c in cases:
            print(f"{c.label:60s} {c.ranks or '-':>3}  {'skipped: ' + c.skip if c.skip else 'run'}")
        return 0

    # ---- run
    logdir = args.log_dir or tempfile.mkdtemp(prefix="check-mpich-rma.", dir="/tmp")
    os.makedirs(logdir, exist_ok=True)
    log(f"logs in {logdir}; Open MPI {envfile.get('BTL_OFI_OMPI_VERSION', '?')} from {ENV_FILE}, "
        f"component {launcher.component_name()}, settings: {', '.join(settings)}")
    conf = os.path.join(logdir, "netns.conf")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = {}
    try:
        setup_hosts(args.hosts, logdir, env)
        hosts = launcher.Hosts.from_conf(conf)
        env.update(hosts.env())
        runner = Runner(args, env, hosts, logdir)
        torun = [c for c in cases if not c.skip]
        for i, case in enumerate(torun, 1):
            prog = byname[case.program]
            for setting in settings:
                res = runner.run(case, setting, prog)
                results[(id(case), setting)] = res
                log(f"[{i}/{len(torun)}] {case.label} ({case.ranks} ranks, {setting}): "
                    f"{res.status}{' (' + res.note + ')' if res.note else ''} "
                    f"{res.seconds:.1f} s")
            failed = [s for s in settings if results[(id(case), s)].status == "FAIL"]
            if failed and not args.no_compare:
                onenode = "onenode" if "default" in failed else "onenode-intrinsic"
                for setting, what in (("pt2pt", COMPARE["pt2pt"]), (onenode, COMPARE["onenode"])):
                    res = runner.run(case, setting, prog)
                    results[(id(case), setting.split("-")[0])] = res
                    log(f"    again, {what}: {res.status}"
                        f"{' (' + res.note + ')' if res.note else ''} {res.seconds:.1f} s")
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        teardown_hosts(conf)

    # ---- table
    heads = {"default": "defaults", "intrinsic": "acc_single_intrinsic"}
    cols = [heads[s] for s in settings] + \
        ([] if args.no_compare else [f"failed: again {COMPARE[c]}" for c in COMPARE])
    print()
    print(f"# MPICH {VERSION} test/mpi/rma, accumulate-type tests; Open MPI "
          f"{envfile.get('BTL_OFI_OMPI_VERSION', '?')} ({ENV_FILE}); osc/rdma over btl "
          f"self,tcp,{launcher.component_name()}, tcp;ofi_rxm, {args.hosts} host namespaces")
    print()
    print("| test | ranks | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---|" * len(cols))
    npass = nfail = nskip = 0
    for case in cases:
        ranks = str(case.ranks) if case.ranks else "-"
        if case.ranks and not case.skip:
            _, spread = runner.hosts_for(case.ranks, byname[case.program].shared)
            ranks += f" ({spread})" if spread else ""
        if case.skip:
            nskip += 1
            cells = [f"skipped: {case.skip}"] + [""] * (len(cols) - 1)
        else:
            cells = []
            for s in settings:
                r = results.get((id(case), s))
                if r is None:
                    cells.append("not run")
                    continue
                npass += r.status == "pass"
                nfail += r.status == "FAIL"
                cells.append(r.status + (f" ({r.note})" if r.note else "") +
                             ("" if r.status != "pass" else
                              f", btl-ofi {r.ofi_ranks}/{case.ranks} on {r.ofi_nodes}"))
            for c in ([] if args.no_compare else COMPARE):
                r = results.get((id(case), c))
                cells.append("" if r is None else r.status + (f" ({r.note})" if r.note else ""))
        print(f"| {case.label} | {ranks} | " + " | ".join(cells) + " |")
    fails = [(c, s, results[(id(c), s)]) for c in cases for s in settings
             if (id(c), s) in results and results[(id(c), s)].status == "FAIL"]
    for case, s, r in fails:
        if s == "intrinsic" and ("default" in settings and
                                 results[(id(case), "default")].status == "FAIL"):
            print(f"\n---- FAIL {case.label} ({case.ranks} ranks, intrinsic): {r.note}; "
                  f"log {r.log}")
            continue
        print(f"\n---- FAIL {case.label} ({case.ranks} ranks, {s}): {r.note}; log {r.log}")
        print(r.tail)
        for c, what in COMPARE.items():
            p = results.get((id(case), c))
            if p is not None:
                print(f"  again, {what}: {p.status}{' (' + p.note + ')' if p.note else ''}"
                      f"; log {p.log}")
    print(f"\n{npass} passed, {nfail} failed ({nskip} skipped); logs in {logdir}")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
