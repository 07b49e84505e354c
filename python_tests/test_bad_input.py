"""Bad or unusable btl-ofi parameters, from 2 and from 3 ranks: btl-ofi must say
so in its own words, exactly once per job (the lowest declining rank speaks for
all, NOTES.txt section 11), mpirun must log no ORTE error, and the job must
either run its one-sided work correctly through the fallback, with our counters
absent or idle, or stop with that message. Never a crash, never a hang.

The expected messages, word for word, and the judges are in refusals.py."""

import json
import re
import socket

import pytest

import fabric
import launcher
import matrix
import outcome
from refusals import (ATOMICS_MISSING, BAD_CHOICE, BAD_MR_MODE, BROKEN, DOMAIN_BOTH,
                      DOMAIN_MALFORMED, DOMAIN_NONE_LEFT, DOMAIN_NOT_FOUND, INCLUDE_EXCLUDE,
                      LACKS_CAPS, MALFORMED, MR_DECLINED, NO_PROVIDER, NO_SEND_BTL, NOT_FOUND,
                      OUT_OF_RANGE, PLAN, REGISTER_FAILED, available, judge_no_sender,
                      run_and_judge)

pytestmark = pytest.mark.bad_input

RANKS = (2, 3)


# Every input tried, by parameter (the documented list):
#   provider_include: nosuchprov, ",shm", "shm,,tcp", "sh m", "^", "shm,^tcp"; with an
#     exclude list too (names as libfabric users write them: test_provider_names.py)
#   provider_exclude: "shm,,tcp", "^tcp", every provider fi_getinfo offers
#   mr_mode: bogus;  completion: sometimes
#   progress_batch: 0, 9999, abc;  op_free_list_max: xyz, -5
#   debug_inject_eagain: lots, 1001;  debug_inject_cq_error: 1.5
#   put_coalesce: 2, yes;  put_coalesce_max: 0, 1M;  nic_timeout: -2, 1m
#   idle_poll_ratio: -1, 1025, fast;  local_busy_poll_us: -1, 20us;  wake: 2, yes
#   FI_PROVIDER=nosuch_provider (environment)
#   provider net alone (no 64-bit CAS), a provider needing a declined MR mode, a declined provider
CASES = {
    # name: (mca parameters, expected message with {c} and {processes} to fill)
    "include_unknown_provider": ({"provider_include": "nosuchprov"}, NOT_FOUND),
    # a malformed list: the value quoted, and the first item btl-ofi cannot read
    **{case: ({f"provider_{which}": value},
              MALFORMED.replace("{which}", f"provider_{which}").replace("{value}", value)
              .replace("{item}", item))
       for case, which, value, item in [
           ("include_leading_comma", "include", ",shm", ""),
           ("include_empty_item", "include", "shm,,tcp", ""),
           ("include_space", "include", "sh m", "sh m"),
           ("include_caret_alone", "include", "^", ""),
           ("include_caret_inside", "include", "shm,^tcp", "^tcp"),
           ("exclude_caret", "exclude", "^tcp", "^tcp"),
           ("exclude_empty_item", "exclude", "shm,,tcp", "")]},
    "include_and_exclude": ({"provider_include": "shm", "provider_exclude": "sockets"},
                            INCLUDE_EXCLUDE),
    "mr_mode_bogus": ({"mr_mode": "bogus"}, BAD_MR_MODE),
    "completion_sometimes": ({"completion": "sometimes"}, BAD_CHOICE),
    # the component registers these as strings and parses them itself (Open MPI
    # would read "abc" as 0 without a word), so every value that is not an
    # integer in range gets the same message, quoting it
    **{f"{param}_{value}": ({param: value},
                            OUT_OF_RANGE.replace("{param}", param).replace("{value}", value)
                            .replace("{low}", low).replace("{high}", high))
       for param, value, low, high in [
           ("progress_batch", "0", "1", "256"), ("progress_batch", "9999", "1", "256"),
           ("progress_batch", "abc", "1", "256"), ("debug_inject_eagain", "1001", "0", "1000"),
           ("debug_inject_eagain", "lots", "0", "1000"), ("op_free_list_max", "-5", "-1", "16777216"),
           ("op_free_list_max", "xyz", "-1", "16777216"),
           ("debug_inject_cq_error", "1.5", "0", "2147483647"), ("put_coalesce", "2", "-1", "1"),
           ("put_coalesce", "yes", "-1", "1"), ("put_coalesce_max", "0", "1", "4096"),
           ("put_coalesce_max", "1M", "1", "4096"), ("nic_timeout", "-2", "-1", "86400"),
           ("nic_timeout", "1m", "-1", "86400"), ("idle_poll_ratio", "-1", "0", "1024"),
           ("idle_poll_ratio", "1025", "0", "1024"), ("idle_poll_ratio", "fast", "0", "1024"),
           ("local_busy_poll_us", "-1", "0", "1000000"),
           ("local_busy_poll_us", "20us", "0", "1000000"),
           ("wake", "2", "-1", "1"), ("wake", "yes", "-1", "1")]},
}


