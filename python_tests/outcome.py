"""The one place that turns what a launch produced into pass / skip / fail.

Inputs: the Launch (exit status, timeout, stderr, the ranks' JSON lines),
the Group it ran for and, for a single check, its spec. Every failure message
names provider, MR path, rank count, variant and the check's axes (flavor,
sync, op, dtype, count, layouts), and quotes the command line to reproduce.
"""

import dataclasses
import json
import re

import pytest

import fabric
import launcher
import matrix


def selected_re():
    """The verbose line our component prints on every rank that selects a provider."""
    return re.compile(rf"btl:{re.escape(launcher.component_name())}: selected provider "
                      r"(?P<provider>.+?) \(fabric .*?, domain .*?\),"
                      r" mr_mode (?P<mr_mode>\S+), key size (?P<key_size>\d+),"
                      r" completion (?P<completion>[^\s,]+)"
                      r"(?:, atomics (?P<atomics>\w+), gets (?P<gets>\w+))?")


# Every btl-ofi message says one of these (help-mpi-btl-ofi.txt).
OUR_MESSAGE_RE = re.compile(r"btl-ofi\s+is\s+disabling\s+itself|through\s+btl-ofi\s+failed|"
                            r"btl-ofi\s+carries\s+one-sided\s+traffic\s+only")
# What mpirun 4.1 logs when a rank's show_help message went wrong on its way (NOTES.txt 11).
ORTE_ERROR_RE = re.compile(r"^.*ORTE_ERROR_LOG.*$", re.M)
TRAFFIC = ("put_count", "get_count", "atomic_count")


@dataclasses.dataclass
class Verdict:
    status: str  # "pass", "skip", "fail", "timeout"
    message: str = ""

    def apply(self):
        if self.status == "skip":
            pytest.skip(self.message)
        if self.status in ("fail", "timeout"):
            pytest.fail(self.message, pytrace=False)


def describe_group(group):
    strict = (f" strict={group.strict[0]} key_size={group.strict[1]}" if group.strict else "")
    return (f"provider={group.provider}{strict} mr={group.mr or '?'} mr_path={group.mr_path} "
            f"nranks={group.nranks} variant={group.variant}")


def describe_check(spec):
    keys = ("flavor_name", "sync", "op", "mpi_op", "dtype", "count", "olayout", "tlayout",
            "repeat", "highbit")
    return spec["kind"] + " " + " ".join(f"{k}={spec[k]}" for k in keys if k in spec)


def _memo(launch, key, compute):
    """Per-launch cache: thousands of checks are judged against one launch."""
    memo = launch.__dict__.setdefault("_memo", {})
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def records(launch, kind):
    return _memo(launch, ("records", kind),
                 lambda: [r for r in launch.records if r.get("type") == kind])


def counter_totals(launch, names):
    """{name: the counter's deltas summed over the launch's checks and ranks} (0 if none)."""
    total = dict.fromkeys(names, 0)
    for rec in records(launch, "check"):
        for name in names:
            total[name] += rec["deltas"].get(name, 0)
    return total


def selections(launch):
    """(provider, mr_mode bits, completion) per rank that selected our component."""
    return _memo(launch, "selections", lambda: _selections(launch))


def _selections(launch):
    out = []
    for m in selected_re().finditer(launch.stderr):
        # hmem: FI_HMEM for system memory (libfabric >= 1.18), asks nothing of us
        bits = set() if m["mr_mode"] == "none" else set(m["mr_mode"].split("|")) - {"hmem"}
        out.append((m["provider"], bits, m["completion"], int(m["key_size"])))
    return out


def passed_over(launch):
    """{provider: why} for each provider our component opened and passed over
    for the next one (verbose "passing over P: why", on any rank)."""
    pat = re.compile(rf"btl:{re.escape(launcher.component_name())}: passing over "
                     r"(?P<provider>\S+): (?P<why>.+)$", re.M)
    return {m["provider"]: m["why"].strip() for m in pat.finditer(launch.stderr)}


def our_messages(launch):
    """Text of the btl-ofi help messages in the job's output."""
    return _memo(launch, "messages", lambda: _our_messages(launch))


def _our_messages(launch):
    return messages_in(launch.stdout + "\n" + launch.stderr)


def messages_in(text):
    """Text of the btl-ofi help messages in a job's output (less the NUL bytes prterun's
    output forwarding now and then puts before a line)."""
    blocks = re.split(r"^-{20,}$", text.replace("\x00", ""), flags=re.M)
    return [b.strip() for b in blocks if OUR_MESSAGE_RE.search(b)]


