"""btl-ofi beyond one host, on one machine: network namespaces as hosts.

scripts/check-multihost.sh makes a hub namespace (a bridge, 10.77.0.1/24,
where mpirun runs) and 2-3 host namespaces (a veth each, 10.77.0.11-13, node
names mh-h1..3 in UTS namespaces of their own); mpirun starts its daemons in
them through scripts/netns-rsh (the ssh agent). Two kinds of tests:

- test_programs_across_namespaces: the script runs osc_demo,
  osc_flush_visibility and a short osc_stress across its own namespaces over
  tcp;ofi_rxm and sockets (--no-conformance: the suite below runs here).
- the one-sided conformance suite across namespaces: the fast launch groups
  of test_conformance (matrix.groups) with at most 3 ranks, their rank_prog.py
  plans unchanged, one rank per namespace, btl self,tcp,ofi (the ranks are not
  node-local), judged by outcome.py like the single-host suite, plus proof
  that every rank selected the provider on the namespace's veth from a node
  of its own, that every such veth sent bytes during the launch and that no
  process outlived the job. The namespaces come from conftest.py's netns_hosts
  (BTL_OFI_NETNS's, or a module's own made and removed by check-multihost.sh).

Across hosts osc/rdma serves Win.Allocate windows of remote peers through the
BTL as well (on one node it uses its shared segment and no BTL), so those
checks are judged like Win.Create windows (counters must move; the upstream
limitations behind the strict xfails of the BTL atomic path apply to them
too). Checks on MPI_Win_create_dynamic windows hang across hosts with Open MPI
4.1.4 and are excluded there, each as a skip with the reason (--multihost-dynamic
runs them, in launches of their own); Open MPI 5.0 runs them (exact).

--multihost-profiles adds the launch groups of ofi_strictmr's NIC profiles (verbs-,
efa-, cxi-, psm3-like over tcp;ofi_rxm) at 2 and 3 ranks, with their libfabric
variables, their strict xfails as on one host for that provider, and the
provider's report judged (no violation, every behaviour of the profile happened).

Opt-in (-m multihost). Exit 77 of the script (no namespaces here: not root, no
iproute2, a sandbox without CAP_SYS_ADMIN, no veth/bridge) is a skip with the
script's reason.
"""

import dataclasses
import os
import re
import subprocess
import time

import pytest

import check_sets
import fabric
import launcher
import matrix
import netns
import outcome

pytestmark = pytest.mark.multihost

DEFAULT_PROVIDERS = ("tcp;ofi_rxm", "sockets")
# ranks on different hosts: tcp, not the node BTL
def btls(per_host=1):
    node = f"{launcher.node_btl()}," if per_host > 1 else ""
    return f"self,{node}tcp,{launcher.component_name()}"


MAX_HOSTS = netns.MAX_HOSTS
STRIPE_MIN = 4096     # --multihost-nics N: puts and gets from this size are striped
DYNAMIC_EXCLUDED = (
    "excluded across hosts: MPI_Win_create_dynamic windows hang inside osc/rdma "
    "(ompi_osc_rdma_find_dynamic_region) with Open MPI 4.1.4, with the stock btl/ofi too; "
    "most likely open-mpi/ompi#10518, fixed upstream after 4.1.4 (--multihost-dynamic runs them)")
ALLOCATE_NOTE = ("; across hosts osc/rdma serves Win.Allocate windows through the BTL too, "
                 "so it applies to them")

def selected_line_re():
    return re.compile(
        rf"^\[(?P<node>[^\]:]+):(?P<pid>\d+)\] btl:{re.escape(launcher.component_name())}: "
        r"selected provider (?P<provider>.+?) "
        r"\(fabric (?P<fabric>[^,]+), domain (?P<domain>[^)]+)\)", re.M)


# ---------------------------------------------------------------- what runs

def run_dynamic(config):
    """Checks on dynamic windows run (in launches of their own): asked, or Open MPI 5.0."""
    return config.getoption("--multihost-dynamic") or launcher.ompi_major() >= 5


