"""Host namespaces for the tests (no tests here): made and removed by
scripts/check-multihost.sh (--setup-only / --teardown), ranks placed per host,
and the mixed job that test_node_local.py and test_stripes.py share: two
hosts of two ranks each over tcp;ofi_rxm, each rank's node partner over shm.
The module-scoped fixture of the shared namespaces, netns_hosts, is in
conftest.py."""

import dataclasses
from pathlib import Path

import pytest

import launcher

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "check-multihost.sh"
MAX_HOSTS = 3         # check-multihost.sh --hosts 2|3

# the mixed job: MIXED_PER_HOST ranks on each of two hosts over MIXED_PROVIDER
MIXED_PROVIDER = "tcp;ofi_rxm"
MIXED_PER_HOST = 2
MIXED_NRANKS = 2 * MIXED_PER_HOST


def run_script(args, workdir, timeout=180):
    """check-multihost.sh with args: the launcher.Run."""
    env = launcher.mpi_env()
    env["BTL_OFI_ENV_FILE"] = launcher.env_file_path()
    # the script takes the MPI lock for each of its own mpiruns (none here)
    return launcher.run_argv(["bash", str(SCRIPT), *map(str, args)], timeout, env, workdir,
                             take_lock=False)


def skip_reason(run):
    """The script's reason for exit 77 (no namespaces can be made here)."""
    return next((ln for ln in run.stdout.splitlines() if "SKIP" in ln),
                run.stdout.strip()[-300:] or "no reason given")


def own_hosts(workdir, *setup_args):
    """Host namespaces of the caller's own (check-multihost.sh --setup-only with
    setup_args, e.g. "--hosts", 2, "--nics", 3): yields their Hosts, then removes them
    and checks they are gone. For a pytest fixture: skips where the script does."""
    run = run_script(["--setup-only", *setup_args, "--log-dir", workdir], workdir)
    if run.returncode == 77:
        pytest.skip(skip_reason(run))
    conf = workdir / "netns.conf"
    if run.timed_out or run.returncode != 0 or not conf.exists():
        pytest.fail(f"check-multihost.sh --setup-only failed (exit {run.returncode}):\n"
                    f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}", pytrace=False)
    hosts = launcher.Hosts.from_conf(conf)
    try:
        yield hosts
    finally:
        down = run_script(["--teardown", conf], workdir)
        left = [ns for ns in (hosts.hub, *hosts.namespaces) if Path("/run/netns", ns).exists()]
        assert down.returncode == 0 and "cleanup: removed" in down.stdout and not left, \
            f"namespaces not removed ({left}; exit {down.returncode}):\n{down.stdout}\n" \
            f"{down.stderr}"


def per_host(hosts, workdir, per=MIXED_PER_HOST):
    """hosts with `per` slots on each of the first two: ranks 0-1 on the first, 2-3 on
    the second (mpirun maps by slot)."""
    hostfile = workdir / "hostfile"
    hostfile.write_text("".join(f"{ip} slots={per}\n" for ip in hosts.ips[:2]),
                        encoding="utf-8")
    return dataclasses.replace(hosts, hostfile=str(hostfile))


def run_native(hosts, tmp_path, btls, program, args, timeout, mca=None, ours=None):
    """A harness program of this checkout on the mixed job's ranks over its provider:
    the launcher.Run."""
    argv = launcher.mpirun_argv(MIXED_NRANKS, MIXED_PROVIDER, mca, "rdma", btls,
                                program=REPO / program, program_args=args, native=True,
                                hosts=hosts, ours=ours)
    env = launcher.mpi_env()
    env.update(hosts.env())
    return launcher.run_argv(argv, timeout, env, tmp_path)


def run_mixed(hosts, tmp_path, wake, program, args, timeout=300, ours=None, nics=1):
    """A harness program on the mixed job's ranks, each rank's node partner over shm and
    the other two over tcp (nics: the NICs each rank uses for them), wake as given: it
    must pass, every rank carry its node over shm, and the io_uring poll be set up where
    wake=1 (and io_uring is there) only, on each NIC."""
    run = run_native(hosts, tmp_path, f"self,{launcher.node_btl()},tcp,"
                     f"{launcher.component_name()}", program, args, timeout,
                     ours={"wake": wake, **(ours or {})})
    text = run.stdout + run.stderr
    assert not run.timed_out and run.returncode == 0 and "RESULT PASSED" in run.stdout, \
        f"{program} exit {run.returncode}{' (timed out)' if run.timed_out else ''}:\n" \
        f"{run.stdout[-2500:]}\n{run.stderr[-2500:]}"
    assert text.count("peers on this node over shm") == MIXED_NRANKS, \
        f"not every rank carried its node over shm:\n{text[-2000:]}"
    wake_line, refused = launcher.WAKE_LINE, launcher.WAKE_REFUSED
    assert text.count(wake_line) == (MIXED_NRANKS * nics if wake and refused not in text
                                     else 0), \
        f"wake={wake}: {text.count(wake_line)} NICs set up an io_uring poll " \
        f"({MIXED_NRANKS} ranks x {nics}):\n{text[-2000:]}"
    return run