def launch_failure(launch, where):
    """None if mpirun finished normally; else a Verdict for how it did not."""
    if launch.timed_out:
        return Verdict("timeout", f"TIMEOUT after {launch.timeout:.0f}s: {where}\n"
                                  f"  {launch.command_line()}\n{launch.tail()}")
    if launch.signal_name:
        return Verdict("fail", f"CRASH ({launch.signal_name}): {where}\n"
                               f"  {launch.command_line()}\n{_crash_text(launch)}")
    if launch.returncode != 0:
        return Verdict("fail", f"exit status {launch.returncode}: {where}\n"
                               f"  {launch.command_line()}\n{_crash_text(launch)}")
    return None


def _crash_text(launch):
    """A rank's backtrace whole where one was printed (its first frames are the ones that
    tell where it failed), then the tail of stderr."""
    trace = launch.backtrace()
    tail = launch.tail()
    return f"{trace}\n...\n{tail}" if trace and trace not in tail else tail


def proof_of_path(launch, group=None):
    """Did btl-ofi carry this launch's one-sided traffic?

    Returns (carried: bool, reasons: list of str). Carried means: every rank
    saw all of our counters valid, our component reported a selected provider
    (the requested one, with an MR mode inside the requested mask), and the
    summed BTL traffic counters moved."""
    reasons = []
    start = records(launch, "start")
    if not start:
        return False, ["no report from the ranks"]
    states = start[0]["counters"]
    bad = [f"rank {r}: {s} ({d})" for r, (s, d) in enumerate(states) if s != "ok"]
    if bad:
        reasons.append(f"{launcher.param('*')} counters not available: " + "; ".join(bad))
    sel = selections(launch)
    nranks = start[0]["nranks"]
    if group is not None:
        if len(sel) < nranks:
            reasons.append(f"only {len(sel)} of {nranks} ranks report 'btl:"
                           f"{launcher.component_name()}: selected provider' (component not "
                           f"selected)")
        wrong = {p for p, *_ in sel if p != group.provider}
        if wrong:
            reasons.append(f"selected provider {sorted(wrong)} instead of {group.provider}")
        reasons += _mr_mismatch(group, sel)
    moved = counter_totals(launch, TRAFFIC)
    if not any(moved.values()):
        reasons.append(f"{launcher.param('*')} put/get/atomic counters did not move during the "
                       f"checks")
    return not reasons, reasons


def _mr_mismatch(group, sel):
    """What differs between the MR mode (and key size) the group is named for
    and what the ranks report they negotiated."""
    reasons = []
    promised = group.mr_bits()
    allowed = matrix.MR_ALLOWED[group.mr_path]
    for rank_bits in {frozenset(bits) for _, bits, *_ in sel}:
        if promised is not None and set(rank_bits) != promised:
            reasons.append(f"negotiated mr_mode {matrix.mr_label(rank_bits)}, but this row is "
                           f"named for {group.mr}")
        if set(rank_bits) - allowed:
            reasons.append(f"negotiated mr_mode {sorted(set(rank_bits) - allowed)} which "
                           f"{launcher.param('mr_mode')}={matrix.MR_PATHS[group.mr_path]!r} "
                           f"does not allow")
    if group.strict:
        sizes = {key for *_, key in sel}
        if sizes != {group.strict[1]}:
            reasons.append(f"key size {sorted(sizes)} reported, {group.strict[1]} demanded")
    return reasons


def strict_report(launch):
    """(checked, violations by rule) summed over the strict provider's report
    lines (one per fabric close); None if it wrote none."""
    path = getattr(launch, "strict_report", None)
    if path is None or not path.exists():
        return None
    checked, violations = 0, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        checked += sum(entry.get("checked", {}).values())
        for rule, n in entry.get("violations", {}).items():
            violations[rule] = violations.get(rule, 0) + n
    return checked, {rule: n for rule, n in violations.items() if n}


def strict_events(launch):
    """(events summed over the strict provider's report lines, the "nic" settings of the
    last line); ({}, {}) if it wrote none."""
    path = getattr(launch, "strict_report", None)
    events, settings = {}, {}
    if path is None or not path.exists():
        return events, settings
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        for name, n in entry.get("events", {}).items():
            events[name] = events.get(name, 0) + n
        settings = entry.get(matrix.STRICT_REPORT_SETTINGS, settings)
    return events, settings


