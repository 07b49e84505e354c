#!/usr/bin/env python3
"""Runs strictmr_test over every provider x MR-mode set x key size.

Each run gets FI_OFI_STRICTMR_MR_MODE / _KEY_SIZE from the matrix and a report
file; the run must pass all its cases, and the report line it leaves must show
checks performed and exactly the violations the negative cases provoked.
Then strictmr_engine_test runs each NIC data-path row (ENGINE_ROWS: reordering,
own progress, tight queues, fi_control and binds) over every provider, each
report line showing the row's events moved or not; and strictmr_caps_test runs
each NIC capability row (NIC_ROWS, the profiles, BAD_VALUE_ROWS): its checks
must pass, and its report line must show the events it provoked, exactly, with
every event the row exists for moved, and the profile and behaviour settings in
effect.
Exit status: 0 when every run did, 1 otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

PROVIDERS = ["shm;ofi_strictmr", "sockets;ofi_strictmr", "tcp;ofi_rxm;ofi_strictmr"]

# (label, mr_mode, key_size): NIC-like sets, and every key size.
MODE_SETS = [
    ("verbs-like", "local,virt_addr,allocated,prov_key", 4),
    ("efa-like", "virt_addr,allocated,prov_key", 2),
    ("cxi-like", "endpoint,allocated,prov_key", 8),
    ("cxi-client-keys", "endpoint,allocated,local", 2),
    ("user-keys-offsets", "none", 4),
    ("user-keys-8", "virt_addr", 8),
    ("raw-16", "raw,virt_addr,prov_key,local", 16),
]
TIMEOUT = 300

# The NIC data-path rows (strictmr_engine_test, strictmr_engine.c): (case, variables,
# providers or None for all, events): each event must be > 0 ("+") or == 0 ("0") in the run's report line. A "_off"
# case runs with the behaviour off and must see the opposite of its "on" case.
ENGINE_MODE = ("virt_addr,allocated,prov_key", 2)
ENGINE_ROWS = [
    ("reorder", {"REORDER": "1", "REORDER_WINDOW": "16"}, None,
     {"reordered": "+", "completions_reordered": "+"}),
    ("reorder_off", {}, None, {"reordered": "0", "completions_reordered": "0"}),
    ("sas", {"REORDER": "1"}, None, {"reordered": "0"}),
    ("progress", {"PROGRESS_US": "100"}, None, {"thread_completions": "+"}),
    # only tcp;ofi_rxm needs the target to make calls: shm's RMA is done by the initiator
    # (CMA), sockets has a progress thread of its own
    ("progress_off", {}, ["tcp;ofi_rxm;ofi_strictmr"], {"thread_completions": "0"}),
    # "none" turns off a profile's thread
    ("progress_none", {"PROFILE": "verbs-like", "PROGRESS_US": "none"},
     ["tcp;ofi_rxm;ofi_strictmr"], {"thread_completions": "0"}),
    ("txq", {"TX_SIZE": "4"}, None, {"tx_eagain": "+"}),
    ("rxq", {"RX_SIZE": "4"}, None, {"rx_eagain": "+"}),
    ("cqfull", {"CQ_SIZE": "4", "PROGRESS_US": "100"}, None, {"cq_full": "+"}),
    # TX_SIZE turns the engine on: it keeps an endpoint's selective completion and op_flags
    ("control", {"TX_SIZE": "32"}, None, {"tx_eagain": "0"}),
    # a second CQ for a bound direction is refused before the core (sockets would take it),
    # on the pass-through path and through the engine
    ("rebind", {}, None, {"tx_eagain": "0"}),
    ("rebind_engine", {"TX_SIZE": "32"}, None, {"tx_eagain": "0"}),
]

# NIC capabilities (issue 25): (label, variables, strictmr_caps_test arguments, events that
# must move). Rows without an event to move are the controls: the same checks with the
# behaviour off.
NIC_ROWS = [
    ("dc-off", {"DELIVERY_COMPLETE": "0"}, ["dc", "off"], ["op_refused"]),
    ("dc-on", {}, ["dc", "on"], []),
    # the NIC data path serves FI_SETOPSFLAG itself: the same refusals through it
    ("dc-off-engine", {"DELIVERY_COMPLETE": "0", "TX_SIZE": "64"}, ["dc", "off"], ["op_refused"]),
    ("inject-16", {"INJECT_SIZE": "16"}, ["inject", "16"], ["op_refused"]),
    ("inject-0", {"INJECT_SIZE": "0"}, ["inject", "0"], ["op_refused"]),
    ("max-rma-1000", {"MAX_RMA_SIZE": "1000"}, ["max_rma", "1000"], ["op_refused"]),
    ("write-only", {"WRITE_ONLY": "1"}, ["write_only"], ["op_refused"]),
    ("atomics-all", {"ATOMICS": "all"}, ["atomics", "all"], []),
    ("atomics-nic", {"ATOMICS": "nic"}, ["atomics", "nic"], ["op_refused"]),
    ("atomics-none", {"ATOMICS": "none"}, ["atomics", "none"], ["op_refused"]),
    ("reg-cost", {"REG_COST_US": "200", "REG_COST_PAGE_NS": "1000"}, ["reg_cost", "200", "1000"],
     ["reg_charged", "reg_charged_us"]),
    ("reg-cost-off", {}, ["reg_cost", "0", "0"], []),
    ("reg-limit-3", {"REG_LIMIT": "3"}, ["reg_limit", "3"], ["reg_refused"]),
]

# The profiles as strictmr/README.md documents them: MR mode, key size, and the behaviours
# the report must show. Each row reads them back through fi_getinfo too.
PROFILES = {
    "verbs-like": ("local,virt_addr,allocated,prov_key", 4,
                   {"reorder": 0, "progress_us": 20, "tx_size": 384, "rx_size": 384,
                    "cq_size": 0, "delivery_complete": 0, "inject_size": 256, "atomics": "nic",
                    "max_rma_size": 0, "write_only": 0, "reg_cost_us": 20,
                    "reg_cost_page_ns": 250, "reg_limit": 0}),
    "efa-like": ("virt_addr,allocated,prov_key", 2,
                 {"reorder": 1, "progress_us": -1, "tx_size": 0, "rx_size": 0, "cq_size": 0,
                  "delivery_complete": 1, "inject_size": -1, "atomics": "all",
                  "max_rma_size": 0, "write_only": 0, "reg_cost_us": 20,
                  "reg_cost_page_ns": 250, "reg_limit": 0}),
    "cxi-like": ("endpoint,allocated,prov_key", 8,
                 {"reorder": 1, "progress_us": 20, "tx_size": 1024, "rx_size": 1024,
                  "cq_size": 0, "delivery_complete": 1, "inject_size": -1, "atomics": "all",
                  "max_rma_size": 0, "write_only": 0, "reg_cost_us": 20,
                  "reg_cost_page_ns": 250, "reg_limit": 0}),
    "psm3-like": ("none", 8,
                  {"reorder": 0, "progress_us": -1, "tx_size": 0, "rx_size": 0, "cq_size": 0,
                   "delivery_complete": 1, "inject_size": 64, "atomics": "all",
                   "max_rma_size": 0, "write_only": 0, "reg_cost_us": 0,
                   "reg_cost_page_ns": 0, "reg_limit": 0}),
}


def profile_rows():
    """(label, variables, arguments, must-move events, expected report fields) per profile,
    and one where explicit variables override the profile."""
    rows = []
    for name, (mode, key, nic) in PROFILES.items():
        args = ["profile", name, mode, str(key), str(nic["delivery_complete"]),
                str(nic["inject_size"]), nic["atomics"]]
        moved = ["reg_charged"] if nic["reg_cost_us"] or nic["reg_cost_page_ns"] else []
        rows.append(("profile-" + name, {"PROFILE": name}, args, moved,
                     {"profile": name, "mode": mode, "key_size": key, "nic": nic}))
    nic = dict(PROFILES["verbs-like"][2], atomics="all", inject_size=32)
    rows.append(("profile-override", {"PROFILE": "verbs-like", "MR_MODE": "virt_addr",
                                      "KEY_SIZE": "8", "ATOMICS": "all", "INJECT_SIZE": "32"},
                 ["profile", "verbs-like", "virt_addr", "8", "0", "32", "all"], ["reg_charged"],
                 {"profile": "verbs-like", "mode": "virt_addr", "key_size": 8, "nic": nic}))
    return rows


# Unreadable settings: the provider offers nothing, and no fabric (no report line) follows.
BAD_VALUE_ROWS = [
    ("bad-profile", {"PROFILE": "bogus-like"}),
    ("bad-atomics", {"ATOMICS": "some"}),
    ("bad-inject", {"INJECT_SIZE": "12x"}),
    ("bad-max-rma", {"MAX_RMA_SIZE": "0"}),
    ("bad-write-only", {"WRITE_ONLY": "2"}),
    ("bad-dc", {"DELIVERY_COMPLETE": "yes"}),
    ("bad-reg-limit", {"REG_LIMIT": "-1"}),
    ("bad-reg-cost", {"REG_COST_US": "1.5"}),
    ("bad-tx-size", {"TX_SIZE": "4x"}),
    ("bad-cq-size", {"CQ_SIZE": "-8"}),
    ("bad-progress", {"PROGRESS_US": "soon"}),
    ("bad-reorder", {"REORDER": "maybe"}),
    ("bad-window", {"REORDER_WINDOW": "0"}),
    ("bad-nic-pci", {"NIC_PCI": "eth0=0000:8x:00.0"}),
    ("bad-nic-pci-pair", {"NIC_PCI": "eth0"}),
]


def one_run(test, env, provider):
    try:
        proc = subprocess.run([test, provider], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timeout after %ds" % TIMEOUT
    return proc, proc.stdout


def show(provider, label, out, problem):
    """Prints a run's line (and, if it failed, why and its output); returns 1 if it failed."""
    summary = [l for l in out.splitlines() if l.startswith("SUMMARY")]
    print("%s %-26s %-18s %s" % ("FAIL" if problem else "ok  ", provider, label,
                                 summary[0] if summary else ""))
    if not problem:
        return 0
    print("     -> %s" % problem)
    for line in out.splitlines():
        if not line.startswith("PASS"):
            print("     | " + line)
    return 1


