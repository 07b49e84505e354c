#!/usr/bin/env bash
# btl-ofi, second command: rebuild and reinstall the component from this
# checkout, then run the whole test suite. Extra arguments go to pytest
# (e.g. --provider shm, -m full, -k flush).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
if [ ! -f Makefile ] || [ ! -x "$VENV/bin/python" ]; then
    echo "btl-ofi is not set up in $PWD: run 'bash scripts/setup.sh' first" >&2
    exit 2
fi
make -s -j"$(nproc)"
make -s install >/dev/null
exec "$VENV/bin/python" -m pytest python_tests "$@"
