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


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--provider-so", required=True, help="path of libstrictmr-fi.so")
    ap.add_argument("--test", required=True, help="path of strictmr_test")
    ap.add_argument("--provider", action="append", help="limit to these providers")
    args = ap.parse_args()

    failures = 0
    runs = 0
    with tempfile.TemporaryDirectory(prefix="strictmr.") as tmp:
        os.symlink(os.path.abspath(args.provider_so), os.path.join(tmp, "libstrictmr-fi.so"))
        report = os.path.join(tmp, "report.jsonl")
        open(report, "w").close()
        for provider in args.provider or PROVIDERS:
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
    print("run_tests: %d runs, %d failed" % (runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
