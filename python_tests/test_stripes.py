"""Large puts and gets split over several NICs (issue 26 items 2 and 3; NOTES.txt 2d).

Two host namespaces made by `scripts/check-multihost.sh --setup-only --nics 2
--rate 400mbit`: each host has two veth interfaces on subnets of their own
(mheth0 on 10.77.0.0/24, mheth1 on 10.78.0.0/24), each shaped by tc to the
same rate. tcp;ofi_rxm lists one domain per interface; btl-ofi takes one
(btl_<c>_domain_include=mheth*) and opens the other beside it for parts of
large transfers. One rank per host (rank_stripes.py): a 4 MiB put, its get
back and a 4 MiB get of the peer's data are exact, were split
(stripe_count), and every interface of both hosts carried a share of the
bytes (/sys/class/net/*/statistics/tx_bytes read around the launch); 8-byte
puts and gets are not split. With btl_<c>_stripe_min=0 one interface carries
nearly everything and nothing is split. The same split holds over ofi_strictmr's
NIC profiles (each part registered and keyed in its own NIC's domain,
reordered, completed by a provider thread), with no key or address wrong.
With two ranks per host, osc_stress runs over all three kinds of domain at
once: shm for the node partner, both NICs for the other host.
"""

import re
import subprocess

import pytest

import launcher
import matrix
import netns
import outcome

PROVIDER = "tcp;ofi_rxm"
SIZE = 4 << 20
CHECK = {"kind": "stripes", "id": "stripes", "size": SIZE, "small": 50}


@pytest.fixture(scope="module")
def two_nics(tmp_path_factory):
    yield from netns.own_hosts(tmp_path_factory.mktemp("netns-nics"), "--hosts", 2, "--nics", 2,
                         "--rate", "400mbit")


def _tx(hosts):
    """{(namespace, interface): bytes sent} for every NIC of every host."""
    out = {}
    for ns in hosts.namespaces:
        for iface in hosts.ifaces:
            text = subprocess.run(["ip", "netns", "exec", ns, "cat",
                                   f"/sys/class/net/{iface}/statistics/tx_bytes"],
                                  capture_output=True, text=True, check=True).stdout
            out[(ns, iface)] = int(text)
    return out


def _run(hosts, tmp_path, ours, group=None):
    """group: the launch (default plain tcp;ofi_rxm), judged as a whole (with ofi_strictmr:
    no violation, and every behaviour of its NIC profile happened)."""
    group = group or matrix.Group(PROVIDER, "default", 2, "base")
    before = _tx(hosts)
    launch = launcher.run_mpi(2, {"checks": [CHECK]}, 180, provider=group.provider, hosts=hosts,
                              btl=f"self,tcp,{launcher.component_name()}", workdir=tmp_path,
                              ours={"domain_include": "mheth*", **ours},
                              env_overrides=group.env(tmp_path))
    after = _tx(hosts)
    if group.strict:
        launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [CHECK["id"]]).apply()
    outcome.assert_check_clean(launch, CHECK["id"])
    lines = outcome.rank_lines(launch, "STRIPES", CHECK["id"], 2)
    sent = {key: after[key] - before[key] for key in before}
    return launch, lines, sent


def _delta(line, a, b, name):
    return line["phases"][b][name] - line["phases"][a][name]


@pytest.mark.parametrize("wake", [0, 1], ids=["pace", "wake"])
def test_large_transfers_use_both_nics(two_nics, tmp_path, wake):
    """With wake=1 both NICs' CQs of each rank (read at the pace: nothing of the job is on
    one node) are left to an io_uring poll while idle, and woken by the other rank's parts
    (NOTES.txt 2c); with 0 the pace alone."""
    launch, lines, sent = _run(two_nics, tmp_path, {"wake": wake})
    text = launch.stderr + launch.stdout
    assert text.count("striping puts and gets") == 2, "not every rank opened a second NIC"
    on = wake and launcher.WAKE_REFUSED not in text
    assert text.count(launcher.WAKE_LINE) == (4 if on else 0), \
        f"wake={wake}: {text.count(launcher.WAKE_LINE)} NICs set up an io_uring poll (2 x 2)"
    for rank, line in lines.items():
        armed = _delta(line, "start", "small", "cq_wake_armed")
        reads = _delta(line, "start", "small", "cq_wake_reads")
        assert launcher.wake_counts_fit(armed, reads, on), \
            f"rank {rank}, wake={wake}: armed {armed} times, woken {reads}"
    _assert_split(lines, sent)


