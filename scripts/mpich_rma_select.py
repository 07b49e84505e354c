"""Which of MPICH's test/mpi/rma tests check-mpich-rma.sh runs: the programs of
rma/Makefile.am (sources, CPPFLAGS, automake conditionals) whose own preprocessed source
calls an accumulate-type operation, the lines of rma/testlist.in that run them and the
DTPools lines test/mpi/maint/gentests_dtp.sh generates, each listed as skipped with why
where MPICH does not run it, it cannot reach btl-ofi, or the options leave it out.
"""

import dataclasses
import os
import re
import subprocess
from pathlib import Path

OPS = ("MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap",
       "MPI_Raccumulate", "MPI_Rget_accumulate")
CALL_RE = re.compile(r"\b(" + "|".join(OPS) + r")\s*\(")
SHARED_RE = re.compile(r"\bMPI_Win_allocate_shared\s*\(")
DYNAMIC_RE = re.compile(r"\bMPI_Win_create_dynamic\s*\(")
FLAVOR_RES = {"create": re.compile(r"\bMPI_Win_create\s*\("),
              "allocate": re.compile(r"\bMPI_Win_allocate\s*\("),
              "shared": SHARED_RE, "dynamic": DYNAMIC_RE}
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


# ---------------------------------------------------------------- preprocessed sources
def scan(build, prog):
    """The accumulate-type calls in the program's own preprocessed source (mpicc -E with
    build's include directories, the lines of files outside rma/ left out)."""
    rma = build.rma
    calls, shared, local_text = set(), False, []
    for src in prog.sources:
        r = subprocess.run([build.mpicc, "-E", *prog.cppflags, *build.incs, str(rma / src)],
                           env=build.env, capture_output=True, text=True, errors="replace")
        if r.returncode:
            raw = (rma / src).read_text(errors="replace")
            calls |= set(m.group(1) for m in CALL_RE.finditer(raw))
            first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr[:200])
            prog.skip = f"does not preprocess with Open MPI: {first.strip()}"
            continue
        own = False
        for line in r.stdout.splitlines():
            m = LINEMARK_RE.match(line)
            if m:
                own = os.path.dirname(os.path.abspath(m.group(2))) == str(rma)
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


# ---------------------------------------------------------------- selection
def mark_skipped(chosen, version, with_dynamic):
    """Why some of the chosen programs are not run: their accumulates stay in one node's
    shared window, or (Open MPI 4.1.4 and older 4.x, without --with-dynamic) they make
    MPI_Win_create_dynamic windows. version: BTL_OFI_OMPI_VERSION of the env file."""
    vtuple = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    dynamic_hangs = vtuple[:1] == (4,) and vtuple <= (4, 1, 4)
    for p in chosen:
        if p.name in SHARED_ONLY and not p.skip:
            p.skip = SHARED_ONLY[p.name]
        if p.dynamic and dynamic_hangs and not with_dynamic and not p.skip:
            p.skip = (f"MPI_Win_create_dynamic: hangs across hosts inside osc/rdma on Open MPI "
                      f"{version} (open-mpi/ompi#10518; --with-dynamic)")


def select_cases(tests, chosen, dtp, only):
    """The cases of the chosen programs: testlist.in's lines, the DTPools lines (--dtp), a
    skipped line for each program in no testlist; those --only matches, each skipped
    where its program is."""
    rma = tests / "rma"
    byname = {p.name: p for p in chosen}
    cases = [c for c in parse_testlist(rma / "testlist.in") if c.program in byname]
    dtp_config = tests / "maint" / "dtp-test-config.txt"
    if dtp_config.exists():
        cases += [c for c in dtp_cases(dtp_config, dtp) if c.program in byname]
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
    return cases
