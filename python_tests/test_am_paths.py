"""Atomics and gets as messages that the target's progress applies (issue 25
item 4; NOTES.txt sections 4, 5, 6; btl_ofi/btl_ofi_am.c).

The conformance variant "messages" (matrix.py) forces both paths on every
provider of the default set. Here: a real provider without a 64-bit
compare-and-swap served through them (libfabric 1.17's plain net), the same
paths under ofi_strictmr's NIC-like MR modes with zero violations, the decline
when no completion proof is left, an unknown path setting, and which completion
modes offer osc/rdma non-fetching atomics at all."""

import re
import socket
import subprocess

import pytest

import check_sets
import fabric
import launcher
import matrix
import outcome

FORCED = dict(matrix.VARIANTS["messages"])

# Small, but every path: fetching and non-fetching atomics of both widths and
# floats, compare-and-swap, gets from one byte to several pieces, accumulates
# beyond osc/rdma's atomic limit (get-op-put), contention.
PLAN = ([check_sets.op_check("fop", "create_du8", "lock_exclusive", "int64", 1),
         check_sets.op_check("acc", "create_du8", "flush", "int64", 3),
         check_sets.op_check("gacc", "dynamic", "lock_all", "int64", 2, mpi_op="MAX"),
         check_sets.op_check("acc", "create_du4", "fence", "int32", 4, mpi_op="BXOR"),
         check_sets.make_check("cas", "fast", flavor_name="create_du8", sync="fence",
                               dtype="int64"),
         check_sets.make_check("cas", "fast", flavor_name="dynamic", sync="flush", dtype="int32"),
         check_sets.op_check("get", "dynamic", "flush", "int32", 5),
         check_sets.op_check("get", "create_du1", "lock_exclusive", "int8", 4099),
         check_sets.op_check("get", "create_du1", "fence", "int8", (1 << 20) + 13),
         check_sets.op_check("acc", "create_du8", "lock_all", "int64", 600)]
        + check_sets.concurrency_checks()[:2])


def _selected_paths(launch):
    """(provider, atomics path, gets path) of every rank's 'selected provider' line."""
    return [(m["provider"], m["atomics"], m["gets"])
            for m in outcome.selected_re().finditer(launch.stdout + launch.stderr)]


def test_provider_without_cas_served_by_messages(tmp_path, mpi_env_file):
    """libfabric 1.17's plain net names FI_ATOMIC but has no compare-and-swap.
    With nothing else left (FI_PROVIDER=net, ofi_rxm excluded) btl-ofi serves
    it with every atomic as a message: exact results, the counters of the
    message path moved on both sides, none through the compare-and-swap loop,
    and gets stay native (net grants RMA read)."""
    names = [p.name for p in fabric.rdm_rma_atomic_providers()]
    if "net" not in names:
        pytest.skip(f"provider 'net' not present here (present: {names})")
    launch = launcher.run_mpi(2, {"checks": PLAN}, 180, workdir=tmp_path,
                              ours={"provider_exclude": "ofi_rxm"},
                              env_overrides={"FI_PROVIDER": "net"})
    assert not launch.timed_out and launch.returncode == 0, launch.tail()
    assert _selected_paths(launch) == [("net", "messages", "native")] * 2, launch.tail()
    recs = outcome.records(launch, "check")
    assert [r["id"] for r in recs] == [c["id"] for c in PLAN]
    assert not [(r["id"], r["errors"]) for r in recs if r["errors"]]
    total = outcome.counter_totals(launch, ("atomics_as_messages", "messages_applied",
                                            "atomic_emulated_count", "gets_as_messages",
                                            "get_count"))
    assert total["atomics_as_messages"] > 0, total
    assert total["messages_applied"] == total["atomics_as_messages"], total
    assert total["atomic_emulated_count"] == 0 and total["gets_as_messages"] == 0, total
    assert total["get_count"] > 0, total


