"""Which libfabric domain (NIC) btl-ofi takes (issue 26 items 1 and 4; NOTES.txt 2b).

A provider lists one fi_info per domain: per NIC (mlx5_0, cxi0..3, the EFA
devices), or per interface for tcp (eth0, lo, ...). btl-ofi takes, of the
first provider that serves:
  - never a loopback-only domain (lo, 127.0.0.0/8, ::1) while the provider
    offers another: peers on other hosts could not reach it;
  - of several domains on one fabric (several NICs that reach the same
    peers), one per process by its local rank, so a node's processes share
    them out (btl_<c>_domain_spread, default true);
  - only the domains btl_<c>_domain_include names (names or shell patterns
    of "domain:" or "fabric:" lines), or none that btl_<c>_domain_exclude
    names.
The choice is in the verbose "selected provider" line and in the read-only
control variable btl_<c>_domain_selected, which each rank reads through
MPI_T here (rank_domain.py); every launch is exact and carried by btl-ofi.
Several NICs on one fabric are made in a network namespace: two veth
interfaces with addresses on one subnet (tcp lists a domain per interface).
"""

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

import fabric
import launcher
import matrix
import outcome
import refusals

PROVIDER = "tcp;ofi_rxm"
CHECK = {"kind": "domain", "id": "domain", "rounds": 10}
LINE = re.compile(r"DOMAIN domain rank (\d+): ")
TOOK = re.compile(r"\[[^\]]*:\d+\] btl:\w+: took (.*)")
SELECTED = re.compile(r"\[[^\]]*:(\d+)\] btl:\w+: selected provider (\S+) \(fabric (\S+), "
                      r"domain (\S+)\)")


def loopback(domain, fabric):
    return domain == "lo" or fabric.startswith("127.") or fabric == "::1/128"