def is_dynamic(spec):
    return spec.get("flavor") == "dynamic" or spec["kind"] == "dynamic_regions"


def cross_host_view(spec):
    """The spec as outcome/matrix must judge it across hosts: a Win.Allocate
    window is reached through the BTL like a Win.Create one. (The plan keeps
    the original spec: the ranks still allocate their windows.)"""
    if spec.get("flavor") == "allocate":
        return dict(spec, flavor="create")
    return spec


def cross_host_xfail(spec, group):
    """Reason for a strict xfail across hosts, or None: the single-host reason
    where there is one; for Win.Allocate the reason its Win.Create twin has.
    group: the launch, whose provider decides whether osc/rdma reaches the BTL's
    atomics at all (matrix.known_failure)."""
    reason = matrix.known_failure(spec, group)
    if reason:
        return reason
    reason = matrix.known_failure(cross_host_view(spec), group)
    return reason + ALLOCATE_NOTE if reason else None


def multihost_providers(config):
    """[(provider, reason it cannot run across namespaces, or None)]: the
    --provider list ('all': every provider fi_getinfo lists), default
    tcp;ofi_rxm and sockets."""
    wanted = config.getoption("--provider")
    discovered = [p.name for p in fabric.rdm_rma_atomic_providers()]
    if wanted == "all":
        names = discovered
    elif wanted:
        names = [p for p in wanted.split(",") if p]
    else:
        names = list(DEFAULT_PROVIDERS)
    out = []
    for name in names:
        reason = None
        if name == "shm":
            reason = "shm is node-local: it cannot connect ranks in different network namespaces"
        elif name not in discovered:
            reason = f"fi_getinfo lists no RDM provider {name!r} with RMA and atomics here"
        out.append((name, reason))
    return out


def multihost_groups(config):
    """[(group, reason it does not run, or None)]: the fast launch groups of
    the single-host suite (with --multihost-profiles, the NIC profiles' too), those
    with more ranks than host namespaces skipped."""
    candidates = [(group, reason) for provider, reason in multihost_providers(config)
                  for group in matrix.groups([provider], strict=False)]
    if config.getoption("--multihost-profiles"):
        reason = None if matrix.strict_installed() else \
            "ofi_strictmr is not installed beside the component"
        candidates += [(matrix.profile_group("tcp;ofi_rxm", profile, nranks), reason)
                       for profile in sorted(matrix.STRICT_PROFILES) for nranks in (2, 3)]
    out = []
    per_host = config.getoption("--multihost-per-host")
    for group, why in candidates:
        if why is None and group.nranks > MAX_HOSTS * per_host:
            fast = sum(1 for c in check_sets.checks_for(group) if c["tier"] == "fast")
            why = (f"{group.nranks} ranks need {group.nranks} host namespaces, "
                   f"check-multihost.sh makes at most {MAX_HOSTS} (the group's {fast} "
                   f"checks do not run across hosts)")
        elif why is None and group.nranks <= per_host > 1:
            why = (f"{group.nranks} ranks fit on one host at {per_host} per host: a job "
                   f"on one node, which the single-host suite runs")
        out.append((group, why))
    return out


def pytest_generate_tests(metafunc):
    names = metafunc.fixturenames
    if "mh_group" not in names:
        return
    with_dynamic = run_dynamic(metafunc.config)
    params = []
    for group, why in multihost_groups(metafunc.config):
        if "mh_check" not in names:
            marks = [pytest.mark.skip(reason=why)] if why else []
            params.append(pytest.param(group, id=group.label, marks=marks))
            continue
        if why:
            continue  # said once, by the group's test_launch_across_namespaces
        for spec in check_sets.checks_for(group):
            if spec["tier"] != "fast":
                continue
            marks = []
            if is_dynamic(spec) and not with_dynamic:
                marks.append(pytest.mark.skip(reason=DYNAMIC_EXCLUDED))
            reason = cross_host_xfail(spec, group)
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(group, spec, id=f"{group.label}::{spec['id']}",
                                       marks=marks))
    if "mh_check" in names:
        metafunc.parametrize(("mh_group", "mh_check"), params)
    else:
        metafunc.parametrize("mh_group", params)