@pytest.mark.parametrize("core", matrix.STRICT_CORES)
@pytest.mark.parametrize("mode", sorted(matrix.STRICT_SETS))
def test_messages_on_nic_modes(core, mode, tmp_path, mpi_env_file):
    """Both message paths under ofi_strictmr's NIC-like MR modes: under
    FI_MR_LOCAL the pieces of get data go out from registered copies; the
    provider must see no violation, the results must be exact and the
    message counters must move (judge_group, variant "messages")."""
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    bits = matrix.STRICT_SETS[mode]
    group = matrix.Group(f"{core};ofi_strictmr", "default", 2, "messages",
                         matrix.mr_label(set(bits)), (mode, 4))
    launch = launcher.run_mpi(2, {"checks": PLAN}, 240, provider=group.provider, workdir=tmp_path,
                              ours=FORCED, env_overrides=group.env(tmp_path))
    launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [c["id"] for c in PLAN]).apply()
    for spec in PLAN:
        outcome.judge_check(launch, group, spec).apply()


NO_PROOF = '''The libfabric provider left for btl-ofi grants neither delivery-complete
(FI_DELIVERY_COMPLETE) nor RMA read (FI_READ), or btl-ofi was told not to use
them. Without one of the two btl-ofi cannot prove that a put reached its
target before MPI's flush or unlock returns: read_proof completion reads
behind the writes, and gets sent as messages (btl_ofi_gets=messages) ask for
no RMA read. btl-ofi is disabling itself; Open MPI continues without it.

  Provider:   {provider}
  Completion: btl_{c}_completion=read_proof
  Gets:       btl_{c}_gets=messages
  Processes:  {processes}'''

BAD_PATH = '''An MCA parameter of btl-ofi has a value it does not know. btl-ofi is
disabling itself; Open MPI continues without it.

  Parameter:  btl_{c}_{param}
  Value:      "sometimes"
  Valid:      one of auto, native, messages
  Processes:  {processes}'''

# What the declining runs try: no compare-and-swap (see test_bad_input.py).
DECLINE_PLAN = [check_sets.op_check("put", "create_du8", "fence", "int64", 8),
                check_sets.op_check("get", "create_du8", "lock_shared", "int64", 8)]


@pytest.fixture(scope="module")
def component():
    return launcher.component_name()


def _processes(nranks):
    return f"{nranks} of {nranks} (ranks 0-{nranks - 1}) on {socket.gethostname().split('.')[0]}"


def _judge_declined(launch, expected, what, component, nranks):
    text = expected.replace("{c}", component).replace("{processes}", _processes(nranks))
    outcome.judge_bad_input(launch, text, what, len(DECLINE_PLAN)).apply()


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_no_completion_proof_declines(provider, tmp_path, mpi_env_file, component):
    """Gets as messages ask the provider for no RMA read; read_proof completion
    needs one. Together they leave no way to prove remote completion: btl-ofi
    declines, naming the provider and both settings, and Open MPI carries on
    (the provider grants both: this is how the forcing parameter meets the
    check that a provider with neither delivery-complete nor read gets)."""
    if provider not in [p.name for p in fabric.rdm_rma_atomic_providers()]:
        pytest.skip(f"{provider} not present here")
    launch = launcher.run_mpi(2, {"checks": DECLINE_PLAN}, 90, provider=provider,
                              workdir=tmp_path, ours={"gets": "messages",
                                                      "completion": "read_proof"})
    _judge_declined(launch, NO_PROOF.replace("{provider}", provider),
                    f"gets=messages completion=read_proof on {provider}", component, 2)


def test_same_settings_with_delivery_serve(tmp_path, mpi_env_file):
    """The control of the decline above: gets as messages with delivery
    completion (auto) on the same provider are served, and go as messages."""
    launch = launcher.run_mpi(2, {"checks": DECLINE_PLAN}, 90, provider="shm", workdir=tmp_path,
                              ours={"gets": "messages"})
    assert launch.returncode == 0 and not outcome.our_messages(launch), launch.tail()
    assert _selected_paths(launch) == [("shm", "native", "messages")] * 2, launch.tail()
    total = outcome.counter_totals(launch, ("gets_as_messages", "messages_applied"))
    assert total["gets_as_messages"] > 0 and total["messages_applied"] >= total["gets_as_messages"]


