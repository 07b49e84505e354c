"""Peers on this node over shared memory, peers on other nodes over the network,
in one btl-ofi module (issue 26 item 0; NOTES.txt 2c).

Two "hosts" (network namespaces made by scripts/check-multihost.sh, the
multihost tests' fixture) with two ranks each: in a job across nodes btl-ofi
opens a second domain on the node-local provider (btl_<c>_local_provider,
default shm) for the peers of its own node, and keeps the network provider
(tcp;ofi_rxm here) for the others. Each launch (rank_node_local.py) puts and
gets to every rank and has all four ranks hammer one counter on rank 0 with
fetch_and_op and accumulate, rank 0's node partner over shm and the ranks of
the other node over tcp at once: the sum must be exact and no fetched value
may repeat. The counters say which domain carried what:
  - default: every rank's puts and gets to its node went over shm
    (local_put_count), the others over tcp; atomics to rank 0 from its node
    over shm (tcp;ofi_rxm applies atomics with the target's CPU, as shm does,
    so they stay atomic with each other), from the other node over tcp;
  - btl_<c>_local_atomics=network: no atomic over shm at all, puts still;
  - btl_<c>_local_provider=none: nothing over shm, the control variable
    btl_<c>_local_selected empty.
Beside the shm domain, the tcp CQ is read at a pace while this process has
nothing of its own in flight on it (btl_<c>_idle_poll_ratio, NOTES.txt 2c):
every rank pauses it (cq_pauses), rank 0, whose counter the other node's
ranks hammer over tcp, sees reads that served them (cq_serving_reads), and
the sums stay exact; idle_poll_ratio=0 reads it at every pass (no pause).
With ofi_strictmr's NIC profiles as the network provider (a NIC's MR modes,
keys, reordering and own progress beside shm, as on an EFA or Slingshot
node) the atomics to node partners go through the NIC as well, and
ofi_strictmr finds no key or address wrong.
"""

import re

import pytest

import launcher
import matrix
import netns
import outcome
import shm_files
from refusals import NO_SEND_BTL, judge_no_sender

PROVIDER = netns.MIXED_PROVIDER
PER_HOST = netns.MIXED_PER_HOST
NRANKS = netns.MIXED_NRANKS
CHECK = {"kind": "node_local", "id": "node_local", "rounds": 300}
WAKE_LINE, WAKE_REFUSED = launcher.WAKE_LINE, launcher.WAKE_REFUSED


@pytest.fixture(scope="module")
def two_per_host(request, tmp_path_factory):
    """The namespaces (conftest.py), PER_HOST ranks on each of the first two hosts."""
    return netns.per_host(request.getfixturevalue("netns_hosts"),
                          tmp_path_factory.mktemp("node-local"))


def _run(hosts, tmp_path, ours=None, group=None):
    """group: the network provider's launch (default plain tcp;ofi_rxm), judged as a whole
    (with ofi_strictmr: no violation, and every behaviour of its NIC profile happened)."""
    group = group or matrix.Group(PROVIDER, "default", NRANKS, "base")
    btl = f"self,{launcher.node_btl()},tcp,{launcher.component_name()}"
    # the atomics counted below assume osc/rdma's default lock protocol, whatever
    # --mca the suite got: on_demand locks each peer a lock_all epoch touches
    launch = launcher.run_mpi(NRANKS, {"checks": [CHECK]}, 180, provider=group.provider,
                              hosts=hosts, btl=btl, workdir=tmp_path, ours=ours,
                              mca={"osc_rdma_locking_mode": "two_level"},
                              env_overrides=group.env(tmp_path))
    launch.strict_report = group.report(tmp_path)
    outcome.judge_group(launch, group, [CHECK["id"]]).apply()
    outcome.assert_check_clean(launch, CHECK["id"])
    lines = outcome.rank_lines(launch, "NODELOCAL", CHECK["id"], NRANKS)
    for rank, line in lines.items():
        assert line["node_ranks"] == ([0, 1] if rank < 2 else [2, 3]), \
            f"rank {rank} shares its node with {line['node_ranks']}: not two ranks per host"
    return launch, lines


def _others(line, name):
    c = line["counters"]
    return c[name] - c[f"local_{name}"]