def check_report(path, before, provoked):
    """The new report line: checks ran, and violations == those provoked."""
    with open(path) as f:
        lines = f.readlines()[before:]
    if len(lines) != 1:
        return "expected 1 report line, found %d" % len(lines)
    rec = json.loads(lines[0])
    checked = sum(rec["checked"].values())
    violations = sum(rec["violations"].values())
    if checked == 0:
        return "report shows no checks"
    if violations != provoked:
        return "report shows %d violations, the cases provoked %d" % (violations, provoked)
    return None


def check_events(path, before, expected):
    """The run's report line shows each expected event moved (+) or not (0)."""
    with open(path) as f:
        lines = f.readlines()[before:]
    if len(lines) != 1:
        return "expected 1 report line, found %d" % len(lines)
    events = json.loads(lines[0]).get("events", {})
    for name, want in expected.items():
        if name not in events:
            return "report has no event %s" % name
        if (events[name] > 0) != (want == "+"):
            return "event %s is %d, expected %s" % (name, events[name],
                                                   "> 0" if want == "+" else "0")
    return None


def run_engine_rows(engine_test, tmp, report, providers):
    """Runs the NIC data-path rows (reordering, own progress, queues); returns (runs, failures)."""
    runs = failures = 0
    for case, variables, only, expected in ENGINE_ROWS:
        for provider in providers:
            if only and provider not in only:
                continue
            env = dict(os.environ, FI_PROVIDER_PATH=tmp, FI_OFI_STRICTMR_MR_MODE=ENGINE_MODE[0],
                       FI_OFI_STRICTMR_KEY_SIZE=str(ENGINE_MODE[1]),
                       FI_OFI_STRICTMR_REPORT=report, FI_LOG_LEVEL="none")
            env.update({"FI_OFI_STRICTMR_" + k: v for k, v in variables.items()})
            with open(report) as f:
                before = len(f.readlines())
            try:
                proc = subprocess.run([engine_test, provider, case], env=env,
                                      capture_output=True, text=True, timeout=TIMEOUT)
                out = proc.stdout
                problem = "exit %d" % proc.returncode if proc.returncode else None
            except subprocess.TimeoutExpired:
                out, problem = "", "timeout after %ds" % TIMEOUT
            if not problem:
                problem = check_report(report, before, 0) or check_events(report, before,
                                                                          expected)
            runs += 1
            label = "engine:" + case
            failures += show(provider, label, out, problem)
    return runs, failures