@pytest.mark.parametrize("param", ["atomics", "gets"])
def test_unknown_path_setting(param, tmp_path, mpi_env_file, component):
    launch = launcher.run_mpi(2, {"checks": DECLINE_PLAN}, 90, workdir=tmp_path,
                              ours={param: "sometimes"})
    _judge_declined(launch, BAD_PATH.replace("{param}", param), f"{param}=sometimes", component,
                    2)


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_refused_get_requests(provider, tmp_path, mpi_env_file):
    """A get request naming a key the target has no registration for is
    refused by the target's progress: btl_<c>_debug_inject_cq_error=2 corrupts the
    key of every 2nd get. Each corrupted one must be refused and counted at its
    target (refused_count == injected_faults), its data must not arrive
    (osc/rdma 4.1 does not turn the failed callback into an MPI error, so the
    check sees its result buffer untouched), and every other get is exact."""
    if provider not in [p.name for p in fabric.rdm_rma_atomic_providers()]:
        pytest.skip(f"{provider} not present here")
    plan = {"checks": [check_sets.op_check("get", "create_du8", "flush", "int64", 4)
                       for _ in range(4)]}
    launch = launcher.run_mpi(2, plan, 120, provider=provider, workdir=tmp_path,
                              ours={"gets": "messages", "debug_inject_cq_error": "2"})
    assert not launch.timed_out and launch.returncode == 0, launch.tail()
    recs = outcome.records(launch, "check")
    assert len(recs) == len(plan["checks"]), launch.tail()
    total = outcome.counter_totals(launch, ("injected_faults", "refused_count", "gets_as_messages"))
    assert total["injected_faults"] > 0, total
    assert total["refused_count"] == total["injected_faults"], total
    for rec in recs:
        injected = rec["deltas"].get("injected_faults", 0)
        assert bool(rec["errors"]) == bool(injected), \
            f"{rec['id']}: {injected} corrupted keys, errors {rec['errors'][:2]}"


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm", "sockets"])
def test_atomics_as_messages_with_read_proof(provider, tmp_path, mpi_env_file):
    """Atomics as messages beside read_proof completion: puts are still proven
    by reads, atomics by their answers (flush posts no atomic read for them, so
    discovery need not ask for FI_ATOMIC or FI_ORDER_ATOMIC_RAW). Exact, with
    both kinds of proof counted and no compare-and-swap loop."""
    if provider not in [p.name for p in fabric.rdm_rma_atomic_providers()]:
        pytest.skip(f"{provider} not present here")
    plan = {"checks": PLAN + [check_sets.op_check("put", "create_du8", "flush", "int64", 5),
                              check_sets.make_check("excl_lock", "fast", flavor_name="create_du8",
                                                    repeat=30)]}
    launch = launcher.run_mpi(2, plan, 180, provider=provider, workdir=tmp_path,
                              ours={"atomics": "messages", "completion": "read_proof"})
    assert not launch.timed_out and launch.returncode == 0, launch.tail()
    sel = [(m["provider"], m["completion"], m["atomics"], m["gets"])
           for m in outcome.selected_re().finditer(launch.stdout + launch.stderr)]
    assert sel == [(provider, "read_proof", "messages", "native")] * 2, launch.tail()
    recs = outcome.records(launch, "check")
    assert len(recs) == len(plan["checks"]), launch.tail()
    assert not [(r["id"], r["errors"][:2]) for r in recs if r["errors"]]
    total = outcome.counter_totals(launch, ("atomics_as_messages", "messages_applied",
                                            "proof_reads", "atomic_emulated_count"))
    assert total["atomics_as_messages"] > 0 and total["proof_reads"] > 0, total
    assert total["messages_applied"] == total["atomics_as_messages"], total
    assert total["atomic_emulated_count"] == 0, total


def _btl_flags():
    """btl_<component>_flags as ompi_info shows it (registration's value)."""
    ours = launcher.component_name()
    info = subprocess.run(["ompi_info", "--parsable", "--level", "9", "--param", "btl", ours],
                          env=launcher.mpi_env(launcher.ROOT_ENV), capture_output=True,
                          text=True, timeout=60)
    key = f":param:{launcher.param('flags')}:value:"
    values = [ln.split(key, 1)[1] for ln in info.stdout.splitlines() if key in ln]
    assert values, info.stdout[-2000:] + info.stderr[-2000:]
    return values[0].split(",")


NOFETCH_RE = re.compile(r"btl:\S+: non-fetching atomics (advertised|not advertised)")


# (provider, settings, what every rank says): delivery-complete, read_proof, messages
NOFETCH_CASES = [("shm", {}, "advertised"),
                 ("tcp;ofi_rxm", {"completion": "read_proof"}, "not advertised"),
                 ("tcp;ofi_rxm", {"completion": "read_proof", "atomics": "messages"},
                  "advertised")]