def _assert_split(lines, sent):
    """Rank 0's large transfers were split over both NICs and its small ones were not; every
    NIC of both hosts carried a share."""
    zero = lines[0]
    assert zero["phases"]["start"]["nics"] == 2, f"rank 0 uses {zero['phases']['start']['nics']} NICs"
    # one put and two gets of 4 MiB, each split in two parts
    assert _delta(zero, "start", "large", "stripe_count") == 3, zero["phases"]
    assert _delta(zero, "start", "large", "put_count") >= 2 and \
        _delta(zero, "start", "large", "get_count") >= 4, zero["phases"]
    assert _delta(zero, "large", "small", "stripe_count") == 0, \
        f"8-byte puts or gets were split: {zero['phases']}"
    # every NIC of both hosts sent a share: the put's parts from the first host, the gets'
    # from the second (a quarter of a part at least, beside Open MPI's own little traffic)
    for (ns, iface), count in sent.items():
        assert count >= SIZE // 8, f"{iface} of {ns} sent {count} bytes: {sent}"


@pytest.mark.parametrize("profile", sorted(matrix.STRICT_PROFILES))
def test_stripes_on_nic_profiles(two_nics, tmp_path, profile):
    """The same over NICs with real NICs' habits (ofi_strictmr's profiles over tcp;ofi_rxm,
    one domain per interface): each part registered and keyed in its NIC's domain
    (FI_MR_ENDPOINT binds it to that NIC's endpoint), reordered, completed by a provider
    thread, within a tight queue; ofi_strictmr checks every key and address, and the data
    is exact (_run)."""
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    launch, lines, sent = _run(two_nics, tmp_path, {},
                               matrix.profile_group(PROVIDER, profile, 2))
    assert (launch.stderr + launch.stdout).count("striping puts and gets") == 2, \
        "not every rank opened a second NIC"
    _assert_split(lines, sent)


def test_stripe_min_zero_uses_one_nic(two_nics, tmp_path):
    _, lines, sent = _run(two_nics, tmp_path, {"stripe_min": 0})
    zero = lines[0]
    assert zero["phases"]["start"]["nics"] == 1 and \
        _delta(zero, "start", "small", "stripe_count") == 0, zero["phases"]
    for ns in two_nics.namespaces:
        counts = sorted(sent[(ns, iface)] for iface in two_nics.ifaces)
        assert counts[-1] >= SIZE and counts[0] < SIZE // 8, \
            f"{ns}: with stripe_min=0 the NICs sent {counts}"


@pytest.mark.parametrize("wake", [0, 1], ids=["pace", "wake"])
def test_stress_beside_shm(two_nics, tmp_path, wake):
    """A node's three kinds of domain in one module at once: two ranks per host, each rank's
    node partner over shm, the other host's ranks over the first NIC with puts and gets of
    4 KiB or more split over both (stripe_min 4096; osc_stress's chunks are 1 byte to 64 KiB).
    osc_stress's random puts, gets and atomics to every rank, every phase checked exactly,
    on create windows and, on Open MPI 5, dynamic ones (4.1.4's osc/rdma hangs on those
    across hosts whatever the BTL: NOTES.txt 10). Each flavor moved puts over shm and split
    some over the NICs (osc_stress's local_puts and stripes, over all ranks; test above: the
    parts' bytes on each interface); with wake=1 each rank's two NICs are armed."""
    hosts = netns.per_host(two_nics, tmp_path)
    flavors = "create,dynamic" if launcher.ompi_major() >= 5 else "create"
    run = netns.run_mixed(hosts, tmp_path, wake, "osc_stress",
                          ["-s", "26", "-e", "4", "-f", flavors],
                          ours={"domain_include": "mheth*", "stripe_min": 4096}, nics=2)
    text = run.stdout + run.stderr
    assert text.count("striping puts and gets of 4096 bytes or more") == netns.MIXED_NRANKS, \
        f"not every rank opened a second NIC:\n{text[-2000:]}"
    rows = re.findall(r"^flavor (\w+) .* local_puts=(\d+) stripes=(\d+)", run.stdout, re.M)
    assert [r[0] for r in rows] == flavors.split(","), run.stdout[-1500:]
    for flavor, local_puts, stripes in rows:
        assert int(local_puts) > 0 and int(stripes) > 0, \
            f"{flavor}: {local_puts} puts over shm, {stripes} split over the NICs " \
            f"(all ranks)\n{run.stdout[-1500:]}"
