"""A NIC that fails mid-run (issue 26 item 4; NOTES.txt 2e).

Two host namespaces made by `scripts/check-multihost.sh --setup-only --nics 3`:
each host has mheth0 (10.77.0.0/24, which Open MPI's own TCP and mpirun's
daemons use), mheth1 (10.78.0.0/24) and mheth2 (10.79.0.0/24), which btl-ofi
is given (btl_<c>_domain_include) over tcp;ofi_rxm. One rank per host
(rank_nic_down.py): rank 0 repeats 4 MiB put, flush, get back, flush, compare;
once it has done 3 rounds this driver takes one host's interface down (`ip
link set ... down`), and the rank goes on for a few seconds more. Each test has
namespaces of its own, so an interface taken down stays out of the next.

  - Two NICs with striping, the further one (mheth1; btl-ofi's first is the
    first libfabric lists, mheth2) down on rank 0's host: btl-ofi sees its
    link down after a second without completions, says so (the nic-failed
    message), closes that endpoint and posts the parts that were on it again
    on the first NIC (stripe_parts_moved); later transfers go over the first
    NIC alone. Every round stays exact, also the rounds after the failure, no
    MPI call returns an error, and the job finalizes.
  - The only NIC btl-ofi uses (mheth2, no striping), down on rank 0's host:
    btl-ofi sees it the same way, says so, fails what was in flight, and
    reports a fatal error to Open MPI (btl_register_error), which ends the
    job with btl-ofi's text: osc/rdma cannot return a failed put or get as an
    MPI error (it retries it for ever), so ending the job is what is left.
  - The same NIC down on rank 1's host: nothing on rank 0's host shows it, so
    btl_<c>_nic_timeout (3 s here; by default only where the provider
    progresses on its own) is what tells; the same end.
"""

import os
import subprocess
import threading
import time

import pytest

import launcher
import matrix
import netns
import outcome

PROVIDER = "tcp;ofi_rxm"
SIZE = 4 << 20


@pytest.fixture
def three_nics(tmp_path_factory):
    yield from netns.own_hosts(tmp_path_factory.mktemp("netns-nicdown"), "--hosts", 2, "--nics", 3)


class _LinkDown(threading.Thread):
    """Takes `iface` of namespace `ns` down once `ready` exists (the rank wrote it)."""

    def __init__(self, ns, iface, ready, limit):
        super().__init__(daemon=True)
        self.ns, self.iface, self.ready, self.limit = ns, iface, ready, limit
        self.done = threading.Event()
        self.result = None

    def run(self):
        end = time.monotonic() + self.limit
        while not os.path.exists(self.ready) and time.monotonic() < end \
                and not self.done.is_set():
            time.sleep(0.05)
        if os.path.exists(self.ready):
            self.result = subprocess.run(["ip", "netns", "exec", self.ns, "ip", "link", "set",
                                          self.iface, "down"], capture_output=True, text=True)


def _launch(hosts, tmp_path, down_host, iface, expect, ours, seconds=8):
    ready = tmp_path / "ready"
    check = {"kind": "nic_down", "id": "nic_down", "size": SIZE, "seconds": seconds,
             "ready_file": str(ready), "expect": expect}
    downer = _LinkDown(hosts.namespaces[down_host], iface, ready, 120)
    downer.start()
    try:
        launch = launcher.run_mpi(2, {"checks": [check]}, 180, provider=PROVIDER, hosts=hosts,
                                  btl=f"self,tcp,{launcher.component_name()}",
                                  workdir=tmp_path, ours=ours)
    finally:
        downer.done.set()
        downer.join()
    assert downer.result is not None and downer.result.returncode == 0, \
        f"taking {iface} of {hosts.namespaces[down_host]} down: " \
        f"{downer.result and downer.result.stderr}\n{launch.stderr[-3000:]}"
    assert not launch.timed_out, f"the job did not end:\n{launch.stderr[-3000:]}"
    return launch, check