def profile_problems(events, settings, one_at_a_time=False):
    """What a run on a NIC profile did wrong by the provider's events: a completion
    overrun, an operation the NIC lacks, or a behaviour of the profile that never
    happened (so the row would have tested nothing)."""
    problems = [f"{ev}={events[ev]} (btl-ofi overran its CQ or posted what the NIC lacks)"
                for ev in ("cq_full", "op_refused") if events.get(ev, 0)]
    problems += [f"{behaviour} is on in this profile, but the provider's {ev} counter did not "
                 f"move" for behaviour, ev in matrix.profile_events(settings, one_at_a_time).items()
                 if not events.get(ev, 0)]
    return problems


def judge_strict(launch, group, where):
    """ofi_strictmr checked the launch's operations and found no violation (and, on a NIC
    profile, every behaviour of the profile happened and nothing overran; a launch marked
    one_at_a_time waits for each operation, see matrix.profile_events)."""
    report = strict_report(launch)
    if report is None:
        return Verdict("fail", f"{where}: ofi_strictmr wrote no report "
                               f"({getattr(launch, 'strict_report', None)})")
    checked, violations = report
    if checked == 0 or violations:
        return Verdict("fail", f"{where}: ofi_strictmr checked {checked} operations and found "
                               f"violations {violations or 'none'}\n  {launch.command_line()}")
    if getattr(group, "profile", False):
        problems = profile_problems(*strict_events(launch),
                                    one_at_a_time=getattr(launch, "one_at_a_time", False))
        if problems:
            return Verdict("fail", f"{where}: " + "; ".join(problems)
                           + f"\n  {launch.command_line()}")
    return None


def judge_group(launch, group, expected_ids):
    """Verdict on the launch as a whole: ran to the end and went through btl-ofi."""
    where = describe_group(group)
    declined = declined_by_design(launch, group)
    if declined:
        return declined_verdict(group, declined)
    failed = launch_failure(launch, where)
    if failed:
        return failed
    reported = {r["id"] for r in records(launch, "check")}
    missing = [i for i in expected_ids if i not in reported]
    if missing:
        return Verdict("fail", f"{where}: {len(missing)} checks not reported, first "
                               f"{missing[0]}\n  {launch.command_line()}")
    carried, reasons = proof_of_path(launch, group)
    if not carried:
        return Verdict("fail", f"NOT CARRIED BY btl-ofi: {where}: " + "; ".join(reasons)
                       + f"\n  {launch.command_line()}")
    if group.strict:
        strict = judge_strict(launch, group, where)
        if strict:
            return strict
    if group.variant == "stale":
        located = stale_handles_served(launch)
        if located:
            return Verdict("fail", f"{where}: {located}\n  {launch.command_line()}")
    if group.variant == "messages":
        served = messages_served(launch)
        if served:
            return Verdict("fail", f"{where}: {served}\n  {launch.command_line()}")
    end = records(launch, "end")
    if end and end[0]["registrations_live"][1] != end[0]["registrations_live"][0]:
        before, after = end[0]["registrations_live"]
        return Verdict("fail", f"{where}: {launcher.param('registrations_live')} {before} before the "
                               f"checks, {after} after every window was freed (leak)")
    return Verdict("pass")


def stale_handles_served(launch):
    """With btl_<c>_debug_inject_stale_handle (matrix variant "stale"), what is wrong
    with how the launch's stale handles were served, or None: some accesses
    must have asked their peer, every one of them must have been posted with
    the peer's answer (handles_located == handles_stale), and the peers must
    have answered at least as many questions (NOTES.txt section 3c)."""
    names = ("handles_stale", "handles_located", "locate_answers")
    stale, located, answers = counter_totals(launch, names).values()
    if stale == 0:
        return (f"{launcher.param('handles_stale')} did not move: no access asked its peer, "
                f"so the injected stale handles were not exercised")
    if located != stale or answers < stale:
        return (f"{stale} accesses asked their peer, {located} were posted with its answer, "
                f"{answers} questions were answered: every question must be answered and used")
    return None


def messages_served(launch):
    """With btl_<c>_atomics=messages and btl_<c>_gets=messages (matrix variant
    "messages"), what is wrong with how the launch's atomics and gets travelled,
    or None: both kinds must have been sent as messages, the targets must have
    applied at least as many as were sent (every callback waited for its answer),
    and none may have gone through the compare-and-swap loop (never mixed)."""
    atomics, gets, applied, emulated = counter_totals(launch, (
        "atomics_as_messages", "gets_as_messages", "messages_applied",
        "atomic_emulated_count")).values()
    if atomics == 0 or gets == 0:
        return (f"{launcher.param('atomics_as_messages')} = {atomics}, "
                f"{launcher.param('gets_as_messages')} = {gets}: the message paths were not "
                f"exercised")
    if applied < atomics + gets:
        return (f"{atomics} atomics and {gets} gets were sent as messages, but the targets "
                f"applied only {applied}")
    if emulated:
        return f"{emulated} atomics went through the compare-and-swap loop beside the messages"
    return None


