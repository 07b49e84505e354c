#!/usr/bin/env bash
# The other MPIs compare.py --net measures btl-ofi against, from PyPI, each in a
# venv of its own under the MPI cache (never mixed with Open MPI's libraries),
# with the one-sided benchmarks built by that MPI's own compiler wrapper:
#
#   scripts/install-mpis.sh [--cache DIR]     (default $BTL_OFI_MPI_CACHE or
#                                              /var/cache/btl-ofi/mpis)
#
#   DIR/mpich-5.0.2/            pip install mpich==5.0.2 (ch4:ofi with its own
#                               libfabric in lib/mpich, ch4:ucx with its own UCX)
#   DIR/impi-2021.19.0/         pip install --no-deps impi-rt impi-devel: the
#                               `libfabric` wheel impi-rt depends on is not on the
#                               index here; compare.py gives it MPICH's libfabric
#                               (or the system's) through LD_LIBRARY_PATH
#   DIR/<name>/bench-bin/       osc_latency, osc_bw, osc_msgrate, osc_atomic_rate
#                               built with DIR/<name>/bin/mpicc from this checkout
#
# The benchmarks read btl-ofi's counters through MPI_T, which is standard MPI:
# with another MPI the counters are simply absent ("not btl-ofi" rows).
# Idempotent: an installed package is not installed again; the programs are
# rebuilt every time (they are small). Exit 0, or 1 naming what failed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CACHE=${BTL_OFI_MPI_CACHE:-/var/cache/btl-ofi/mpis}
[ "${1:-}" != --cache ] || CACHE=$2
MPICH_VERSION=5.0.2
IMPI_VERSION=2021.19.0
PYTHON=${PYTHON:-python3}
PROGS=(osc_latency osc_bw osc_msgrate osc_atomic_rate)
# The shared sources, as osc_harness/harness.am lists them for the Open MPI build
# (one list: it went stale here once, when the harness core came): the
# benchmarks', and those of osc_flush_visibility (compare.py --net's check that
# MPI_Win_flush completes at the target).
am_sources() { # am_sources VARIABLE: the .c files of that harness.am variable
    printf 'include osc_harness/harness.am\nsrc: ; @echo $(filter %%.c,$(%s))\n' "$1" | make -s -f - src
}
read -ra COMMON < <(am_sources osc_harness_bench)
read -ra VIS_COMMON < <(am_sources osc_harness_common)
{ [ "${#COMMON[@]}" -gt 0 ] && [ "${#VIS_COMMON[@]}" -gt 0 ]; } ||
    { echo "install-mpis: no harness sources found in osc_harness/harness.am" >&2; exit 1; }

venv() { # venv DIR PIP-ARGS...: a venv with these packages (once)
    local dir=$1
    shift
    if [ ! -x "$dir/bin/mpiexec" ]; then
        rm -rf "$dir"
        "$PYTHON" -m venv "$dir"
        "$dir/bin/pip" install -q --disable-pip-version-check "$@"
    fi
    [ -x "$dir/bin/mpiexec" ] || { echo "install-mpis: $dir has no bin/mpiexec after pip" >&2; exit 1; }
}

build() { # build DIR [ENV=VALUE...]: the benchmarks with DIR's mpicc into DIR/bench-bin
    local dir=$1 prog
    shift
    mkdir -p "$dir/bench-bin"
    for prog in "${PROGS[@]}" osc_flush_visibility; do
        local -a srcs=("${COMMON[@]}")
        [ "$prog" != osc_flush_visibility ] || srcs=("${VIS_COMMON[@]}")
        env "$@" "$dir/bin/mpicc" -std=gnu11 -O2 -Wall -Wextra -Werror \
            -DOSC_HARNESS_COMPONENT='"ofirma"' -o "$dir/bench-bin/$prog" "osc_harness/$prog.c" "${srcs[@]}"
    done
    echo "install-mpis: $dir/bench-bin: ${PROGS[*]} osc_flush_visibility ($(env "$@" "$dir/bin/mpicc" -show | cut -d' ' -f1)," \
        "libmpi $(ldd "$dir/bench-bin/osc_latency" | awk '/libmpi/ { print $3 }'))"
}

mkdir -p "$CACHE"
venv "$CACHE/mpich-$MPICH_VERSION" "mpich==$MPICH_VERSION"
build "$CACHE/mpich-$MPICH_VERSION"
venv "$CACHE/impi-$IMPI_VERSION" --no-deps "impi-rt==$IMPI_VERSION" "impi-devel==$IMPI_VERSION"
# Intel's wrappers carry a placeholder prefix: I_MPI_ROOT names the installation
build "$CACHE/impi-$IMPI_VERSION" I_MPI_ROOT="$CACHE/impi-$IMPI_VERSION"
echo "install-mpis: done ($REPO -> $CACHE)"