def test_nonfetching_atomics_only_where_proven(tmp_path, mpi_env_file):
    """Non-fetching atomics (MCA_BTL_FLAGS_ATOMIC_OPS) are offered only where their
    callback means applied, as btl.h asks: under delivery-complete or as messages.
    Under read_proof their callback would come at transmit, so they are withheld and
    osc/rdma sends them as fetch-and-ops. ompi_info shows the flag (registration
    keeps it; Open MPI 4.1), every rank says what it chose, and the results are exact
    each way."""
    if launcher.ompi_major() < 5:
        # (5.0's ompi_info cannot name MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION, which its
        # flag list lacks, so it leaves btl_<component>_flags out: the stock btl/ofi's too)
        assert {"atomics", "fetching-atomics"} <= set(_btl_flags())
    present = [p.name for p in fabric.rdm_rma_atomic_providers()]
    plan = {"checks": PLAN[:2] + [check_sets.make_check("excl_lock", "fast",
                                                        flavor_name="create_du8", repeat=10)]}
    for i, (provider, ours, advertised) in enumerate(NOFETCH_CASES):
        assert provider in present, present
        launch = launcher.run_mpi(2, plan, 120, provider=provider, workdir=tmp_path / str(i),
                                  ours=ours)
        assert not launch.timed_out and launch.returncode == 0, launch.tail()
        said = NOFETCH_RE.findall(launch.stdout + launch.stderr)
        assert said == [advertised] * 2, (provider, ours, said, launch.tail())
        recs = outcome.records(launch, "check")
        assert len(recs) == len(plan["checks"]), launch.tail()
        assert not [(r["id"], r["errors"][:2]) for r in recs if r["errors"]], (provider, ours)


# ---- NICs without atomics or RMA read: ofi_strictmr's capability limits -----------
#
# Nothing forced here: btl-ofi's own choice (auto) on a provider that offers no
# FI_ATOMIC (FI_OFI_STRICTMR_ATOMICS=none), or no FI_READ / FI_REMOTE_READ and no
# fetching or compare atomics (FI_OFI_STRICTMR_WRITE_ONLY=1, as an RMA-write-only
# NIC), under the verbs-like MR mode set. The provider counts every operation it
# lacks that is posted (op_refused): btl-ofi must post none.

NIC_LIMITS = {
    # name: (ofi_strictmr variables, the paths btl-ofi must choose: atomics, gets)
    "no_atomics": ({"FI_OFI_STRICTMR_ATOMICS": "none"}, ("messages", "native")),
    "write_only": ({"FI_OFI_STRICTMR_WRITE_ONLY": "1"}, ("messages", "messages")),
}


def _limited_env(tmp_path, limits):
    bits = matrix.STRICT_SETS["verbs-like"]
    return {"FI_PROVIDER_PATH": str(matrix.strict_provider_dir()),
            "FI_OFI_STRICTMR_MR_MODE": ",".join(bits), "FI_OFI_STRICTMR_KEY_SIZE": "4",
            "FI_OFI_STRICTMR_REPORT": str(tmp_path / "strictmr.jsonl"), **limits}


@pytest.mark.parametrize("core", matrix.STRICT_CORES)
@pytest.mark.parametrize("limit", sorted(NIC_LIMITS))
def test_nic_lacking_atomics_or_read_is_served(core, limit, tmp_path, mpi_env_file):
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    limits, (atomics, gets) = NIC_LIMITS[limit]
    group = matrix.Group(f"{core};ofi_strictmr", "default", 2, "base",
                         matrix.mr_label(set(matrix.STRICT_SETS["verbs-like"])), ("verbs-like", 4))
    launch = launcher.run_mpi(2, {"checks": PLAN}, 240, provider=group.provider, workdir=tmp_path,
                              env_overrides=_limited_env(tmp_path, limits))
    launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [c["id"] for c in PLAN]).apply()
    for spec in PLAN:
        outcome.judge_check(launch, group, spec).apply()
    assert _selected_paths(launch) == [(group.provider, atomics, gets)] * 2, launch.tail()
    total = outcome.counter_totals(launch, ("atomics_as_messages", "gets_as_messages",
                                            "messages_applied", "atomic_emulated_count"))
    assert total["atomics_as_messages"] > 0 and total["atomic_emulated_count"] == 0, total
    assert (total["gets_as_messages"] > 0) == (gets == "messages"), total
    assert total["messages_applied"] == total["atomics_as_messages"] + total["gets_as_messages"]
    events, _ = outcome.strict_events(launch)
    assert events.get("op_refused", 0) == 0, events


