"""The strict memory-registration test provider (strictmr/) checks itself.

Before btl-ofi is judged on ofi_strictmr, the provider must show that every
rule it claims can trip: strictmr/tests/run_tests.py runs its plain-libfabric
test program (no MPI) over each core, MR-mode set and key size, with one
passing case per operation family and one provoked violation per rule, and
compares the provider's own violation report with what the cases provoked.
`make` (scripts/test.sh runs it first) builds both pieces in the checkout.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROVIDER_SO = REPO / "strictmr" / ".libs" / "libstrictmr-fi.so"
TEST_PROGRAM = REPO / "strictmr" / "tests" / "strictmr_test"
DRIVER = REPO / "strictmr" / "tests" / "run_tests.py"


@pytest.mark.parametrize("core", ["shm", "sockets", "tcp;ofi_rxm"])
def test_strict_provider_catches_every_rule(core):
    for built in (PROVIDER_SO, TEST_PROGRAM):
        assert built.exists(), f"{built} is missing: run make (scripts/test.sh does)"
    proc = subprocess.run([sys.executable, str(DRIVER), "--provider-so", str(PROVIDER_SO),
                           "--test", str(TEST_PROGRAM), "--provider", f"{core};ofi_strictmr"],
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    tally = re.search(r"run_tests: (\d+) runs, (\d+) failed", output)
    assert proc.returncode == 0 and tally and int(tally.group(1)) > 0 \
        and int(tally.group(2)) == 0, f"{core};ofi_strictmr:\n{output[-4000:]}"
