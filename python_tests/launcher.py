"""Launching rank programs under mpirun: environment, command line, lock, timeout.

Every mpirun of the suite goes through run_mpi(): it loads btl-ofi's env file
(so OUR `ofi` component is found before Open MPI's), takes the machine-wide
MPI lock (only 2 cores: suites and benchmarks must never overlap), bounds the
run with a timeout that kills the whole process group, and collects the JSON
lines the ranks wrote.
"""

import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RANK_PROG = HERE / "rank_prog.py"
DEFAULT_ENV_FILE = "/usr/local/share/btl-ofi/btl-ofi-env.sh"
MPI_LOCK = "/tmp/btl-ofi-mpi.lock"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

_EXPORT_RE = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def env_file_path():
    return os.environ.get("BTL_OFI_ENV_FILE", DEFAULT_ENV_FILE)


def load_env_file(path=None):
    """The `export NAME=value` lines of btl-ofi's env file, as a dict."""
    return dict(_env_file(path or env_file_path()))


@functools.lru_cache(maxsize=None)
def _env_file(path):
    exports = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            match = _EXPORT_RE.match(line)
            if match:
                values = shlex.split(match.group(2), comments=True)
                exports[match.group(1)] = values[0] if values else ""
    if "OMPI_MCA_mca_base_component_path" not in exports:
        raise RuntimeError(f"{path} exports no OMPI_MCA_mca_base_component_path")
    return tuple(exports.items())


def component_name():
    """The name btl-ofi's component was built with (BTL_OFI_COMPONENT in its env
    file: "ofirma" standalone, "ofi" in-tree): its MCA parameters and
    performance variables are btl_<name>_*, its verbose lines "btl:<name>: "."""
    return load_env_file().get("BTL_OFI_COMPONENT", "ofi")


def param(name):
    """Full name of one of the component's MCA parameters, e.g. param("mr_mode")."""
    return f"btl_{component_name()}_{name}"


def node_btl():
    """The BTL that carries two-sided traffic within a node: vader (Open MPI 4.1), sm (5.0)."""
    return load_env_file().get("BTL_OFI_NODE_BTL", "vader")


def ompi_major():
    """Major version of the Open MPI the component was built for (4, 5 or 6)."""
    return int(load_env_file().get("BTL_OFI_OMPI_VERSION", "4").split(".")[0])


# btl-ofi's verbose line where btl_<c>_wake set up a network module's io_uring poll
# (btl_ofi_wake.c), and where io_uring_setup was refused (the pace alone)
WAKE_LINE = "until an io_uring poll of its descriptor completes"
WAKE_REFUSED = "no io_uring here"


def wake_counts_fit(armed, reads, on):
    """btl-ofi's cq_wake_armed and cq_wake_reads (deltas) as wake on or off says: on, armed
    and woken, at most one read per poll armed; off, neither."""
    return armed > 0 and 0 < reads <= armed if on else armed == reads == 0


@functools.lru_cache(maxsize=None)
def libfabric_major():
    """Major version of the libfabric the ranks load (fi_version() of libfabric.so.1)."""
    import ctypes  # pylint: disable=import-outside-toplevel
    lib = ctypes.CDLL("libfabric.so.1")
    lib.fi_version.restype = ctypes.c_uint32
    return lib.fi_version() >> 16


def default_btls():
    """The BTL list of the suite's jobs: self, the node BTL, and ours."""
    return f"self,{node_btl()},{component_name()}"


def forwarded_env():
    """The env file's variables that ranks started elsewhere (other hosts) need."""
    return [name for name in ("OMPI_MCA_mca_base_component_path",
                              "PMIX_MCA_mca_base_component_path", "BTL_OFI_COMPONENT")
            if name in load_env_file()]