def _run(tmp_path, nranks=2, ours=None, netns=None, provider=PROVIDER, plan=None, env=None,
         took=None):
    launch = launcher.run_mpi(nranks, dict(plan or {}, checks=[CHECK]), 120, provider=provider,
                              workdir=tmp_path, ours=ours, netns=netns, env_overrides=env)
    if took is not None:
        took.extend(TOOK.findall(launch.stderr + launch.stdout))
    group = matrix.Group(provider, "default", nranks, "base")
    outcome.judge_group(launch, group, [CHECK["id"]]).apply()
    outcome.assert_check_clean(launch, CHECK["id"])
    decoder = json.JSONDecoder()
    cvars = {int(m.group(1)): decoder.raw_decode(launch.stderr, m.end())[0]["selected"]
             for m in LINE.finditer(launch.stderr)}
    lines = {}
    for m in SELECTED.finditer(launch.stdout + launch.stderr):
        lines[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    assert sorted(cvars) == list(range(nranks)), f"DOMAIN lines of ranks {sorted(cvars)}"
    assert len(lines) == nranks, f"{len(lines)} 'selected provider' lines for {nranks} ranks"
    # the control variable says what the verbose line says, rank by rank (same set of choices)
    said = sorted(f"{p} fabric {f} domain {d}" for p, f, d in lines.values())
    assert sorted(cvars.values()) == said, \
        f"btl_<c>_domain_selected {sorted(cvars.values())} against the verbose lines {said}"
    return [tuple(v.split(" fabric ")[1].split(" domain ")[::-1]) for _, v in sorted(cvars.items())]


def test_default_domain_is_not_loopback(tmp_path):
    domains = fabric.fi_domains(PROVIDER)
    if not any(not loopback(d, f) for d, f in domains):
        pytest.skip(f"{PROVIDER} lists only loopback domains here: {domains}")
    taken = _run(tmp_path)
    assert all(not loopback(d, f) for d, f in taken), \
        f"took a loopback-only domain {taken} while {PROVIDER} offers {domains}"


def test_domain_include_and_exclude(tmp_path):
    domains = fabric.fi_domains(PROVIDER)
    names = list(dict.fromkeys(d for d, _ in domains))
    if len(names) < 2:
        pytest.skip(f"{PROVIDER} lists one domain here: {domains}")
    first = next(d for d, f in domains if not loopback(d, f))
    other = next(d for d in names if d != first)
    taken = _run(tmp_path / "include", ours={"domain_include": other})
    assert {d for d, _ in taken} == {other}, f"domain_include={other}: took {taken}"
    taken = _run(tmp_path / "exclude", ours={"domain_exclude": first})
    assert first not in {d for d, _ in taken}, f"domain_exclude={first}: took {taken}"
    # a pattern of the fabric: the fabric of 'other'
    fab = next(f for d, f in domains if d == other)
    taken = _run(tmp_path / "fabric", ours={"domain_include": fab})
    assert {f for _, f in taken} == {fab}, f"domain_include={fab}: took {taken}"


@pytest.fixture
def two_nics():
    """A network namespace with two interfaces on one subnet (veth pairs, the far ends
    without addresses): tcp lists domains nic0 and nic1 on fabric 10.66.0.0/24."""
    name = f"btlofi-{uuid.uuid4().hex[:8]}"

    def ip(*args):
        subprocess.run(["ip", "-n", name, *args], check=True, capture_output=True, timeout=30)
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no network namespace here (root and iproute2 needed): {exc}")
    try:
        ip("link", "set", "lo", "up")
        for i in (0, 1):
            ip("link", "add", f"nic{i}", "type", "veth", "peer", "name", f"far{i}")
            ip("addr", "add", f"10.66.0.{i + 1}/24", "dev", f"nic{i}")
            ip("link", "set", f"nic{i}", "up")
            ip("link", "set", f"far{i}", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)


def test_spread_over_nics_of_one_fabric(two_nics, tmp_path):
    domains = [(d, f) for d, f in fabric.fi_domains(PROVIDER, netns=two_nics) if f == "10.66.0.0/24"]
    assert sorted(d for d, _ in domains) == ["nic0", "nic1"], \
        f"{PROVIDER} in the namespace lists {fabric.fi_domains(PROVIDER, netns=two_nics)}"
    order = [d for d, _ in domains]  # libfabric's order: local rank r takes order[r % 2]
    taken = _run(tmp_path / "spread", nranks=3, netns=two_nics)
    assert [d for d, _ in taken] == [order[r % 2] for r in range(3)], \
        f"3 ranks over {order}: took {taken} (expected local rank r on domain r mod 2)"
    taken = _run(tmp_path / "first", nranks=3, netns=two_nics, ours={"domain_spread": "0"})
    assert [d for d, _ in taken] == [order[0]] * 3, f"domain_spread=0: took {taken}"


def test_nic_down_at_start(two_nics, tmp_path):
    """An interface that is down when the job starts is not listed by libfabric (tcp
    leaves out interfaces that are not up and running), so the processes share out
    the NICs that are: 3 ranks all take nic0. Named in domain_include, the down one
    is refused with the domains there are (and the message says that a down
    interface is not listed); Open MPI carries on without btl-ofi."""
    subprocess.run(["ip", "-n", two_nics, "link", "set", "nic1", "down"], check=True,
                   capture_output=True, timeout=30)
    listed = fabric.fi_domains(PROVIDER, netns=two_nics)
    assert "nic1" not in {d for d, _ in listed}, f"nic1 is down but listed: {listed}"
    taken = _run(tmp_path / "spread", nranks=3, netns=two_nics)
    assert [d for d, _ in taken] == ["nic0"] * 3, f"nic1 down: took {taken}"

    grouped = {}
    for domain, fab in listed:
        grouped.setdefault(domain, []).append(fab)
    available = ", ".join(f"{d} ({', '.join(f)})" for d, f in grouped.items())
    expected = refusals.DOMAIN_NOT_FOUND.replace("{unknown}", "nic1") \
        .replace("{available}", available).replace("{c}", launcher.component_name()) \
        .replace("{processes}", refusals.processes(2))
    launch = launcher.run_mpi(2, {"checks": refusals.PLAN}, 90, provider=PROVIDER,
                              workdir=tmp_path / "named", ours={"domain_include": "nic1"},
                              netns=two_nics)
    outcome.judge_bad_input(launch, expected, "domain_include=nic1 (down)",
                            len(refusals.PLAN)).apply()


# The test topology (data/two-packages.xml): a NIC on each package's PCI bus.
TOPOLOGY = Path(__file__).resolve().parent / "data" / "two-packages.xml"
PCI_NEAR_CPU = {0: "0000:01:00.0", 1: "0000:81:00.0"}


def test_nearest_nic_by_topology(two_nics, tmp_path):
    """Where a domain names its PCI device (ofi_strictmr's FI_OFI_STRICTMR_NIC_PCI stands
    for a NIC provider's fi_info nic), a bound process takes the NIC that the topology
    (data/two-packages.xml through HWLOC_XMLFILE: two packages with a NIC each, on this
    machine's two cpus) places on its own package, whatever its local rank says: rank 0 on
    cpu 0 and rank 1 on cpu 1 get the NICs in the opposite order to libfabric's, so the
    local-rank rule alone would choose the other one. Unbound, or bound with domains that
    name no device, the same job spreads by local rank, and the verbose line says why."""
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip(f"cpus 0 and 1 needed, this process may use {sorted(os.sched_getaffinity(0))}")
    provider = f"{PROVIDER};ofi_strictmr"
    order = [d for d, f in fabric.fi_domains(PROVIDER, netns=two_nics) if f == "10.66.0.0/24"]
    assert sorted(order) == ["nic0", "nic1"], order
    # order[0] hangs off cpu 1's package, order[1] off cpu 0's
    pci = f"{order[0]}={PCI_NEAR_CPU[1]},{order[1]}={PCI_NEAR_CPU[0]}"
    env = {"FI_PROVIDER_PATH": str(matrix.strict_provider_dir()), "FI_OFI_STRICTMR_NIC_PCI": pci,
           "HWLOC_XMLFILE": str(TOPOLOGY), "HWLOC_THISSYSTEM": "1"}
    took = []
    taken = _run(tmp_path / "bound", netns=two_nics, provider=provider, env=env,
                 plan={"bind_by_local_rank": [0, 1]}, took=took)
    assert [d for d, _ in taken] == [order[1], order[0]], \
        f"rank r bound to cpu r with {pci}: took {taken}, expected the NIC of its own " \
        f"package: {[order[1], order[0]]}\n" + "\n".join(took)
    assert len(took) == 2 and all("near this process" in t for t in took), "\n".join(took)
    took = []
    taken = _run(tmp_path / "unbound", netns=two_nics, provider=provider, env=env, took=took)
    assert [d for d, _ in taken] == order, f"unbound: took {taken}, expected {order}"
    assert len(took) == 2 and all("topology: process not bound" in t for t in took), \
        "\n".join(took)
    took = []  # bound, but the domains name no device (tcp's own infos): by local rank
    taken = _run(tmp_path / "no-device", netns=two_nics, provider=provider,
                 env={k: v for k, v in env.items() if k != "FI_OFI_STRICTMR_NIC_PCI"},
                 plan={"bind_by_local_rank": [0, 1]},
                 took=took)
    assert [d for d, _ in taken] == order, f"no device paths: took {taken}, expected {order}"
    assert len(took) == 2 and all("topology: no device paths" in t for t in took), \
        "\n".join(took)