def nic_env(tmp, report, variables):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FI_OFI_STRICTMR_")}
    env.update(FI_PROVIDER_PATH=tmp, FI_OFI_STRICTMR_REPORT=report, FI_LOG_LEVEL="none")
    env.update({"FI_OFI_STRICTMR_" + k: v for k, v in variables.items()})
    return env


def check_nic_report(path, before, out, moved, fields):
    """The run's report line: the events it provoked, exactly; the row's events moved; the
    profile and settings expected."""
    with open(path) as f:
        lines = f.readlines()[before:]
    if len(lines) != 1:
        return "expected 1 report line, found %d" % len(lines)
    rec = json.loads(lines[0])
    match = re.search(r"^PROVOKED (.*)$", out, re.M)
    if not match:
        return "no PROVOKED line"
    for item in match.group(1).split():
        name, value = item.split("=")
        if rec["events"][name] != int(value):
            return "report shows %s=%d, the run provoked %s" % (name, rec["events"][name], value)
    for name in moved:
        if rec["events"][name] == 0:
            return "event %s did not move" % name
    for key, want in fields.items():
        if key == "nic":
            wrong = {k: (rec["nic"].get(k), v) for k, v in want.items() if rec["nic"].get(k) != v}
            if wrong:
                return "report nic settings (got, want): %s" % wrong
        elif key == "mode":
            if set(rec["mode"].split(",")) != set(want.split(",")):
                return "report mode %s, want %s" % (rec["mode"], want)
        elif rec.get(key) != want:
            return "report %s=%r, want %r" % (key, rec.get(key), want)
    return None