def test_node_peers_over_shm(two_per_host, tmp_path):
    # the pace alone (wake=0; test_wake and test_wake_default below)
    launch, lines = _run(two_per_host, tmp_path, ours={"wake": 0})
    for rank, line in lines.items():
        c = line["counters"]
        assert (line["local_selected"] or "").startswith("shm "), \
            f"rank {rank}: btl_<c>_local_selected is {line['local_selected']!r}, not shm"
        assert line["local_peers"] == PER_HOST, \
            f"rank {rank}: {line['local_peers']} peers over shm, expected {PER_HOST} (its node)"
        # a put and a get to each of the two ranks of its node over shm, to the others over tcp
        assert c["local_put_count"] >= PER_HOST and _others(line, "put_count") >= PER_HOST, \
            f"rank {rank}: puts over shm / over tcp: {c}"
        assert c["local_get_count"] >= PER_HOST and _others(line, "get_count") >= PER_HOST, \
            f"rank {rank}: gets over shm / over tcp: {c}"
        # the counter's atomics: over shm from rank 0's node, over tcp from the other; the
        # few of osc/rdma's own synchronization (lock_all) go either way
        near, far = c["local_atomic_count"], _others(line, "atomic_count")
        if rank < PER_HOST:
            assert near >= CHECK["rounds"] and far < CHECK["rounds"], \
                f"rank {rank}: atomics {c}"
        else:
            assert far >= CHECK["rounds"] and near < CHECK["rounds"], \
                f"rank {rank}: atomics {c}"
    assert "peers on this node over shm" in launch.stderr + launch.stdout
    # the tcp CQ read at a pace beside shm, and the reads that served the other node's
    # atomics on rank 0 told apart by their cost (exactness is checked above)
    for rank, line in lines.items():
        assert line["counters"]["cq_pauses"] > 0, \
            f"rank {rank}: the tcp CQ beside shm was never paused: {line['counters']}"
        assert line["counters"]["cq_wake_armed"] == 0, \
            f"rank {rank}: btl_<c>_wake=0, yet {line['counters']}"
    # while the node-local domain is at work (the pair hammers rank 0's counter over shm:
    # rank 1's own operations in flight, rank 0's shm reads that serve them) the pause is
    # the longest
    for rank in range(PER_HOST):
        c = lines[rank]["counters"]
        assert 0 < c["cq_long_pauses"] <= c["cq_pauses"], \
            f"rank {rank}: no long pause of the tcp CQ while shm was at work: {c}"
    assert lines[0]["counters"]["cq_serving_reads"] > 0, \
        f"rank 0: no read of its tcp CQ was taken for serving the other node's " \
        f"{CHECK['rounds']} fetch_and_op and accumulate each: {lines[0]['counters']}"


def test_idle_poll_every_pass(two_per_host, tmp_path):
    _, lines = _run(two_per_host, tmp_path, ours={"idle_poll_ratio": 0})
    for rank, line in lines.items():
        c = line["counters"]
        assert c["cq_pauses"] == 0 and c["cq_serving_reads"] == 0 and \
            c["cq_long_pauses"] == 0, \
            f"rank {rank}: idle_poll_ratio=0, yet {c}"
        assert c["local_put_count"] >= PER_HOST, f"rank {rank}: puts {c}"


def test_no_long_pause(two_per_host, tmp_path):
    """local_busy_poll_us=0: the tcp CQ is still read at the ratio's pace beside shm, never
    left for the longer pause while shm is at work; the sums stay exact (_run)."""
    _, lines = _run(two_per_host, tmp_path, ours={"local_busy_poll_us": 0, "wake": 0})
    for rank, line in lines.items():
        c = line["counters"]
        assert c["cq_long_pauses"] == 0, f"rank {rank}: local_busy_poll_us=0, yet {c}"
    for rank in range(PER_HOST):
        c = lines[rank]["counters"]
        assert c["cq_pauses"] > 0, f"rank {rank}: the tcp CQ beside shm never paused: {c}"