NO_PROOF_AUTO = (NO_PROOF.replace("btl_{c}_completion=read_proof", "btl_{c}_completion=auto")
                 .replace("btl_{c}_gets=messages", "btl_{c}_gets=auto"))


@pytest.mark.parametrize("core", matrix.STRICT_CORES)
def test_nic_without_read_or_delivery_declines(core, tmp_path, mpi_env_file, component):
    """A write-only NIC that completes at transmit only (FI_OFI_STRICTMR_WRITE_ONLY=1,
    FI_OFI_STRICTMR_DELIVERY_COMPLETE=0) leaves btl-ofi no proof of remote
    completion: declined with the reason, and Open MPI carries on."""
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    provider = f"{core};ofi_strictmr"
    env = _limited_env(tmp_path, {"FI_OFI_STRICTMR_WRITE_ONLY": "1",
                                  "FI_OFI_STRICTMR_DELIVERY_COMPLETE": "0"})
    launch = launcher.run_mpi(2, {"checks": DECLINE_PLAN}, 90, provider=provider,
                              workdir=tmp_path, env_overrides=env)
    _judge_declined(launch, NO_PROOF_AUTO.replace("{provider}", provider),
                    f"write-only, transmit-complete {provider}", component, 2)


# ofi_strictmr's profiles whose NIC completes at transmit only (no delivery-complete):
# with gets forced to messages btl-ofi asks for no RMA read, and must decline there.
TRANSMIT_COMPLETE_PROFILES = {"verbs-like"}
# Queues of 4 and a CQ of 32 (as test_nic_profiles.py's tight case): few operations
# may be in flight, and both ranks owe each other answers.
TIGHT = {"FI_OFI_STRICTMR_TX_SIZE": "4", "FI_OFI_STRICTMR_RX_SIZE": "4",
         "FI_OFI_STRICTMR_CQ_SIZE": "32"}


@pytest.mark.parametrize("core", matrix.STRICT_CORES)
@pytest.mark.parametrize("profile", sorted(matrix.STRICT_PROFILES) + ["efa-like+tight"])
def test_messages_on_nic_profiles(profile, core, tmp_path, mpi_env_file, component):
    """Both message paths forced on ofi_strictmr's NIC profiles (their queues, CQ
    sizes, reordering and own progress; efa-like also with queues of 4 and a CQ
    of 16): exact, no violation, no CQ overrun, nothing posted that the NIC
    lacks. A profile without delivery-complete (verbs-like) is declined: gets as
    messages leave no RMA read to prove completion with."""
    if not matrix.strict_installed():
        pytest.skip("ofi_strictmr is not installed beside the component")
    name, _, tight = profile.partition("+")
    modes, key = matrix.STRICT_PROFILES[name]
    provider = f"{core};ofi_strictmr"
    env = matrix.profile_env(name, tmp_path / "strictmr.jsonl")
    env.update(TIGHT if tight else {})
    if name in TRANSMIT_COMPLETE_PROFILES:
        launch = launcher.run_mpi(2, {"checks": DECLINE_PLAN}, 90, provider=provider,
                                  workdir=tmp_path, ours=FORCED, env_overrides=env)
        _judge_declined(launch, NO_PROOF.replace("btl_{c}_completion=read_proof",
                                                 "btl_{c}_completion=auto")
                        .replace("{provider}", provider), f"profile {name}", component, 2)
        return
    # judged as a mode set (violations), the profile's events below: with atomics and
    # gets as messages little RMA is left in flight to reorder
    group = matrix.Group(provider, "default", 2, "messages", matrix.mr_label(set(modes)),
                         (name, key))
    launch = launcher.run_mpi(2, {"checks": PLAN}, 240, provider=provider, workdir=tmp_path,
                              ours=FORCED, env_overrides=env)
    launch.strict_report = tmp_path / "strictmr.jsonl"
    outcome.judge_group(launch, group, [c["id"] for c in PLAN]).apply()
    for spec in PLAN:
        outcome.judge_check(launch, group, spec).apply()
    events, _ = outcome.strict_events(launch)
    assert not {ev: events.get(ev) for ev in ("cq_full", "op_refused") if events.get(ev)}, events