def declined_by_design(launch, group):
    """The component's reason when it declines the requested provider as known
    broken (help section provider-broken), else None."""
    if launch.declined_reason:
        return launch.declined_reason
    for block in our_messages(launch):
        if re.search(r"declines\s+it", block) and group.provider in block:
            reason = [ln.split(":", 1)[1].strip() for ln in block.splitlines()
                      if ln.strip().startswith("Reason:")]
            return reason[0] if reason else block.splitlines()[0]
    return None


def declined_verdict(group, reason):
    """A matrix row whose provider btl-ofi will not serve. Providers it declines
    by design are kept out of the matrix (matrix.DECLINED), so one here is a
    failure; a provider the project does not name that it refuses with a reason
    or passes over for the next one (conftest's preflight, --provider all) is
    a skip."""
    if reason.startswith("refused: "):
        return Verdict("skip", f"btl-ofi does not serve {group.provider}: {reason}")
    return Verdict("fail", f"btl-ofi declines {group.provider}, a provider of the matrix: "
                           f"{reason} (a provider declined by design belongs in "
                           f"matrix.DECLINED)")


def optional_refusal(launch, group):
    """For variants a provider may refuse: the component's reason, if it refused."""
    if group.variant not in matrix.OPTIONAL_VARIANTS:
        return None
    if len(selections(launch)) == 0 and our_messages(launch):
        first = our_messages(launch)[0].splitlines()
        return " ".join(line.strip() for line in first[:3])
    return None


def judge_check(launch, group, spec):
    """Verdict on one check of a launch."""
    where = f"{describe_group(group)} :: {describe_check(spec)}"
    declined = declined_by_design(launch, group)
    if declined:
        return declined_verdict(group, declined)
    refusal = optional_refusal(launch, group)
    if refusal:
        return Verdict("skip", f"{group.provider} refuses {group.variant}: {refusal}")
    by_id = _memo(launch, "by_id", lambda: {r["id"]: r for r in records(launch, "check")})
    rec = by_id.get(spec["id"])
    if rec is None:
        checks_done = len(by_id)
        hung = launch.timed_out and checks_done == launch.plan_index(spec["id"])
        errs = [line for line in launch.stderr.splitlines()
                if line.startswith(f"CHECK-ERROR {spec['id']} ")]
        if launch.timed_out:
            what = "hung in this check" if hung else "not reached: the launch timed out earlier"
            return Verdict("timeout", f"TIMEOUT ({what}) after {launch.timeout:.0f}s: {where}\n"
                                      + "\n".join(errs) + f"\n  {launch.command_line()}")
        failed = launch_failure(launch, where) or Verdict("fail", f"not reported: {where}")
        return Verdict(failed.status, failed.message + ("\n" + "\n".join(errs) if errs else ""))
    problems = list(rec["errors"])
    if rec.get("n_errors", 0) > len(rec["errors"]):
        problems.append(f"... {rec['n_errors'] - len(rec['errors'])} more")
    problems += counter_problems(rec["deltas"], spec, group)
    start = records(launch, "start")
    if start and any(s != "ok" for s, _ in start[0]["counters"]):
        problems.append(f"{launcher.param('*')} counters unavailable: not carried by btl-ofi")
    if problems:
        return Verdict("fail", f"{where}\n  " + "\n  ".join(problems)
                       + f"\n  reproduce: {launch.command_line()}")
    return Verdict("pass")


def counter_problems(deltas, spec, group):
    must, any_of, zero, minimum = matrix.expected_counters(spec, group)
    problems = []
    shown = {k: v for k, v in sorted(deltas.items()) if v}
    for k in sorted(must):
        if deltas.get(k, 0) <= 0:
            problems.append(f"{launcher.param(k)} did not move (not carried by btl-ofi?); "
                            f"deltas {shown}")
    if any_of and not any(deltas.get(k, 0) > 0 for k in any_of):
        problems.append(f"none of {launcher.param('{' + ','.join(sorted(any_of)) + '}')} moved "
                        f"(not carried by btl-ofi?); deltas {shown}")
    for k in sorted(zero):
        if deltas.get(k, 0) != 0:
            problems.append(f"{launcher.param(k)} moved by {deltas[k]} where osc/rdma must not "
                            f"use any BTL (Win.Allocate on one node)")
    for k, v in sorted(minimum.items()):
        if deltas.get(k, 0) < v:
            problems.append(f"{launcher.param(k)} moved by {deltas.get(k, 0)}, expected >= {v}")
    return problems