def _clean_base_env():
    """This process's environment minus any Open MPI / libfabric settings that
    would silently change what a case tests."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_MCA_", "PMIX_", "OMPI_COMM_", "FI_"))}
    env.update(ROOT_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclasses.dataclass
class Launch:
    """Everything one mpirun produced; judged only in outcome.py."""
    argv: list
    returncode: int | None  # None when killed by our timeout
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    records: list  # JSON objects the ranks wrote, in order
    timeout: float
    plan_ids: list = dataclasses.field(default_factory=list)
    check_ids: list = dataclasses.field(default_factory=list)  # what the driver asked for
    lock_wait: float = 0.0  # seconds spent waiting for the machine-wide MPI lock
    declined_reason: str = ""  # set when the launch was not run: provider declined

    @classmethod
    def not_run(cls, declined_reason):
        return cls(argv=[], returncode=None, timed_out=False, seconds=0.0, stdout="",
                   stderr="", records=[], timeout=0.0, declined_reason=declined_reason)

    def rank_pids(self):
        """The ranks' process ids, from the start record (rank_prog.py), rank by rank."""
        start = [r for r in self.records if r.get("type") == "start"]
        return start[0].get("pids", []) if start else []

    def plan_index(self, check_id):
        return self.plan_ids.index(check_id) if check_id in self.plan_ids else -1

    @property
    def signal_name(self):
        """The signal that ended the job (mpirun's 128+N convention or -N)."""
        rc = self.returncode
        if rc is None:
            return None
        num = -rc if rc < 0 else (rc - 128 if 128 < rc < 160 else None)
        if num is None:
            return None
        try:
            return signal.Signals(num).name
        except ValueError:
            return f"signal {num}"

    def command_line(self):
        return " ".join(shlex.quote(a) for a in self.argv)

    def tail(self, stream="stderr", lines=25):
        text = getattr(self, stream)
        return "\n".join(text.strip().splitlines()[-lines:])

    def backtrace(self, lines=40):
        """The first backtrace Open MPI's signal handler printed ("Process received
        signal" to "End of error message"), whole: a tail would cut off the frames
        nearest the fault. Empty where there is none."""
        out, inside = [], False
        for line in self.stderr.splitlines():
            if not inside and "Process received signal" in line:
                inside = True
            if inside:
                out.append(line)
                if "End of error message" in line or len(out) >= lines:
                    break
        return "\n".join(out)


@dataclasses.dataclass(frozen=True)
class Hosts:
    """Ranks on other "hosts": the network namespaces scripts/check-multihost.sh
    makes (`--setup-only` writes their description, netns.conf, as KEY=VALUE
    lines). mpirun runs in the hub namespace and starts one daemon (orted, prted) per
    host namespace through scripts/netns-rsh as its ssh agent, which looks the
    hostfile's addresses up in the netns map. Open MPI's own TCP is kept to the
    subnet, the libfabric tcp/sockets providers to the namespaces' interface."""
    hub: str                # network namespace mpirun runs in
    namespaces: tuple       # host namespaces, one slot each
    nodes: tuple            # their node names (each has a UTS namespace of its own)
    ips: tuple
    hostfile: str
    netns_map: str
    agent: str
    subnet: str
    iface: str
    conf: str = ""
    ifaces: tuple = ()      # every NIC of a host (check-multihost.sh --nics N), iface first
    subnets: tuple = ()     # their subnets, in the same order

    @classmethod
    def from_conf(cls, path):
        values = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, value = line.split("=", 1)
                    values[key.strip()] = value.strip()
        missing = [k for k in ("hub", "namespaces", "nodes", "ips", "hostfile", "netns_map",
                               "agent", "subnet", "iface") if not values.get(k)]
        if missing:
            raise RuntimeError(f"{path}: no {', '.join(missing)}")
        return cls(hub=values["hub"], namespaces=tuple(values["namespaces"].split()),
                   nodes=tuple(values["nodes"].split()), ips=tuple(values["ips"].split()),
                   hostfile=values["hostfile"], netns_map=values["netns_map"],
                   agent=values["agent"], subnet=values["subnet"], iface=values["iface"],
                   conf=str(path),
                   ifaces=tuple(values.get("ifaces", "").split()) or (values["iface"],),
                   subnets=tuple(values.get("subnets", "").split()) or (values["subnet"],))

    def env(self):
        """What the agent and the providers need in mpirun's environment: the providers
        kept to the one NIC, unless the hosts have several (then btl-ofi's
        domain_include names them)."""
        env = {"NETNS_RSH_MAP": self.netns_map}
        if len(self.ifaces) <= 1:
            env.update(FI_TCP_IFACE=self.iface, FI_SOCKETS_IFACE=self.iface)
        return env

    def argv_prefix(self, nranks):
        """`ip netns exec HUB mpirun -np N` with the hostfile, agent and network
        restrictions (no --oversubscribe: one slot per host namespace)."""
        return ["ip", "netns", "exec", self.hub, "mpirun", "-np", str(nranks),
                "--hostfile", self.hostfile, "--bind-to", "none",
                *remote_launch_args(self.agent, self.subnet),
                "--mca", "btl_tcp_if_include", self.subnet,
                *[arg for name in forwarded_env() for arg in ("-x", name)],
                *[arg for name in ("FI_TCP_IFACE", "FI_SOCKETS_IFACE") if name in self.env()
                  for arg in ("-x", name)],
                "-x", "PYTHONUNBUFFERED", "-x", "PYTHONDONTWRITEBYTECODE"]


