"""The project's shell scripts pass shellcheck at warning level (no MPI; setup.sh installs
shellcheck): every file of .ci/, scripts/, packaging/, osc_harness/ and tools/ that is a
shell script by name (*.sh) or by its #! line (.ci/run, scripts/netns-rsh). A finding that
is deliberate carries its `# shellcheck disable=...` with the reason beside it."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


#: Where the project keeps shell scripts (a build's own, such as libtool, are not ours).
PLACES = (".ci/*", "scripts/*", "packaging/*", "osc_harness/*", "tools/*")


def shell_scripts():
    """The project's shell scripts: *.sh, or a #! line naming sh or bash."""
    found = []
    for path in sorted(p for place in PLACES for p in ROOT.glob(place) if p.is_file()):
        with open(path, "rb") as f:
            first = f.readline(80).rstrip()
        if path.suffix == ".sh" or (first.startswith(b"#!") and
                                    first.endswith((b"/sh", b"/bash", b" bash"))):
            found.append(str(path.relative_to(ROOT)))
    return found


def test_shell_scripts_found():
    names = shell_scripts()
    assert {".ci/run", "scripts/setup.sh", "scripts/test.sh", "scripts/netns-rsh"} <= set(names), \
        names


def test_shellcheck_warnings():
    tool = shutil.which("shellcheck")
    if tool is None:
        pytest.fail("shellcheck not found: scripts/setup.sh installs it", pytrace=False)
    names = shell_scripts()
    run = subprocess.run([tool, "-S", "warning", "-f", "gcc", *names], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout.strip(), \
        f"shellcheck -S warning: {len(run.stdout.splitlines())} findings\n{run.stdout[-3000:]}" \
        f"{run.stderr[-500:]}"
