#!/usr/bin/env bash
# btl-ofi against MPICH's own one-sided tests: every test of MPICH's test suite
# (test/mpi/rma) that calls an accumulate-type operation (MPI_Accumulate,
# MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap, MPI_Raccumulate,
# MPI_Rget_accumulate), built with Open MPI's mpicc and run across host
# namespaces through osc/rdma and btl-ofi. Opt-in (about 30-60 minutes per
# setting on 2 cores); not part of the default test run.
#
#   scripts/check-mpich-rma.sh [--intrinsic | --intrinsic-only] [--hosts N]
#       [--timeout S] [--dtp small|all|none] [--only REGEX] [--no-compare]
#       [--with-dynamic] [--log-dir DIR] [--rebuild] [--build-only]
#       [ENV_FILE]
#
#   ENV_FILE  btl-ofi's env file of the Open MPI to test (default: $BTL_OFI_ENV_FILE,
#             else /usr/local/share/btl-ofi/btl-ofi-env.sh). Its PATH, if it sets one,
#             names the mpicc and mpirun (an Open MPI built elsewhere, e.g.
#             scripts/check-intree.sh's PREFIX/share/btl-ofi/btl-ofi-env.sh); its
#             BTL_OFI_COMPONENT the component (ofirma; ofi in-tree).
#   --intrinsic       run every test twice: Open MPI's defaults, then with
#                     --mca osc_rdma_acc_single_intrinsic true (a column each)
#   --intrinsic-only  only with osc_rdma_acc_single_intrinsic true
#   --hosts N         host namespaces, 2-4 (default 4); a test with more ranks puts
#                     ceil(ranks/N) on each (those reach each other over shm)
#   --timeout S       seconds per mpirun (default 180, MPICH runtests' own; a testlist
#                     timeLimit above it wins)
#   --dtp             the datatype-pool tests (accfence1, accpscw1, lock*_dt*), as
#                     MPICH's configure generates their testlist.dtp: small (default:
#                     counts up to 1018), all (also 65530 and 262144), none
#   --only REGEX      only tests whose name (with arguments) matches
#   --no-compare      do not run a failed test again without btl-ofi (below)
#   --with-dynamic    on Open MPI 4.1.4 and older 4.x, also the tests that make
#                     MPI_Win_create_dynamic windows: those hang across hosts inside
#                     osc/rdma (ompi_osc_rdma_find_dynamic_region), with the stock
#                     btl/ofi too (most likely open-mpi/ompi#10518, fixed after 4.1.4;
#                     DEVELOPING.md "Beyond one host"), so by default they are skipped
#   --rebuild         compile everything again
#   --build-only      fetch, select and compile, print the list, run nothing
#
# Source: Debian's mpich source package (apt-get source, a deb-src entry for the
# mirror apt already uses added where missing), unpacked once into
# /var/cache/btl-ofi/mpich-src-VERSION/ and reused (MPICH_SRC_VERSION picks another
# version). Build: /var/tmp/btl-ofi-mpich-rma-VERSION-HASH/ (HASH: the mpicc and its
# flags, so each Open MPI has its own), only what is needed:
#   - include/mpitestconf.h written here, not by test/mpi/configure: MTest and the
#     rma tests read a dozen of its macros, all fixed on Linux/glibc (headers there,
#     getrusage, long double, MPI_Win_create, POSIX threads; no GPU; USE_STRICT_MPI as
#     --enable-strictmpi sets it for an MPI other than MPICH), while configure would
#     probe Fortran, C++, threads and GPUs and write every directory's makefiles
#   - MTest (util/mtest.c, mtest_common.c, mtest_single.c) and DTPools
#     (dtpools/src, which mtest_common.c calls) into one libmtest.a. dtpools_custom.c
#     calls MPI_Type_hvector and MPI_Type_hindexed, MPI-1 names Open MPI 4.1's mpi.h
#     turns into a static assertion: a forced include maps them to their
#     MPI_Type_create_* equivalents (same arguments)
#   - each program of test/mpi/rma/Makefile.am (its sources and CPPFLAGS), kept when
#     its own preprocessed source (mpicc -E with those flags, MPI's headers left
#     out) calls one of the six operations; a program that does not compile with
#     Open MPI is listed as skipped with the compiler's first error
# Runs: each such test's lines of test/mpi/rma/testlist.in (ranks, arg=...,
# timeLimit=), and the generated DTPools lines. Listed as skipped, each with why:
# selected programs MPICH does not run, win_dynamic_rma_flush_get's -op=put lines,
# the two programs whose accumulates all stay inside one node's
# MPI_Win_allocate_shared window (osc/sm), and the DTPools lines --dtp leaves out.
# Every mpirun (under flock /tmp/btl-ofi-mpi.lock, through python_tests/launcher.py):
#   ip netns exec HUB mpirun -np N --hostfile ... (one daemon per host namespace)
#     --mca pml ob1 --mca osc rdma --mca btl self,tcp,<component>
#     --mca btl_<component>_provider_include 'tcp;ofi_rxm' --mca btl_base_verbose 10
#     --mca mpi_yield_when_idle 1 [--mca osc_rdma_acc_single_intrinsic true]
# The win_shared_*_flush_load tests check, from a node-local MPI_Win_allocate_shared
# window, what an origin on another host wrote through an MPI_Win_create window:
# they get --mca osc sm,rdma and two ranks on the first host (alone on every host
# they return at once, having checked nothing).
# Across hosts osc/rdma can only use btl-ofi (btl/tcp has no RDMA): a window that
# opens was carried by it. Each run must also show btl-ofi's "selected provider"
# line on every rank (the ranks column). A test passes when mpirun exits 0 and
# MPICH's " No Errors" line is printed; a timeout is a failure. A failed test is
# run again twice without btl-ofi:
#   - across the same hosts with --mca osc pt2pt --mca btl self,tcp (on Open MPI 5,
#     which has no osc/pt2pt, osc/rdma's active messages over btl/tcp): another
#     one-sided component; failing there too points at the test or Open MPI's MPI layer
#   - on this host alone with --mca osc rdma --mca btl self,vader (sm on Open MPI 5),
#     --oversubscribe (with acc_single_intrinsic if only that setting failed): the
#     same osc/rdma without btl-ofi; failing there too points at osc/rdma, not at
#     btl-ofi. There osc/rdma serves MPI_Win_allocate windows from its own shared
#     memory, without any BTL: for a test with only such windows a pass proves little,
#     and its cell says so
# Output: a table (test, ranks, result per setting, the two reruns), then
# "N passed, N failed (N skipped)". Logs of every run in the log directory. A run
# that writes more than 16 MiB (a test printing an error per element) is stopped
# there and fails; its log keeps the first and last 4 MiB of each stream.
# Exit: 0 none failed, 1 a test failed, 2 usage or setup error, 77 not root or no
# network namespaces here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)

