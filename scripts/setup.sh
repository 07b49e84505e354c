#!/usr/bin/env bash
# btl-ofi, first command: install every dependency on Debian 12 (run as root),
# build and install the component, and run a short one-sided demo through it.
#
#   PREFIX   install prefix (default /usr/local)
#   VENV     Python virtual environment for the tests (default ./.venv)
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
VENV=${VENV:-$PWD/.venv}

step() { printf '\n==> %s\n' "$*"; }

step "Debian packages: Open MPI, libfabric, autotools, Python"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    openmpi-bin libopenmpi-dev libfabric-dev libfabric-bin \
    autoconf automake libtool pkg-config make gcc \
    python3 python3-venv python3-dev >/dev/null

step "Python environment in $VENV (mpi4py, numpy, cffi, pytest; matplotlib for the benchmarks)"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -r python_tests/requirements.txt -r osc_harness/requirements.txt

step "Build and install btl-ofi into $PREFIX"
autoreconf -fi >/dev/null 2>&1
./configure -q --prefix="$PREFIX"
make -s -j"$(nproc)"
make -s install >/dev/null

step "Demo: 2 ranks, one-sided operations through btl-ofi on the shm provider"
# shellcheck disable=SC1091
. "$PREFIX/share/btl-ofi/btl-ofi-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi_info | grep "MCA btl: ofi"
mpirun -np 2 --mca pml ob1 --mca btl self,vader,ofi --mca osc rdma \
    --mca btl_ofi_provider_include shm "$PREFIX/libexec/btl-ofi/osc_demo"