def judge_bad_input(launch, expected, what, planned):
    """The bad-input contract: btl-ofi's message, word for word (`expected`, the
    text between the dashed lines), exactly once however many ranks declined;
    no ORTE_ERROR_LOG from mpirun; no crash, no hang; and either a clean stop or
    a correct run that btl-ofi did not carry."""
    where = f"bad input {what}"
    if launch.timed_out:
        return Verdict("timeout", f"HANG: {where} timed out after {launch.timeout:.0f}s\n"
                                  f"  {launch.command_line()}")
    if launch.signal_name:
        return Verdict("fail", f"CRASH ({launch.signal_name}): {where}\n"
                               f"  {launch.command_line()}\n{_crash_text(launch)}")
    orte = ORTE_ERROR_RE.findall(launch.stdout + "\n" + launch.stderr)
    if orte:
        return Verdict("fail", f"{where}: mpirun logged {len(orte)} ORTE error(s): {orte[:3]}\n"
                               f"  {launch.command_line()}")
    messages = our_messages(launch)
    if messages != [expected]:
        return Verdict("fail", f"{where}: expected btl-ofi's message exactly once, word for "
                               f"word; saw {len(messages)} message(s)\n"
                               + text_difference(expected, messages)
                               + f"\n  {launch.command_line()}")
    if launch.returncode != 0:
        return Verdict("pass")  # stopped, with the message
    recs = records(launch, "check")
    wrong = [f"{r['id']}: {r['errors'][:2]}" for r in recs if r["errors"]]
    if len(recs) != planned or wrong:
        return Verdict("fail", f"{where}: the fallback gave wrong one-sided results "
                               f"({len(recs)}/{planned} reported): {wrong}\n"
                               f"  {launch.command_line()}")
    carried, _ = proof_of_path(launch)
    if carried:
        return Verdict("fail", f"{where}: the job still ran through btl-ofi (its counters "
                               f"moved); the component must disable itself\n"
                               f"  {launch.command_line()}")
    return Verdict("pass")


def text_difference(expected, messages):
    import difflib

    if not messages:
        return "--- expected ---\n" + expected
    diff = difflib.unified_diff(expected.splitlines(), messages[0].splitlines(), "expected",
                                "printed", lineterm="")
    return "\n".join(diff) or "(the first message is right; the others are extra copies)"


def providers_declining_mr():
    """Providers whose every fi_info asks for an MR mode btl-ofi declines."""
    return {p.name: p.declined_bits for p in fabric.rdm_rma_atomic_providers()
            if p.declined_bits}


def run_one_check(provider, check, timeout, workdir, nranks=2, launches=None, **kw):
    """One launch of one rank-side check on provider (the default MR path), judged as a
    conformance group (ran to the end, carried by btl-ofi) and with no check error;
    returns the Launch. launches (the conftest fixture): skip a provider btl-ofi declines
    here. kw: as launcher.run_mpi (ours, netns, env_overrides, ...)."""
    if launches is not None:
        state, reason = launches.provider_status(provider)
        if state == "declined":
            pytest.skip(f"btl-ofi does not serve {provider}: {reason}")
    launch = launcher.run_mpi(nranks, {"checks": [check]}, timeout, provider=provider,
                              workdir=workdir, **kw)
    group = matrix.Group(provider, "default", nranks, "base", matrix.negotiated_label(provider))
    judge_group(launch, group, [check["id"]]).apply()
    assert_check_clean(launch, check["id"])
    return launch


def check_record(launch, check_id):
    """The record of one check of the launch, by its id."""
    return {r["id"]: r for r in records(launch, "check")}[check_id]


def assert_check_clean(launch, check_id):
    """The check's record says it found no error."""
    rec = check_record(launch, check_id)
    assert not rec["errors"], "\n".join(rec["errors"]) + f"\n  {launch.command_line()}"


def rank_lines(launch, tag, check_id, nranks=2):
    """{rank: json} from the ranks' "<TAG> <check_id> rank <r>: {json}" lines on stderr
    (decoded from where each starts: two ranks' lines can run together); every rank's."""
    found, decoder = {}, json.JSONDecoder()
    for m in re.finditer(rf"{tag} {re.escape(check_id)} rank (\d+): ", launch.stderr):
        found[int(m.group(1))] = decoder.raw_decode(launch.stderr, m.end())[0]
    assert sorted(found) == list(range(nranks)), \
        f"{tag} lines of ranks {sorted(found)}, expected {nranks}\n  {launch.command_line()}"
    return found