die() { echo "check-mpich-rma: $*" >&2; exit 2; }

ENV_FILE=${BTL_OFI_ENV_FILE:-/usr/local/share/btl-ofi/btl-ofi-env.sh}
PYARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --intrinsic | --intrinsic-only | --no-compare | --with-dynamic | --rebuild | --build-only)
        PYARGS+=("$1") ;;
    --hosts | --timeout | --dtp | --only | --log-dir)
        [ $# -ge 2 ] || die "$1 needs a value"
        PYARGS+=("$1" "$2"); shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    -*) die "unknown option $1 (--help)" ;;
    *) ENV_FILE=$1 ;;
    esac
    shift
done
[ -r "$ENV_FILE" ] || die "$ENV_FILE not found (make install, or name an env file)"
ENV_FILE=$(readlink -f "$ENV_FILE")
if [ "$(id -u)" != 0 ]; then
    echo "check-mpich-rma: SKIP: needs root (apt-get source, network namespaces)"
    exit 77
fi
command -v python3 >/dev/null || die "python3 not found"

# ------------------------------------------------------------------ source
# shellcheck source=scripts/apt-sources.sh
. scripts/apt-sources.sh
CACHE=${BTL_OFI_CACHE:-/var/cache/btl-ofi}
# shellcheck disable=SC1091
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$SUITE" ] || die "no VERSION_CODENAME in /etc/os-release"

# the source version of the mpich package apt would install (a binNMU such as
# 4.0.2-3+b1 has none of its own: its Source: field names it)
mpich_source_version() {
    apt-cache show --no-all-versions mpich 2>/dev/null | awk '
        /^Version:/ { v = $2 }
        /^Source:/ && $3 ~ /^\(/ { s = $3; gsub(/[()]/, "", s) }
        END { print (s != "" ? s : v) }'
}
VERSION=${MPICH_SRC_VERSION:-$(mpich_source_version)}
[ -n "$VERSION" ] || die "apt knows no mpich package here (apt-get update?)"
SRC_DIR=$CACHE/mpich-src-$VERSION

find_tree() { find "$SRC_DIR" -mindepth 3 -maxdepth 3 -path '*/test/mpi' -type d 2>/dev/null | head -n1; }
TESTS=$(find_tree)
if [ -z "$TESTS" ] || [ ! -f "$TESTS/rma/testlist.in" ]; then
    echo "check-mpich-rma: fetching MPICH $VERSION's source (apt-get source) into $SRC_DIR"
    export DEBIAN_FRONTEND=noninteractive
    if ensure_deb_src "$SUITE"; then
        echo "check-mpich-rma: added a deb-src entry for Debian $SUITE (the mirror apt already uses)"
        apt-get update -qq || die "apt-get update failed"
    fi
    command -v dpkg-source >/dev/null ||
        apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null ||
        die "apt-get install dpkg-dev failed"
    mkdir -p "$CACHE" || die "cannot make $CACHE"
    TMP=$(mktemp -d "$CACHE/.mpich-src-$VERSION.XXXXXX") || die "mktemp in $CACHE failed"
    if ! (cd "$TMP" && apt-get source -qq "mpich=$VERSION" >source.log 2>&1); then
        if ! grep -q 'deb-src\|source URIs' "$TMP/source.log" || ! apt-get update -qq ||
            ! (cd "$TMP" && apt-get source -qq "mpich=$VERSION" >source.log 2>&1); then
            tail -n 5 "$TMP/source.log" >&2
            rm -rf --one-file-system "$TMP"
            die "apt-get source mpich=$VERSION failed"
        fi
    fi
    rm -rf --one-file-system "$SRC_DIR"
    mv "$TMP" "$SRC_DIR" || die "cannot move the source to $SRC_DIR"
    TESTS=$(find_tree)
    if [ -z "$TESTS" ] || [ ! -f "$TESTS/rma/testlist.in" ]; then
        die "$SRC_DIR holds no test/mpi/rma/testlist.in"
    fi
fi
echo "check-mpich-rma: MPICH $VERSION's tests: $TESTS"

# ------------------------------------------------------------------ the rest: Python
# scripts/mpich_rma.py: select (mpich_rma_select.py), build (mpich_rma_build.py), run
# across host namespaces, the table
exec python3 scripts/mpich_rma.py "$REPO" "$ENV_FILE" "$TESTS" "$VERSION" "${PYARGS[@]}" </dev/null