# ---------------------------------------------------------------- proof of place

def node_proof(stderr, group, hosts, per_host=1):
    """Problems (empty: none) with where the ranks ran: every rank must report
    'selected provider <P> (fabric <subnet>, domain <iface>)' from a node of
    its own (per_host > 1: the hosts filled in order, per_host ranks each),
    each one of the host namespaces' node names. Returns
    (problems, {node: provider line count})."""
    lines = [m for m in selected_line_re().finditer(stderr)]
    nodes = {}
    for m in lines:
        nodes[m["node"]] = nodes.get(m["node"], 0) + 1
    problems = []
    if len(lines) != group.nranks:
        problems.append(f"{len(lines)} 'selected provider' lines for {group.nranks} ranks")
    need = -(-group.nranks // per_host)
    if len(nodes) != need or any(count > per_host for count in nodes.values()):
        problems.append(f"ranks on {len(nodes)} distinct nodes ({nodes}), need {need} "
                        f"with at most {per_host} each")
    foreign = sorted(set(nodes) - set(hosts.nodes))
    if foreign:
        problems.append(f"ranks on nodes {foreign}, not the host namespaces {list(hosts.nodes)}")
    domains = sorted({m["domain"] for m in lines})
    # one NIC: that one; several: one of them (the first libfabric lists), the same for all
    iface = domains[0] if len(hosts.ifaces) > 1 and domains[:1] and \
        domains[0] in hosts.ifaces else hosts.iface
    subnet = dict(zip(hosts.ifaces, hosts.subnets)).get(iface, hosts.subnet)
    for field, want in (("provider", group.provider), ("fabric", subnet), ("domain", iface)):
        seen = sorted({m[field] for m in lines})
        if seen and seen != [want]:
            problems.append(f"{field} {seen}, expected {want}")
    return problems, nodes


def _netns_out(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout


def veth_tx(hosts, iface=None):
    """{namespace: bytes its veth (iface; default: all its NICs together) has sent}."""
    out = {}
    for ns in hosts.namespaces:
        total = 0
        for name in ([iface] if iface else hosts.ifaces):
            text = _netns_out(["ip", "netns", "exec", ns, "cat",
                               f"/sys/class/net/{name}/statistics/tx_bytes"]).strip()
            total = total + int(text) if text.isdigit() and total >= 0 else -1
        out[ns] = total
    return out


def nic_tx(hosts):
    """{iface: bytes it has sent, summed over the host namespaces}."""
    return {name: sum(veth_tx(hosts, name).values()) for name in hosts.ifaces}


def reap(hosts, seconds=10):
    """Processes left in the host namespaces after a job (waited for, bounded,
    then killed: they can only be this job's daemons and ranks)."""
    deadline = time.monotonic() + seconds
    while True:
        left = {ns: _netns_out(["ip", "netns", "pids", ns]).split() for ns in hosts.namespaces}
        left = {ns: pids for ns, pids in left.items() if pids}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pids in left.values():
        for pid in pids:
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
    return left


# ---------------------------------------------------------------- launches

@dataclasses.dataclass
class CrossHost:
    launch: launcher.Launch
    group: matrix.Group
    part: str            # "main" or "dynamic" (--multihost-dynamic)
    tx_delta: dict       # namespace -> bytes its veth sent during the launch
    leftovers: dict      # namespace -> pids still there after the job
    excluded: int        # checks of this group excluded (dynamic windows)
    problems: list = dataclasses.field(default_factory=list)  # place/traffic/leftovers
    nodes: dict = dataclasses.field(default_factory=dict)
    nic_delta: dict = dataclasses.field(default_factory=dict)  # iface -> bytes it sent
    striped: int = 0     # puts and gets split over the NICs (btl_<c>_stripe_count)


class CrossHostLaunches:
    """One mpirun per (group, part) across the namespaces, running the checks
    this session selected."""

    def __init__(self, session, hosts, tmp_root, scale, with_dynamic, per_host=1):
        self.session = session
        self.per_host = per_host
        if per_host > 1:
            hostfile = tmp_root / "hostfile"
            hostfile.write_text("".join(f"{ip} slots={per_host}\n" for ip in hosts.ips),
                                encoding="utf-8")
            hosts = dataclasses.replace(hosts, hostfile=str(hostfile))
        self.hosts = hosts
        self.tmp_root = tmp_root
        self.scale = scale
        self.with_dynamic = with_dynamic
        self.launches = {}

    def _selected(self, group):
        specs, seen = [], set()
        for item in self.session.items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            if params.get("mh_group") != group or "mh_check" not in params:
                continue
            if item.get_closest_marker("skip") is not None:
                continue
            spec = params["mh_check"]
            if spec["id"] not in seen:
                seen.add(spec["id"])
                specs.append(spec)
        if not specs:  # only the group's launch test was selected: all its runnable checks
            specs = [c for c in check_sets.checks_for(group) if c["tier"] == "fast"
                     and (self.with_dynamic or not is_dynamic(c))]
        return specs

    def get(self, group, spec=None):
        if group.nranks > len(self.hosts.namespaces) * self.per_host:
            pytest.skip(f"{group.nranks} ranks need {group.nranks} host namespaces, "
                        f"{self.hosts.conf} describes {len(self.hosts.namespaces)}")
        part = "dynamic" if spec is not None and is_dynamic(spec) else "main"
        key = (group, part)
        if key not in self.launches:
            specs = [s for s in self._selected(group) if (part == "dynamic") == is_dynamic(s)]
            fast = [c for c in check_sets.checks_for(group) if c["tier"] == "fast"]
            excluded = 0 if self.with_dynamic else sum(1 for c in fast if is_dynamic(c))
            timeout = (45 + sum(matrix.budget_seconds(s, group) for s in specs)) * self.scale
            workdir = self.tmp_root / (group.label.replace("|", "_").replace(";", "+")
                                       + ("-dynamic" if part == "dynamic" else ""))
            tx0, nic0 = veth_tx(self.hosts), nic_tx(self.hosts)
            ours = dict(group.ours())
            if len(self.hosts.ifaces) > 1:
                # every NIC: the first libfabric lists carries the launch, the others take
                # parts of puts and gets from STRIPE_MIN bytes (NOTES.txt 2d)
                ours.update(domain_include="mheth*", stripe_min=str(STRIPE_MIN))
            launch = launcher.run_mpi(group.nranks, {"checks": specs}, timeout,
                                      provider=group.provider, ours=ours,
                                      btl=btls(self.per_host), env_overrides=group.env(workdir),
                                      workdir=workdir, hosts=self.hosts)
            launch.check_ids = [s["id"] for s in specs]
            launch.strict_report = group.report(workdir)
            leftovers = reap(self.hosts)
            tx1, nic1 = veth_tx(self.hosts), nic_tx(self.hosts)
            cross = CrossHost(launch, group, part, {ns: tx1[ns] - tx0[ns] for ns in tx0},
                              leftovers, excluded)
            cross.problems, cross.nodes = node_proof(launch.stderr, group, self.hosts,
                                                     self.per_host)
            cross.nic_delta = {name: nic1[name] - nic0[name] for name in nic0}
            cross.striped = sum(r.get("deltas", {}).get("stripe_count", 0)
                                for r in outcome.records(launch, "check"))
            idle = [name for name, sent in cross.nic_delta.items() if sent <= 0]
            if cross.striped and idle:
                cross.problems.append(f"{cross.striped} puts/gets were striped but {idle} "
                                      f"sent nothing ({cross.nic_delta})")
            sharing = sum(n for n in cross.nodes.values() if n > 1) if len(cross.nodes) > 1 else 0
            said = launch.stderr.count("peers on this node over shm")
            if said != sharing:
                # in a job across nodes, each rank with a node partner opens shm beside the
                # network (NOTES.txt 2c); one alone on its node, or a job on one node, does not
                cross.problems.append(f"{said} ranks carried their node's peers over shm, "
                                      f"expected {sharing} ({cross.nodes})")
            by_node = dict(zip(self.hosts.nodes, self.hosts.namespaces))
            for node in cross.nodes:
                ns = by_node.get(node)
                if ns and cross.tx_delta.get(ns, 0) <= 0:
                    cross.problems.append(f"{ns} (node {node}) ran a rank but its "
                                          f"{self.hosts.iface} sent no bytes")
            if leftovers:
                cross.problems.append(f"processes left after the job (killed): {leftovers}")
            self.launches[key] = cross
        return self.launches[key]

    def summary_lines(self):
        hosts = self.hosts
        lines = [f"{len(hosts.namespaces)} host namespaces {' '.join(hosts.namespaces)} "
                 f"({' '.join(hosts.ips)} on {hosts.iface}), mpirun in {hosts.hub}; btl {btls(self.per_host)}, {self.per_host} "
                 f"ranks per host",
                 f"{len(self.launches)} launches: "
                 f"{sum(c.launch.seconds for c in self.launches.values()):.0f}s running mpirun, "
                 f"{sum(c.launch.lock_wait for c in self.launches.values()):.0f}s waiting for "
                 f"{launcher.MPI_LOCK}; errors = checks with wrong results (strict xfails "
                 f"included), excl = dynamic-window checks excluded",
                 f"{'launch (provider | MR path | ranks | variant)':48s} {'state':8s} "
                 f"{'time':>7s} {'checks':>6s} {'errors':>6s} {'excl':>4s}  "
                 f"nodes via domain (fabric), veth tx"]
        for (group, part), c in self.launches.items():
            launch = c.launch
            state = "TIMEOUT" if launch.timed_out else (
                launch.signal_name or ("ok" if launch.returncode == 0
                                       else f"rc={launch.returncode}"))
            if c.problems and state == "ok":
                state = "PLACE?"
            checks = outcome.records(launch, "check")
            bad = sum(1 for r in checks if r["errors"])
            where = sorted(c.nodes)
            domains = sorted({m["domain"] for m in selected_line_re().finditer(launch.stderr)})
            fabrics = sorted({m["fabric"] for m in selected_line_re().finditer(launch.stderr)})
            kib = sum(v for v in c.tx_delta.values() if v > 0) // 1024
            label = group.label + (" dynamic" if part == "dynamic" else "")
            lines.append(f"{label:48s} {state:8s} {launch.seconds:6.1f}s "
                         f"{len(checks):3d}/{len(launch.check_ids):<3d}{bad:6d} "
                         f"{c.excluded if part == 'main' else 0:4d}  "
                         f"{','.join(where) or '-'} via {','.join(domains) or '?'} "
                         f"({','.join(fabrics) or '?'}), {kib}KiB"
                         + ("" if len(hosts.ifaces) < 2 else
                            f"; {c.striped} striped, "
                            + " ".join(f"{n} {v // 1024}KiB" for n, v in c.nic_delta.items())))
        excluded = sum(c.excluded for (_, part), c in self.launches.items() if part == "main")
        if excluded:
            lines.append(f"excl: {excluded} checks on MPI_Win_create_dynamic windows not run "
                         f"(skipped with the reason): {DYNAMIC_EXCLUDED}")
        return lines


@pytest.fixture(scope="module")
def mh_launches(request, netns_hosts, tmp_path_factory):
    cache = CrossHostLaunches(request.session, netns_hosts,
                              tmp_path_factory.mktemp("multihost-launches"),
                              request.config.getoption("--timeout-scale"),
                              run_dynamic(request.config),
                              request.config.getoption("--multihost-per-host"))
    request.config._btlofi_multihost = cache
    return cache


# ---------------------------------------------------------------- the tests

def test_programs_across_namespaces(tmp_path):
    """osc_demo, osc_flush_visibility, osc_stress across the script's own
    namespaces (the conformance suite runs as the tests below)."""
    argv = ["--no-conformance", "--log-dir", tmp_path]
    run = netns.run_script(argv, tmp_path, timeout=900)
    if run.returncode == 77:
        pytest.skip(netns.skip_reason(run))
    summary = run.stdout[run.stdout.rfind("== check-multihost summary"):]
    assert not run.timed_out and run.returncode == 0, \
        f"check-multihost failed (exit {run.returncode}" \
        f"{', timed out' if run.timed_out else ''}):\n{summary or run.stdout[-3000:]}\n" \
        f"{run.stderr[-2000:]}"
    assert "check-multihost: all passed" in run.stdout, summary
    assert "cleanup: removed" in run.stdout, \
        f"namespaces not reported removed:\n{run.stdout[-1500:]}"


def test_launch_across_namespaces(mh_group, mh_launches):
    """The launch ran to the end through btl-ofi with the requested provider
    (outcome.judge_group), one rank per host namespace on its veth, every
    such veth sent bytes, and nothing outlived the job."""
    cross = mh_launches.get(mh_group)
    outcome.judge_group(cross.launch, mh_group, cross.launch.check_ids).apply()
    if cross.problems:
        pytest.fail(f"{outcome.describe_group(mh_group)} across namespaces: "
                    + "; ".join(cross.problems)
                    + f"\n  {cross.launch.command_line()}", pytrace=False)


def test_check_across_namespaces(mh_group, mh_check, mh_launches):
    """Exact results and the right btl-ofi counters (outcome.judge_check), for
    a launch whose ranks were each in a namespace of their own."""
    cross = mh_launches.get(mh_group, mh_check)
    outcome.judge_check(cross.launch, mh_group, cross_host_view(mh_check)).apply()
    if cross.problems:
        pytest.fail(f"{outcome.describe_check(mh_check)}: not shown to be across hosts: "
                    + "; ".join(cross.problems), pytrace=False)


# The proof of place must be able to fail (no namespaces needed for these).
_HOSTS = launcher.Hosts(hub="hub", namespaces=("ns1", "ns2", "ns3"),
                        nodes=("mh-h1", "mh-h2", "mh-h3"), ips=("a", "b", "c"), hostfile="",
                        netns_map="", agent="", subnet="10.77.0.0/24", iface="mheth0")


def _sel(node, domain="mheth0", provider="tcp;ofi_rxm", fabric="10.77.0.0/24"):
    return (f"[{node}:123] btl:{launcher.component_name()}: selected provider {provider} "
            f"(fabric {fabric}, "
            f"domain {domain}), mr_mode none, key size 8, completion delivery\n")


@pytest.mark.parametrize("stderr, nranks, expect", [
    (_sel("mh-h1") + _sel("mh-h2"), 2, None),
    (_sel("mh-h1") + _sel("mh-h2") + _sel("mh-h3"), 3, None),
    (_sel("mh-h1") + _sel("mh-h1"), 2, "distinct nodes"),
    (_sel("mh-h1"), 2, "1 'selected provider' lines"),
    (_sel("mh-h1") + _sel("mh-h2", domain="lo"), 2, "domain"),
    (_sel("mh-h1") + _sel("mh-h2", fabric="127.0.0.0/8"), 2, "fabric"),
    (_sel("mh-h1") + _sel("mh-h2", provider="sockets"), 2, "provider"),
    (_sel("buildhost") + _sel("mh-h2"), 2, "not the host namespaces"),
], ids=["2-nodes", "3-nodes", "same-node", "missing-rank", "wrong-domain", "wrong-fabric",
        "wrong-provider", "foreign-node"])
def test_node_proof(stderr, nranks, expect):
    problems, _ = node_proof(stderr, matrix.Group("tcp;ofi_rxm", "default", nranks, "base"),
                             _HOSTS)
    if expect is None:
        assert problems == []
    else:
        assert any(expect in p for p in problems), problems