def remote_launch_args(agent, subnet):
    """mpirun's arguments to start its daemons on the "hosts" through `agent` (an ssh
    stand-in) with no tree spawn, their out-of-band TCP kept to `subnet`: ORTE's
    plm_rsh_* and oob_tcp_* (Open MPI 4.1), PRRTE's plm_ssh_* and oob_tcp_* (5.0 on)."""
    if ompi_major() >= 5:
        return ["--prtemca", "plm_ssh_agent", agent, "--prtemca", "plm_ssh_no_tree_spawn", "1",
                "--prtemca", "oob_tcp_if_include", subnet]
    return ["--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "oob_tcp_if_include", subnet]


def extra_mca():
    """MCA parameters for every mpirun of the suite (pytest --mca, or BTL_OFI_TEST_MCA:
    whitespace-separated NAME=VALUE), e.g. osc_rdma_acc_single_intrinsic=true to run the
    checks under a setting; a test's own value for the same name wins."""
    pairs = {}
    for item in os.environ.get("BTL_OFI_TEST_MCA", "").split():
        name, sep, value = item.partition("=")
        if not sep or not name or not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise RuntimeError(f"BTL_OFI_TEST_MCA: '{item}' is not NAME=VALUE")
        pairs[name] = value
    return pairs


def mpirun_argv(nranks, provider=None, mca=None, osc="rdma", btl=None,
                program=None, program_args=(), verbose=True, native=False, hosts=None,
                ours=None, forward=()):
    """mpirun command line; program is a Python script unless native (an executable).
    mca: MCA parameters by full name; ours: the component's own, by the name after
    btl_<component>_ (e.g. {"completion": "read_proof"}). btl: default_btls().
    hosts (a Hosts): one rank per host namespace, launched from the hub.
    forward: environment variables passed to the ranks with -x."""
    if hosts is None:
        argv = ["mpirun", "-np", str(nranks), "--oversubscribe", "--bind-to", "none"]
    else:
        argv = hosts.argv_prefix(nranks)
    argv += ["--mca", "pml", "ob1", "--mca", "btl", btl or default_btls(), "--mca", "osc", osc]
    for name in forward:
        argv += ["-x", name]
    if provider is not None:
        argv += ["--mca", param("provider_include"), provider]
    for name, value in (ours or {}).items():
        argv += ["--mca", param(name), str(value)]
    for name, value in (mca or {}).items():
        argv += ["--mca", name, str(value)]
    given = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--mca"}
    for name, value in extra_mca().items():
        if name not in given:
            argv += ["--mca", name, value]
    if verbose:
        # prints "btl:<component>: selected provider ..., mr_mode ..." on every rank
        argv += ["--mca", "btl_base_verbose", "10"]
    argv += ([] if native else [sys.executable]) + [str(program or RANK_PROG), *program_args]
    return argv


def _read_records(path):
    records = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                records.append({"type": "garbled", "text": line[:200]})
    return records


def run_mpi(nranks, plan, timeout, provider=None, mca=None, osc="rdma",
            btl=None, env_overrides=None, workdir=None, verbose=True, hosts=None, ours=None,
            netns=None):
    """Run rank_prog.py on `plan` (a JSON-able dict) and return a Launch.

    env_overrides replaces variables of the env file (e.g. a component path
    that loads only Open MPI's stock components); those named FI_* and LD_PRELOAD
    also reach ranks on other hosts (-x). hosts: see mpirun_argv.
    netns: run mpirun and all ranks inside this network namespace (ip netns exec)."""
    env = mpi_env(env_overrides)
    if hosts is not None:
        env.update(hosts.env())
    workdir = Path(workdir or tempfile.mkdtemp(prefix="btl-ofi-case-"))
    workdir.mkdir(parents=True, exist_ok=True)
    plan_path = workdir / "plan.json"
    report_path = workdir / "report.jsonl"
    if report_path.exists():
        report_path.unlink()
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    argv = mpirun_argv(nranks, provider, mca, osc, btl,
                       program_args=[str(plan_path), str(report_path)], verbose=verbose,
                       hosts=hosts, ours=ours,
                       forward=[k for k in (env_overrides or {})
                                if k.startswith("FI_") or k == "LD_PRELOAD"])
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    run = run_argv(argv, timeout, env, workdir)
    return Launch(argv=argv, returncode=run.returncode, timed_out=run.timed_out,
                  seconds=run.seconds, stdout=run.stdout, stderr=run.stderr,
                  records=_read_records(report_path), timeout=timeout,
                  plan_ids=[c["id"] for c in plan.get("checks", [])], lock_wait=run.lock_wait)


@dataclasses.dataclass
class Run:
    """What run_argv saw: returncode is None after a timeout."""
    returncode: object
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    lock_wait: float
    flooded: bool = False    # killed for writing more than max_output bytes


def mpi_env(env_overrides=None):
    """A clean environment with btl-ofi's env file applied (ours loads first)."""
    env = _clean_base_env()
    env.update(load_env_file())
    env.update(env_overrides or {})
    return env


def run_argv(argv, timeout, env, workdir, take_lock=True, max_output=None):
    """Run argv in its own session, bounded by timeout (the whole process group
    is killed then), holding the machine-wide MPI lock unless the command takes
    it itself for each of its own mpiruns (take_lock=False). max_output: bytes of
    stdout + stderr after which the run is killed as flooded (a program printing
    an error per element) and only the start and end of each stream are kept."""
    if max_output:
        return _run_capped(argv, timeout, env, workdir, take_lock, max_output)
    with _mpi_lock(take_lock) as asked:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            dump_rank_stacks(proc.pid)
            _kill_group(proc)
            out, err = proc.communicate()
        except BaseException:
            _kill_group(proc)  # interrupted (end_jobs_on_sigterm): the job goes too
            raise
        seconds = time.monotonic() - start
    return Run(returncode=None if timed_out else proc.returncode, timed_out=timed_out,
               seconds=seconds, stdout=out, stderr=err, lock_wait=start - asked)


@contextlib.contextmanager
def _mpi_lock(take_lock):
    """The machine-wide MPI lock held for the block (unless take_lock is False); yields the
    time it was asked for."""
    with open(MPI_LOCK, "a+") as lock:
        asked = time.monotonic()
        if take_lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield asked


def _run_capped(argv, timeout, env, workdir, take_lock, max_output):
    """run_argv with the streams in files, watched for size."""
    with _mpi_lock(take_lock) as asked, tempfile.TemporaryFile(dir=workdir) as fo, \
            tempfile.TemporaryFile(dir=workdir) as fe:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=fo, stderr=fe,
                                start_new_session=True)
        try:
            timed_out, flooded = _watch(proc, start, timeout, fo, fe, max_output)
        except BaseException:
            _kill_group(proc)  # interrupted (end_jobs_on_sigterm): the job goes too
            raise
        seconds = time.monotonic() - start
        out, err = _head_tail(fo, max_output // 2), _head_tail(fe, max_output // 2)
    return Run(returncode=None if timed_out or flooded else proc.returncode,
               timed_out=timed_out, seconds=seconds, stdout=out, stderr=err,
               lock_wait=start - asked, flooded=flooded)


def _head_tail(fh, keep):
    """A stream's text: all of it, or its first and last keep/2 bytes around a marker."""
    size = os.fstat(fh.fileno()).st_size
    fh.seek(0)
    if size <= keep:
        return fh.read().decode(errors="replace")
    head = fh.read(keep // 2)
    fh.seek(size - keep // 2)
    return (head.decode(errors="replace") + f"\n[... {size - keep} bytes left out ...]\n" +
            fh.read().decode(errors="replace"))


def _descendants(pid):
    """Every process below pid (ranks may sit in their own process groups)."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


LAUNCHERS = {"mpirun", "orterun", "orted", "prterun", "prted", "prte"}


def _comm(proc):
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""


def dump_rank_stacks(pid):
    """Before a timed-out launch is killed: every rank below pid (a process with libmpi
    mapped, not a launcher) told on standard error, which pytest shows with the failure:
    each thread's system call and kernel wait (/proc), and its stack where gdb is there.
    The ranks of other hosts sit below daemons that left mpirun's tree (orted daemonizes
    under plm rsh): those below any Open MPI daemon count too (the MPI lock keeps launches
    apart)."""
    daemons = [int(entry.name) for entry in Path("/proc").iterdir()
               if entry.name.isdigit() and _comm(entry) in LAUNCHERS]
    ranks = set(_descendants(pid))
    for daemon in daemons:
        ranks.update(_descendants(daemon))
    for rank in sorted(ranks):
        proc = Path(f"/proc/{rank}")
        comm = _comm(proc)
        try:
            if comm in LAUNCHERS or "libmpi.so" not in (proc / "maps").read_text():
                continue
        except OSError:
            continue
        print(f"==== timed out: rank process {rank} ({comm}) ====", file=sys.stderr)
        for task in sorted(proc.glob("task/*"), key=lambda t: int(t.name)):
            try:
                print(f"  thread {task.name}: wchan {(task / 'wchan').read_text()}, "
                      f"syscall {(task / 'syscall').read_text().strip()}", file=sys.stderr)
            except OSError:
                pass
        gdb = shutil.which("gdb")
        if gdb:
            try:
                stacks = subprocess.run(
                    [gdb, "-p", str(rank), "-batch", "-nx", "-ex", "thread apply all bt 30"],
                    capture_output=True, text=True, errors="replace", timeout=60).stdout
            except subprocess.TimeoutExpired:
                stacks = "(gdb took over 60 s)\n"
            print("".join(line + "\n" for line in stacks.splitlines()
                          if line.startswith(("Thread ", "#"))), file=sys.stderr, end="")
        sys.stderr.flush()


def _watch(proc, start, timeout, fo, fe, max_output):
    """Wait for proc, killing it past timeout or max_output bytes in fo + fe;
    (timed_out, flooded)."""
    pause = 0.01
    while proc.poll() is None:
        if time.monotonic() - start > timeout:
            dump_rank_stacks(proc.pid)
            _kill_group(proc)
            proc.wait()
            return True, False
        if os.fstat(fo.fileno()).st_size + os.fstat(fe.fileno()).st_size > max_output:
            _kill_group(proc)
            proc.wait()
            return False, True
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    return False, False


def end_jobs_on_sigterm():
    """Make SIGTERM (a CI job's timeout, `kill`) raise KeyboardInterrupt as Ctrl-C does, so
    that run_argv ends the job it waits for: each job runs in a session of its own, which
    neither signal reaches, and its ranks would spin on after the test run."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
    signal.signal(signal.SIGTERM, interrupt)


def _kill_group(proc):
    """End the mpirun we started and every process below it: TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        targets = _descendants(proc.pid)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in targets:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue
