#!/usr/bin/env bash
# btl-ofi, second command: rebuild and reinstall the component from this
# checkout, then run the test suite. Default: the slice that crosses every axis
# value at least once (python_tests/matrix.py, "the default slice"), a few
# minutes; --full: the whole matrix, the multihost suite included. Every other
# argument goes to pytest too (e.g. --provider shm, -m bad_input, -k flush).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
if [ ! -f Makefile ] || [ ! -x "$VENV/bin/python" ]; then
    echo "btl-ofi is not set up in $PWD: run 'bash scripts/setup.sh' first" >&2
    exit 2
fi
make -s -j"$(nproc)"
make -s install >/dev/null
rc=0
"$VENV/bin/python" -m pytest python_tests "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    # pytest's "no tests collected": a selection that matched nothing is a failure here
    echo "test.sh: no test was selected (pytest exit 5): check the arguments ($*)" >&2
fi
exit "$rc"