@pytest.fixture(scope="module")
def component():
    return launcher.component_name()




@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_parameter(case, nranks, tmp_path, mpi_env_file, component):
    mca, expected = CASES[case]
    expected = expected.replace("{available}", available()).replace("{fi_provider}",
                                                                      "(not set)")
    run_and_judge(tmp_path, nranks, expected, f"{case} ({mca})", component, ours=mca)


# Names of providers that cannot serve one-sided MPI, as libfabric users write
# them: libfabric 2.x's RDM sm2 (neither RMA nor atomics); 1.17 has no sm2.
# (2.x's plain RDM tcp has RMA but no atomics: the name "tcp" stands for
# tcp;ofi_rxm there too, test_provider_names.py.)
LACKING = ("sm2",)


def _lacks(caps):
    missing = [name for bit, name in ((fabric.FI_RMA, "FI_RMA"), (fabric.FI_ATOMIC, "FI_ATOMIC"))
               if not caps & bit]
    return " and ".join(missing)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("name", LACKING)
def test_provider_lacking_rma_or_atomics(name, nranks, tmp_path, mpi_env_file, component):
    """A provider name that libfabric knows as an RDM provider without RMA or
    atomics is declined with what it lacks; a name it does not know at all gets
    the unknown-provider message, listing what is available."""
    caps = fabric.rdm_caps(name)
    if caps is None:
        expected = NOT_FOUND.replace("nosuchprov", name).replace("{fi_provider}", "(not set)")
    else:
        assert _lacks(caps), f"{name} has RMA and atomics here: add it to the providers tested"
        expected = LACKS_CAPS.replace("{provider}", name).replace("{lacks}", _lacks(caps))
    run_and_judge(tmp_path, nranks, expected.replace("{available}", available()),
                   f"provider {name}", component, provider=name)


@pytest.mark.parametrize("nranks", RANKS)
def test_fi_provider_elsewhere(nranks, tmp_path, mpi_env_file, component):
    """FI_PROVIDER naming no provider leaves libfabric offering nothing; the
    no-provider message names FI_PROVIDER."""
    expected = NO_PROVIDER.replace("{exclude}", "(none)").replace("{fi_provider}",
                                                                  "nosuch_provider")
    run_and_judge(tmp_path, nranks, expected, "FI_PROVIDER=nosuch_provider", component,
                   env_overrides={"FI_PROVIDER": "nosuch_provider"})


@pytest.mark.parametrize("nranks", RANKS)
def test_exclude_every_provider(nranks, tmp_path, mpi_env_file, component):
    """An exclude list naming every provider fi_getinfo offers leaves nothing
    (those with RMA and atomics, and those with RMA and FI_MSG, which btl-ofi
    serves with atomics or gets as messages)."""
    names = [p.name for p in fabric.rdm_rma_atomic_providers()]
    everything = ",".join(names + [n for n in fabric.servable_rdm_providers() if n not in names])
    if not everything:
        pytest.skip("fi_getinfo lists no RDM provider with RMA and atomics")
    expected = NO_PROVIDER.replace("{exclude}", everything).replace("{fi_provider}", "(not set)")
    run_and_judge(tmp_path, nranks, expected, f"exclude everything ({everything})", component,
                   ours={"provider_exclude": everything})