def test_wake(two_per_host, tmp_path):
    """wake=1 (NOTES.txt 2c): while idle, the tcp CQ beside shm is left unread until an
    io_uring poll of its descriptor completes. Every rank arms it and reads it when its poll
    completes (rank 0, whose counter the other node's ranks hammer over tcp, is served that
    way); the sums stay exact (_run)."""
    launch, lines = _run(two_per_host, tmp_path, ours={"wake": 1})
    text = launch.stderr + launch.stdout
    refused = [line for line in text.splitlines() if WAKE_REFUSED in line]
    if refused:
        pytest.skip(f"io_uring refused on this machine: {refused[0].strip()}")
    assert text.count(WAKE_LINE) == NRANKS, \
        f"not every rank set up its ring:\n{text[-2000:]}"
    for rank, line in lines.items():
        c = line["counters"]
        assert c["cq_wake_armed"] > 0 and c["cq_wake_reads"] > 0, \
            f"rank {rank}: the tcp CQ was never left to its poll, or the poll never woke it: {c}"
        # one poll per arming, one read per poll that completed
        assert c["cq_wake_reads"] <= c["cq_wake_armed"], f"rank {rank}: {c}"


def test_wake_default(two_per_host, tmp_path):
    """wake's default (auto): on with libfabric 2 and later, off with 1.x (whose tcp makes a
    CQ with a wait descriptor cost operations to other nodes: NOTES.txt 2c); the sums stay
    exact either way (_run)."""
    launch, lines = _run(two_per_host, tmp_path)
    text = launch.stderr + launch.stdout
    on = launcher.libfabric_major() >= 2 and WAKE_REFUSED not in text
    assert text.count(WAKE_LINE) == (NRANKS if on else 0), \
        f"libfabric {launcher.libfabric_major()}.x: {text.count(WAKE_LINE)} ranks set up an " \
        f"io_uring poll:\n{text[-2000:]}"
    for rank, line in lines.items():
        c = line["counters"]
        assert (c["cq_wake_armed"] > 0) == on, f"rank {rank}: wake {'on' if on else 'off'}: {c}"


def test_node_atomics_over_network(two_per_host, tmp_path):
    _, lines = _run(two_per_host, tmp_path, ours={"local_atomics": "network"})
    for rank, line in lines.items():
        c = line["counters"]
        assert c["local_atomic_count"] == 0 and _others(line, "atomic_count") >= CHECK["rounds"], \
            f"rank {rank}: with local_atomics=network, atomics {c}"
        assert line["local_peers"] == PER_HOST, f"rank {rank}: {line}"
        assert c["local_put_count"] >= PER_HOST, f"rank {rank}: puts {c}"


@pytest.mark.parametrize("profile", sorted(matrix.STRICT_PROFILES))
def test_nic_profile_beside_shm(two_per_host, tmp_path, profile):
    """The network provider with a NIC's habits, shm beside it, as on an EFA or Slingshot
    node: ofi_strictmr over tcp;ofi_rxm as a NIC profile (FI_MR_LOCAL, FI_MR_ENDPOINT, 2- to 8-byte
    keys, reordering, its own progress, 64-bit atomics only, registration cost: strictmr/
    README.md "Profiles"). Registrations for peers are made in both domains, each with its
    own key; ofi_strictmr checks every key and address the network carries (_run judges: no
    violation, every behaviour of the profile happened). A NIC's atomics are not atomic with
    the CPU's (NOTES.txt 2c), so the atomics to node partners go through the NIC too, none
    over shm, while puts and gets to them go over shm; the counter's sum is exact (_run)."""
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    group = matrix.profile_group(PROVIDER, profile, NRANKS)
    launch, lines = _run(two_per_host, tmp_path, group=group)
    said = f"atomics to them over {group.provider}; other peers over {group.provider}"
    text = launch.stderr + launch.stdout
    assert text.count(said) == NRANKS, f"not every rank said '{said}':\n" + \
        "\n".join(line for line in text.splitlines() if "peers on this node" in line)
    for rank, line in lines.items():
        c = line["counters"]
        assert line["local_peers"] == PER_HOST, f"rank {rank}: {line}"
        assert c["local_put_count"] >= PER_HOST and c["local_get_count"] >= PER_HOST, \
            f"rank {rank}: puts and gets to its node not over shm: {c}"
        assert c["local_atomic_count"] == 0 and _others(line, "atomic_count") >= CHECK["rounds"], \
            f"rank {rank}: atomics over shm beside a NIC's: {c}"


