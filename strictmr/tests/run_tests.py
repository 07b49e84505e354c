#!/usr/bin/env python3
"""Runs strictmr_test over every provider x MR-mode set x key size.

Each run gets FI_OFI_STRICTMR_MR_MODE / _KEY_SIZE from the matrix and a report
file; the run must pass all its cases, and the report line it leaves must show
checks performed and exactly the violations the negative cases provoked.
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

# The NIC data-path rows (nic_test, strictmr_engine.c): (case, variables, providers or None for
# all, events): each event must be > 0 ("+") or == 0 ("0") in the run's report line. A "_off"
# case runs with the behaviour off and must see the opposite of its "on" case.
NIC_MODE = ("virt_addr,allocated,prov_key", 2)
NIC_ROWS = [
    ("reorder", {"REORDER": "1", "REORDER_WINDOW": "16"}, None,
     {"reordered": "+", "completions_reordered": "+"}),
    ("reorder_off", {}, None, {"reordered": "0", "completions_reordered": "0"}),
    ("sas", {"REORDER": "1"}, None, {"reordered": "0"}),
    ("progress", {"PROGRESS_US": "100"}, None, {"thread_completions": "+"}),
    # only tcp;ofi_rxm needs the target to make calls: shm's RMA is done by the initiator
    # (CMA), sockets has a progress thread of its own
    ("progress_off", {}, ["tcp;ofi_rxm;ofi_strictmr"], {"thread_completions": "0"}),
    ("txq", {"TX_SIZE": "4"}, None, {"tx_eagain": "+"}),
    ("rxq", {"RX_SIZE": "4"}, None, {"rx_eagain": "+"}),
    ("cqfull", {"CQ_SIZE": "4", "PROGRESS_US": "100"}, None, {"cq_full": "+"}),
]


def one_run(test, env, provider):
    try:
        proc = subprocess.run([test, provider], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timeout after %ds" % TIMEOUT
    return proc, proc.stdout


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


def nic_rows(nic_test, tmp, report, providers):
    """Runs the NIC data-path rows; returns (runs, failures)."""
    runs = failures = 0
    for case, variables, only, expected in NIC_ROWS:
        for provider in providers:
            if only and provider not in only:
                continue
            env = dict(os.environ, FI_PROVIDER_PATH=tmp, FI_OFI_STRICTMR_MR_MODE=NIC_MODE[0],
                       FI_OFI_STRICTMR_KEY_SIZE=str(NIC_MODE[1]),
                       FI_OFI_STRICTMR_REPORT=report, FI_LOG_LEVEL="none")
            env.update({"FI_OFI_STRICTMR_" + k: v for k, v in variables.items()})
            with open(report) as f:
                before = len(f.readlines())
            try:
                proc = subprocess.run([nic_test, provider, case], env=env, capture_output=True,
                                      text=True, timeout=TIMEOUT)
                out = proc.stdout
                problem = "exit %d" % proc.returncode if proc.returncode else None
            except subprocess.TimeoutExpired:
                out, problem = "", "timeout after %ds" % TIMEOUT
            if not problem:
                problem = check_report(report, before, 0) or check_events(report, before,
                                                                          expected)
            runs += 1
            label = "nic:" + case
            summary = [l for l in out.splitlines() if l.startswith("SUMMARY")]
            print("%s %-26s %-18s %s" % ("FAIL" if problem else "ok  ", provider, label,
                                         summary[0] if summary else ""))
            if problem:
                failures += 1
                print("     -> %s" % problem)
                for line in out.splitlines():
                    if not line.startswith("PASS"):
                        print("     | " + line)
    return runs, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--provider-so", required=True, help="path of libstrictmr-fi.so")
    ap.add_argument("--test", required=True, help="path of strictmr_test")
    ap.add_argument("--provider", action="append", help="limit to these providers")
    ap.add_argument("--nic-test", help="path of nic_test: also run the NIC data-path rows")
    ap.add_argument("--nic-only", action="store_true", help="only the NIC data-path rows")
    args = ap.parse_args()

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
                summary = [l for l in out.splitlines() if l.startswith("SUMMARY")]
                status = "FAIL" if problem else "ok  "
                print("%s %-26s %-18s %s" % (status, provider, label,
                                             summary[0] if summary else ""))
                if problem:
                    failures += 1
                    print("     -> %s" % problem)
                    for line in out.splitlines():
                        if not line.startswith("PASS"):
                            print("     | " + line)
        if args.nic_test:
            nic_runs, nic_failures = nic_rows(args.nic_test, tmp, report,
                                              args.provider or PROVIDERS)
            runs += nic_runs
            failures += nic_failures
    print("run_tests: %d runs, %d failed" % (runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