def test_provider_without_64bit_cas(tmp_path, mpi_env_file, component):
    """libfabric 1.17's plain 'net' lists RMA and atomics but implements no
    atomic. When it is all that is left (FI_PROVIDER=net, ofi_rxm excluded, so
    net;ofi_rxm is gone too) and btl_ofi_atomics=native forbids atomics as
    messages, it is refused with the reason. (With net;ofi_rxm left, btl-ofi
    passes net over for it: test_provider_names.py; without the setting, net
    serves with its atomics as messages: test_am_paths.py.)"""
    names = [p.name for p in fabric.rdm_rma_atomic_providers()]
    if "net" not in names:
        pytest.skip(f"provider 'net' not present here (present: {names})")
    for nranks in RANKS:
        run_and_judge(tmp_path / f"np{nranks}", nranks,
                       ATOMICS_MISSING.replace("{provider}", "net"), "provider net", component,
                       ours={"provider_exclude": "ofi_rxm", "atomics": "native"},
                       env_overrides={"FI_PROVIDER": "net"})


# What ofi_strictmr demands to stand for a provider with raw keys (FI_MR_RAW,
# keys wider than 8 bytes), which btl-ofi does not carry.
RAW_DEMAND = ("raw", "virt_addr", "allocated", "prov_key")
RAW_KEY_SIZE = 16


@pytest.mark.parametrize("nranks", RANKS)
def test_provider_needing_declined_mr_mode(nranks, tmp_path, mpi_env_file, component):
    """A provider that insists on an MR mode btl-ofi does not serve (raw keys,
    or rma_event / mmu_notify) is refused with the mr-mode-declined message.
    No local provider asks for one, so the strict provider is made to demand
    raw keys of 16 bytes; a host provider that insists on one is tried too."""
    prov_dir = matrix.strict_provider_dir()
    assert (prov_dir / "libstrictmr-fi.so").exists(), f"{prov_dir}: make install missing"
    needs = "|".join(name for name in fabric.MR_BITS if name in RAW_DEMAND)
    env = {"FI_PROVIDER_PATH": str(prov_dir),
           "FI_OFI_STRICTMR_MR_MODE": ",".join(RAW_DEMAND),
           "FI_OFI_STRICTMR_KEY_SIZE": str(RAW_KEY_SIZE)}
    expected = MR_DECLINED.replace("{provider}", "shm;ofi_strictmr").replace("{needs}", needs)
    run_and_judge(tmp_path / "strict-raw", nranks, expected, "shm;ofi_strictmr demanding raw",
                   component, provider="shm;ofi_strictmr", env_overrides=env)
    for provider, bits in outcome.providers_declining_mr().items():
        info = next(p for p in fabric.rdm_rma_atomic_providers() if p.name == provider)
        needs = "|".join(fabric.mr_names_ordered(info.mr_modes[0]))
        expected = MR_DECLINED.replace("{provider}", provider).replace("{needs}", needs)
        run_and_judge(tmp_path / provider.replace(";", "+"), nranks, expected,
                       f"provider {provider} needing {sorted(bits)}", component,
                       provider=provider)




@pytest.mark.parametrize("nranks", RANKS)
def test_btl_list_without_sender(nranks, tmp_path, mpi_env_file, component):
    """--mca btl self,<c> under pml ob1: no BTL sends to the other ranks of this node
    (judge_no_sender)."""
    btls = f"self,{component}"
    launch = launcher.run_mpi(nranks, {"checks": PLAN}, timeout=90, workdir=tmp_path, btl=btls)
    expected = NO_SEND_BTL.format(btls=btls, where="on this node", node=launcher.node_btl(),
                                  c=component, host=socket.gethostname().split(".")[0])
    judge_no_sender(launch, expected, f"--mca btl {btls}, {nranks} ranks")


def test_declined_provider_is_explained(declined_provider, tmp_path, mpi_env_file, component):
    """A provider btl-ofi declines by design (known broken, matrix.DECLINED) is
    named with the reason, word for word, from 2 and from 3 ranks, and the job
    still does its one-sided work without btl-ofi. This is the provider's one
    test: the conformance matrix leaves it out."""
    version = next(p.version for p in fabric.rdm_rma_atomic_providers()
                   if p.name == declined_provider)
    expected = (BROKEN.replace("{provider}", declined_provider).replace("{version}", version)
                .replace("{reason}", matrix.declined_reason(declined_provider)))
    for nranks in RANKS:
        run_and_judge(tmp_path / f"np{nranks}", nranks, expected,
                       f"declined provider {declined_provider}", component,
                       provider=declined_provider)


# ---- A NIC's limit on live registrations, per NIC profile -----------------------------