def _run(hosts, tmp_path, down_host, iface, ours):
    """A launch that must finish: the rank's verdict and both ranks' lines."""
    launch, check = _launch(hosts, tmp_path, down_host, iface, "exact", ours)
    group = matrix.Group(PROVIDER, "default", 2, "base")
    outcome.judge_group(launch, group, [check["id"]]).apply()
    outcome.assert_check_clean(launch, check["id"])
    lines = outcome.rank_lines(launch, "NICDOWN", check["id"], 2)
    assert lines[0]["host"] == hosts.nodes[0], f"rank 0 ran on {lines[0]['host']}"
    return launch, lines


def _ended_by_btl_ofi(launch, iface, shown):
    """The job ended with btl-ofi's fatal error about iface: its nic-failed message (saying
    what showed it), Open MPI's end of the job carrying btl-ofi's text, no round inexact."""
    text = launch.stdout + launch.stderr
    assert launch.returncode != 0, f"exit 0: the job went on after its NIC failed\n{text[-3000:]}"
    assert _failed_message(launch, iface, "reports a fatal error to Open MPI, which ends the job") \
        and f"Parameter: btl_{launcher.component_name()}_domain_exclude" in " ".join(text.split()) \
        and shown in text, text[-3000:]
    assert f"btl-ofi: NIC {iface} ({PROVIDER}) failed" in text and \
        "one-sided communication through it cannot go on" in text, \
        f"Open MPI did not end the job with btl-ofi's error:\n{text[-3000:]}"
    assert "inexact round" not in launch.stderr, text[-3000:]


def _failed_message(launch, iface, follows):
    """btl-ofi's message about the failed NIC iface (help-mpi-btl-ofi.txt nic-failed-*),
    saying what follows (words of its paragraph), in the job's output."""
    text = " ".join((launch.stdout + launch.stderr).split())
    return "failed while operations were in flight on it" in text and \
        f"NIC (domain): {iface}" in text and follows in text


def test_only_nic_down_here_ends_the_job(three_nics, tmp_path):
    launch, _ = _launch(three_nics, tmp_path, 0, "mheth2", "abort",
                        {"domain_include": "mheth2", "stripe_min": 0})
    _ended_by_btl_ofi(launch, "mheth2", "its link is down")


def test_only_nic_down_at_peer_times_out(three_nics, tmp_path):
    launch, _ = _launch(three_nics, tmp_path, 1, "mheth2", "abort",
                        {"domain_include": "mheth2", "stripe_min": 0, "nic_timeout": 3})
    _ended_by_btl_ofi(launch, "mheth2", "nothing completed for 3 s")


def test_further_nic_down_moves_parts(three_nics, tmp_path, capsys):
    launch, lines = _run(three_nics, tmp_path, 0, "mheth1",
                         {"domain_include": "mheth1,mheth2", "stripe_min": 65536})
    zero = lines[0]
    with capsys.disabled():
        print(f"\nmheth1 down under striped 4 MiB puts and gets: {zero['rounds']} rounds, "
              f"{zero['exact']} exact, NIC failed after round {zero['failed_after_round']}, "
              f"parts moved {zero['end']['stripe_parts_moved']}")
    assert zero["start"]["nics"] == 2, f"rank 0 does not stripe over two NICs: {zero}"
    assert zero["end"]["nic_failures"] == 1 and zero["failed_after_round"], zero
    assert zero["rounds"] >= zero["failed_after_round"] + 5, \
        f"too few rounds after the failure to show the transfers go on: {zero}"
    assert zero["exact"] == zero["rounds"] and zero["error"] is None, zero
    assert zero["end"]["stripe_count"] - zero["start"]["stripe_count"] >= 2, zero
    assert zero["end"]["stripe_parts_moved"] >= 1, \
        f"no part moved off the failed NIC to the first one: {zero}"
    assert _failed_message(launch, "mheth1", "posted again on the first NIC") and \
        "its link is down" in launch.stderr, \
        launch.stderr[-3000:]
    assert launch.returncode == 0, f"exit {launch.returncode}"