def test_node_local_off(two_per_host, tmp_path):
    _, lines = _run(two_per_host, tmp_path, ours={"local_provider": "none"})
    for rank, line in lines.items():
        c = line["counters"]
        assert line["local_selected"] == "" and line["local_peers"] == 0, \
            f"rank {rank}: local_provider=none, yet {line}"
        assert c["local_put_count"] == c["local_get_count"] == c["local_atomic_count"] == 0, \
            f"rank {rank}: local_provider=none, yet {c}"
        assert c["put_count"] >= NRANKS and c["atomic_count"] >= CHECK["rounds"], \
            f"rank {rank}: {c}"


def test_btl_list_without_network_sender(two_per_host, tmp_path):
    """--mca btl self,<node BTL>,<c> across hosts under pml ob1: the node BTL sends to
    node partners only, nothing to the other host's ranks, which btl-ofi then leaves
    unreachable with its message (refusals.judge_no_sender). A C program: its
    errors are fatal, so the job ends at the first collective that reaches across
    (a Python rank's MPI exception would leave the others waiting). On Open MPI 5 without
    coll/han: 5.0.7's han, the default there, crashes in mca_coll_han_comm_create at the
    first collective when a peer is unreachable, with Open MPI's BTLs alone as well
    (--mca btl self,sm across hosts), before btl-ofi is asked for those peers (NOTES.txt
    10)."""
    component = launcher.component_name()
    btls = f"self,{launcher.node_btl()},{component}"
    before = shm_files.shm_names()
    try:
        run = netns.run_native(two_per_host, tmp_path, btls, "osc_stress", ["-s", "26", "-e", "1"],
                               120, mca={"coll": "^han"} if launcher.ompi_major() >= 5 else None)
    finally:
        # the job aborts: its ranks never close their shm regions (NOTES.txt section 8)
        shm_files.remove_shm_files_since(before)
    expected = NO_SEND_BTL.format(btls=btls, where="on other nodes", node=launcher.node_btl(),
                                  c=component, host=two_per_host.nodes[0])
    judge_no_sender(run, expected, f"--mca btl {btls} across two hosts")


@pytest.mark.parametrize("wake", [0, 1], ids=["pace", "wake"])
def test_stress_mixed(two_per_host, tmp_path, wake):
    """osc_stress (random puts, gets and atomics to every rank, each phase checked exactly)
    on create and allocate windows, every synchronization mode, with each rank's node
    partner over shm and the other two over tcp; the tcp CQ read at the pace, or left to
    its io_uring poll while idle (wake=1)."""
    run = netns.run_mixed(two_per_host, tmp_path, wake, "osc_stress",
                        ["-s", "26", "-e", "4", "-f", "create,allocate"])
    moved = [line for line in run.stdout.splitlines()
             if line.startswith("flavor ") and " puts=0 " not in f"{line} "]
    assert moved, f"osc_stress reports no puts through btl-ofi:\n{run.stdout[-1500:]}"


@pytest.mark.parametrize("wake", [0, 1], ids=["pace", "wake"])
def test_threads_mixed(two_per_host, tmp_path, wake):
    """osc_threads (MPI_THREAD_MULTIPLE: 3 threads per rank put, get back, fetch-and-add,
    compare-and-swap and accumulate at once to every rank, all checked exactly) with each
    rank's node partner over shm and the other two over tcp: several threads progress the
    paced tcp CQ at once, and with wake=1 arm and consume its io_uring poll at once (the
    compare-and-swaps of btl_ofi_wake.c): it was armed and woken, over all ranks.
    osc_threads exits 2 if btl-ofi's counters did not move."""
    run = netns.run_mixed(two_per_host, tmp_path, wake, "osc_threads", ["-t", "3", "-i", "100"])
    found = re.search(r"cq_wake_armed=(\d+) cq_wake_reads=(\d+)", run.stdout)
    assert found, f"osc_threads printed no wake counters:\n{run.stdout[-1500:]}"
    armed, reads = int(found[1]), int(found[2])
    on = wake and WAKE_REFUSED not in run.stdout + run.stderr
    assert launcher.wake_counts_fit(armed, reads, on), \
        f"wake={wake}: armed {armed} times, woken {reads} (all ranks)"