REG_LIMIT = 16  # ofi_strictmr's FI_OFI_STRICTMR_REG_LIMIT: a few windows' worth
REG_WINDOWS_MAX = 64
REG_CHECK = {"kind": "reglimit", "id": "reglimit", "max": REG_WINDOWS_MAX}
REGLIMIT_LINE = re.compile(r"REGLIMIT reglimit rank (\d+): ")


def _reglimit_lines(text):
    found, decoder = {}, json.JSONDecoder()
    for m in REGLIMIT_LINE.finditer(text):
        found[int(m.group(1))] = decoder.raw_decode(text, m.end())[0]
    return found


@pytest.mark.parametrize("core", matrix.STRICT_CORES)
@pytest.mark.parametrize("profile", list(matrix.STRICT_PROFILES))
def test_registration_limit(profile, core, tmp_path, mpi_env_file, component):
    """On each NIC profile, with the provider refusing registrations past a limit
    (-FI_ENOMEM, as verbs and efa past max_mr): windows are made until MPI_Win_create
    fails; it fails with an MPI error on every rank alike, btl-ofi says why once (the
    register-failed message) and counts it, the windows made before the limit still
    carry puts exactly, and once they are freed a new window carries an accumulate,
    a put and a get exactly, through btl-ofi. Never a crash, a hang or an abort."""
    provider = f"{core};ofi_strictmr"
    env = matrix.profile_env(profile, tmp_path / "strictmr.jsonl")
    env["FI_OFI_STRICTMR_REG_LIMIT"] = str(REG_LIMIT)
    launch = launcher.run_mpi(2, {"checks": [REG_CHECK]}, 120, provider=provider,
                              workdir=tmp_path, env_overrides=env)
    where = f"profile {profile} over {core}, REG_LIMIT={REG_LIMIT}"
    group = matrix.Group(provider, "default", 2, "base")
    failed = outcome.launch_failure(launch, where)
    assert failed is None, failed.message
    recs = {r["id"]: r for r in outcome.records(launch, "check")}
    assert "reglimit" in recs, f"{where}: the check did not report\n{launch.tail()}"
    assert not recs["reglimit"]["errors"], "\n".join(recs["reglimit"]["errors"])
    carried, reasons = outcome.proof_of_path(launch, group)
    assert carried, f"NOT CARRIED BY btl-ofi: {where}: {'; '.join(reasons)}"
    lines = _reglimit_lines(launch.stderr)
    assert sorted(lines) == [0, 1], f"{where}: REGLIMIT lines of ranks {sorted(lines)}"
    problems = []
    for rank, line in sorted(lines.items()):
        fail = line["failure"]
        if fail is None:
            problems.append(f"rank {rank}: {REG_WINDOWS_MAX} windows made, none refused: the "
                            f"limit was never reached, so nothing was tested")
        elif not fail["err_win"] or line["made"] < 1:
            problems.append(f"rank {rank}: window {fail['at']} failed with {fail['text']} "
                            f"(class {fail['class']}; expected MPI_ERR_WIN after >= 1 window)")
    total_failed = sum(line["registrations_failed"] for line in lines.values())
    if total_failed < 1:
        problems.append(f"{launcher.param('registrations_failed')} did not move on any rank")
    text = launch.stdout + launch.stderr
    shown = text.count(REGISTER_FAILED.splitlines()[0])
    if shown < 1 or shown > 2 or REGISTER_FAILED.replace("\n", " ") not in \
            " ".join(text.split("\n")):
        problems.append(f"the register-failed message was shown {shown} times (expected once "
                        f"per refusing process, word for word)")
    if "Cannot allocate memory (-12)" not in text:
        problems.append("the message does not name the provider's error (-FI_ENOMEM)")
    assert not problems, f"{where}:\n  " + "\n  ".join(problems) + f"\n{launch.tail()}"


# ---- Domain lists (issue 26 item 4) ------------------------------------------------------


DOMAIN_PROVIDER = "tcp;ofi_rxm"


def _domainsavailable():
    """What the messages list for DOMAIN_PROVIDER: "eth0 (f1, f2), lo (f3)", fi_info order."""
    grouped = {}
    for domain, fab in fabric.fi_domains(DOMAIN_PROVIDER):
        grouped.setdefault(domain, []).append(fab)
    return ", ".join(f"{d} ({', '.join(f)})" for d, f in grouped.items()) or "(none)"