def run_nic_rows(args, tmp, report, providers):
    """The NIC behaviour rows over every provider; returns (runs, failures)."""
    rows = [(label, env, argv, moved, {}) for label, env, argv, moved in NIC_ROWS]
    rows += profile_rows()
    rows += [(label, env, ["nothing"], None, {}) for label, env in BAD_VALUE_ROWS]
    runs = failures = 0
    for provider in providers:
        for label, variables, argv, moved, fields in rows:
            env = nic_env(tmp, report, variables)
            with open(report) as f:
                before = len(f.readlines())
            try:
                proc = subprocess.run([args.caps_test, provider] + argv, env=env,
                                      capture_output=True, text=True, timeout=TIMEOUT)
                out = proc.stdout
                problem = "exit %d" % proc.returncode if proc.returncode else None
            except subprocess.TimeoutExpired:
                proc, out, problem = None, "", "timeout after %ds" % TIMEOUT
            if not problem and moved is None:
                with open(report) as f:
                    extra = len(f.readlines()) - before
                problem = "a fabric was opened (%d report lines)" % extra if extra else None
            elif not problem:
                problem = check_nic_report(report, before, out, moved, fields)
            runs += 1
            failures += show(provider, label, out, problem)
    return runs, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--provider-so", required=True, help="path of libstrictmr-fi.so")
    ap.add_argument("--test", required=True, help="path of strictmr_test")
    ap.add_argument("--engine-test",
                    help="path of strictmr_engine_test (default: beside --test)")
    ap.add_argument("--caps-test", help="path of strictmr_caps_test (default: beside --test)")
    ap.add_argument("--no-nic", action="store_true",
                    help="skip the NIC behaviour rows (engine and capabilities)")
    ap.add_argument("--nic-only", action="store_true", help="only the NIC behaviour rows")
    ap.add_argument("--provider", action="append", help="limit to these providers")
    args = ap.parse_args()
    here = os.path.dirname(args.test) or "."
    args.engine_test = args.engine_test or os.path.join(here, "strictmr_engine_test")
    args.caps_test = args.caps_test or os.path.join(here, "strictmr_caps_test")

    failures = 0
    runs = 0
    with tempfile.TemporaryDirectory(prefix="strictmr.") as tmp:
        os.symlink(os.path.abspath(args.provider_so), os.path.join(tmp, "libstrictmr-fi.so"))
        report = os.path.join(tmp, "report.jsonl")
        open(report, "w").close()
        for provider in [] if args.nic_only else args.provider or PROVIDERS:
            for label, mode, key_size in MODE_SETS:
                env = dict(os.environ, FI_PROVIDER_PATH=tmp, FI_OFI_STRICTMR_MR_MODE=mode,
                           FI_OFI_STRICTMR_KEY_SIZE=str(key_size),
                           FI_OFI_STRICTMR_REPORT=report, FI_LOG_LEVEL="none")
                with open(report) as f:
                    before = len(f.readlines())
                proc, out = one_run(args.test, env, provider)
                runs += 1
                problem = None
                if proc is None:
                    problem = out
                elif proc.returncode != 0:
                    problem = "exit %d" % proc.returncode
                else:
                    provoked = len(re.findall(r"violations\+1\b", out))
                    problem = check_report(report, before, provoked)
                failures += show(provider, label, out, problem)
        if not args.no_nic:
            for rows in (run_engine_rows(args.engine_test, tmp, report,
                                         args.provider or PROVIDERS),
                         run_nic_rows(args, tmp, report, args.provider or PROVIDERS)):
                runs += rows[0]
                failures += rows[1]
    print("run_tests: %d runs, %d failed" % (runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