@pytest.mark.parametrize("nranks", RANKS)
def test_domain_lists(nranks, tmp_path, mpi_env_file, component):
    """A domain that matches nothing names the domains there are; a list that leaves
    none names them too; a malformed list names its bad item; both lists at once are
    refused. Each time btl-ofi declines once per job and Open MPI carries on."""
    available = _domainsavailable()
    everything = ",".join(dict.fromkeys(d.split(" (")[0] for d in available.split("), ")))
    cases = [
        ({"domain_include": "nosuch0"},
         DOMAIN_NOT_FOUND.replace("{unknown}", "nosuch0")),
        ({"domain_include": "eth0,nosuch*"},
         DOMAIN_NOT_FOUND.replace("{unknown}", "nosuch*")) if "eth0 (" in available else None,
        ({"domain_exclude": everything}, DOMAIN_NONE_LEFT.replace("{excluded}", everything)),
        ({"domain_include": "eth0,,lo"},
         DOMAIN_MALFORMED.replace("{value}", "eth0,,lo").replace("{item}", "")),
        ({"domain_include": "eth 0"},
         DOMAIN_MALFORMED.replace("{value}", "eth 0").replace("{item}", "eth 0")),
        ({"domain_include": "eth0", "domain_exclude": "lo"}, DOMAIN_BOTH),
    ]
    for i, case in enumerate(c for c in cases if c):
        ours, expected = case
        run_and_judge(tmp_path / f"case{i}", nranks, expected.replace("{available}", available),
                       f"{ours} on {DOMAIN_PROVIDER}", component, ours=ours,
                       provider=DOMAIN_PROVIDER)


# ---- Settings a NIC profile cannot serve (issue 25 item 3) -------------------------------

@pytest.mark.parametrize("profile", list(matrix.STRICT_PROFILES))
def test_profile_mr_mode_declined(profile, tmp_path, mpi_env_file, component):
    """btl_<c>_mr_mode=none forbids every MR mode bit: a profile whose NIC demands some
    (verbs-like, efa-like, cxi-like) is declined with what it needs, word for word, and
    Open MPI carries on; one that demands none (psm3-like) is served, exact."""
    bits, _ = matrix.STRICT_PROFILES[profile]
    provider = "tcp;ofi_rxm;ofi_strictmr"
    env = matrix.profile_env(profile, tmp_path / "strictmr.jsonl")
    if not bits:
        launch = launcher.run_mpi(2, {"checks": PLAN}, 90, provider=provider, workdir=tmp_path,
                                  ours={"mr_mode": "none"}, env_overrides=env)
        group = matrix.Group(provider, "default", 2, "base")
        failed = outcome.launch_failure(launch, f"profile {profile}, mr_mode=none")
        assert failed is None, failed.message
        wrong = [r for r in outcome.records(launch, "check") if r["errors"]]
        assert not wrong and len(outcome.records(launch, "check")) == len(PLAN), wrong
        assert outcome.proof_of_path(launch, group)[0], "mr_mode=none: not carried by btl-ofi"
        return
    needs = "|".join(fabric.mr_names_ordered(fabric.mr_mask(bits)))
    expected = MR_DECLINED.replace("{provider}", provider).replace("{needs}", needs) \
        .replace("local|virt_addr|allocated|prov_key|endpoint\n  Served", "none\n  Served")
    run_and_judge(tmp_path, 2, expected, f"profile {profile}, mr_mode=none", component,
                   ours={"mr_mode": "none"}, provider=provider, env_overrides=env)


def test_profile_without_delivery_complete(tmp_path, mpi_env_file, component):
    """verbs-like completes at transmit only: btl_<c>_completion=delivery leaves no
    provider, and the message names the setting."""
    provider = "tcp;ofi_rxm;ofi_strictmr"
    env = matrix.profile_env("verbs-like", tmp_path / "strictmr.jsonl")
    expected = NO_PROVIDER.replace("btl_{c}_provider_include = (all)",
                                   f"btl_{{c}}_provider_include = {provider}") \
        .replace("{exclude}", "(none)").replace("completion = auto", "completion = delivery") \
        .replace("{fi_provider}", "(not set)")
    run_and_judge(tmp_path, 2, expected, "verbs-like, completion=delivery", component,
                   ours={"completion": "delivery"}, provider=provider, env_overrides=env)
