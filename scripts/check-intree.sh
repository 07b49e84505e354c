#!/usr/bin/env bash
# btl-ofi inside an Open MPI build: fetch the source of the Open MPI this
# Debian has (4.1.4 on Debian 12; 5.0.7 on Debian 13, e.g. in the root of
# scripts/debroot.sh), replace opal/mca/btl/ofi with this repository's
# btl_ofi/, build and install that Open MPI into a scratch prefix, and run the
# one-sided checks with it. There the component keeps the name "ofi".
# Opt-in and long (about 25-35 minutes per variant on 2 cores); not part of
# the default test run.
#
#   scripts/check-intree.sh [--work DIR] [--jobs N] [--rebuild] [VARIANT...]
#   scripts/check-intree.sh --osc-patch [--source-only] [--acc-iterations N]
#                           [--work DIR] [--jobs N] [--rebuild] [VARIANT...]
#
#   VARIANT   dso     btl/ofi built as mca_btl_ofi.so in the prefix (4.1: the default
#                     build; 5.0: --enable-mca-dso=btl-ofi)
#             static  linked into libopen-pal (4.1: --enable-mca-static=btl-ofi;
#                     5.0: the default build)
#             badofi  configure only, --with-ofi pointing at a libfabric whose
#                     headers say API 1.4: configure must stop with btl-ofi's
#                     reason (minutes, not a build)
#             (default: badofi dso static)
#   --work    scratch directory (default /var/tmp/btl-ofi-intree-VERSION): source,
#             build-VARIANT/, prefix-VARIANT/, project-VARIANT/, venv-VARIANT/
#   --jobs    make -j (default: nproc)
#   --rebuild build again even if the stamp says this btl_ofi/ was built
#   --osc-patch  the same Open MPI with the osc/rdma patch of upstream/ applied
#             first (upstream/v4.1.x/ on 4.1, upstream/v5.0.x/ on 5.0; every
#             NNNN-*.patch there, in order; patch -p1 --fuzz=0: a patch that does
#             not apply stops the run, exit 2). Its own work directory, keyed by
#             the Open MPI version and the patches' hash (default
#             /var/tmp/btl-ofi-intree-VERSION-osc-HASH), so the plain build and
#             the patched ones never overwrite each other; a second run reuses
#             the build (only btl_ofi/ edits are rebuilt). Default variant: dso.
#             Its checks (instead of those below):
#               1. ompi_info (the env file's PATH) names the build's prefix and
#                  btl-ofi's btl/ofi; the patch's marker (the table
#                  ompi_osc_rdma_op_support) is absent from Debian's source, and
#                  the installed osc/rdma (mca_osc_rdma.so on 4.1, libmpi.so on
#                  5.0) defines it; upstream/test/osc_rdma_acc_lock.c, built with
#                  the build's mpicc, links the build's libmpi
#               2. writes PREFIX/share/btl-ofi/btl-ofi-env.sh (PATH,
#                  LD_LIBRARY_PATH, the component paths, BTL_OFI_COMPONENT=ofi):
#                  source it, or name it in BTL_OFI_ENV_FILE for tools/ and
#                  python_tests/ (run them with WORK/venv-VARIANT/bin/python)
#               3. osc_rdma_acc_lock, 4 ranks on two host namespaces (3 + 1,
#                  scripts/check-multihost.sh --setup-only), tcp;ofi_rxm, with and
#                  without --mca osc_rdma_acc_single_intrinsic true: exit 0, PASSED
#               4. with --mca osc_rdma_acc_single_intrinsic true, 4 ranks 3 + 1:
#                  osc_stress (create and allocate windows) exact; osc_soak -m fadd,
#                  40000 fetch-and-adds on one word from both hosts, exact; then
#                  scripts/check-multihost.sh --hosts 3 --mca ... 'tcp;ofi_rxm' (its
#                  programs and the Python conformance suite across three hosts): exit 0
#               5. tools/acc_lock_cost.py (2 host namespaces), btl-ofi's counters:
#                  under lock_all, 3 BTL atomics per single-element fetch-and-op,
#                  accumulate and get-accumulate by default (as unpatched), 1 with
#                  --mca osc_rdma_acc_single_intrinsic true
#   --source-only  fetch the source (and apply the patch), then stop
#   --acc-iterations  operations per rank and check of osc_rdma_acc_lock (default 1000)
#
# Without --osc-patch, per variant, with ONLY the scratch Open MPI (its own mpirun, libraries and
# component directory; the installed btl-ofi env file is not used):
#   1. ompi_info lists "MCA btl: ofi ... Component v<btl-ofi version>" (the
#      stock component would say v4.1.4); dso: mca_btl_ofi.so is in the
#      prefix; static: no .so, and libopen-pal exports mca_btl_ofi_component
#   2. osc_demo on shm, sockets and tcp;ofi_rxm: exact, btl_ofi counters moved
#   3. osc_flush_visibility on shm (exit 2 would mean: not carried by btl-ofi)
#   4. the Python conformance suite (python_tests/test_conformance.py) and the
#      accumulate-lock contention test, with mpi4py compiled against that
#      Open MPI (on Debian 13, whose root reaches no PyPI: Debian's mpi4py, on
#      the scratch libmpi of the same version), which reads btl_ofi_* pvars
# Exit: 0 all passed, 1 a check failed, 2 usage or a build step failed (or
# the patch did not apply).
# Needs root for apt-get (deb-src entry, build dependencies). Every mpirun
# runs under flock /tmp/btl-ofi-mpi.lock.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
# shellcheck source=scripts/apt-sources.sh
. scripts/apt-sources.sh

# The Open MPI of this Debian, whose source is built.
OMPI_DEB_VERSION=$(ompi_source_version) || OMPI_DEB_VERSION=
[ -n "$OMPI_DEB_VERSION" ] || { echo "check-intree: libopenmpi-dev is not installed" >&2; exit 2; }
OMPI_UPSTREAM=${OMPI_DEB_VERSION%-*}
OMPI_UPSTREAM=${OMPI_UPSTREAM#*:}
# shellcheck disable=SC1091
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
case "$OMPI_UPSTREAM" in
4.1.*)
    NODE_BTL=vader DSO_FLAG=() STATIC_FLAG=(--enable-mca-static=btl-ofi)
    PMIX_FLAG=--with-pmix=/usr/lib/$(gcc -print-multiarch)/pmix2
    ;;
*)
    NODE_BTL=sm DSO_FLAG=(--enable-mca-dso=btl-ofi) STATIC_FLAG=()
    # as Debian builds it: pkg-config's flags also name include/pmix, where the
    # bundled PRRTE finds PMIx's internal headers
    PMIX_FLAG=--with-pmix=external
    ;;
esac

WORK=
JOBS=$(nproc)
REBUILD=0
OSC_PATCH=0
SOURCE_ONLY=0
ACC_ITERATIONS=1000
VARIANTS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --work) WORK=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --rebuild) REBUILD=1 ;;
    --osc-patch) OSC_PATCH=1 ;;
    --source-only) SOURCE_ONLY=1 ;;
    --acc-iterations) ACC_ITERATIONS=$2; shift ;;
    -h | --help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    dso | static | badofi) VARIANTS+=("$1") ;;
    *) echo "check-intree: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if ! [[ "$ACC_ITERATIONS" =~ ^[0-9]+$ ]] || [ "$ACC_ITERATIONS" -lt 2 ]; then
    echo "check-intree: --acc-iterations takes a number >= 2" >&2
    exit 2
fi

# --osc-patch: the osc/rdma patches of upstream/ for this Open MPI series (upstream/'s
# top-level patch is for open-mpi/ompi main, which Debian does not ship).
OSC_PATCHES=()
OSC_SERIES=
PATCH_HASH=
if [ "$OSC_PATCH" = 1 ]; then
    case "$OMPI_UPSTREAM" in
    4.1.*) OSC_SERIES=v4.1.x ;;
    5.0.*) OSC_SERIES=v5.0.x ;;
    *) echo "check-intree: --osc-patch: no patch in upstream/ for Open MPI $OMPI_UPSTREAM" >&2; exit 2 ;;
    esac
    for p in "$REPO/upstream/$OSC_SERIES"/[0-9][0-9][0-9][0-9]-*.patch; do
        [ -f "$p" ] && OSC_PATCHES+=("$p")
    done
    [ ${#OSC_PATCHES[@]} -gt 0 ] ||
        { echo "check-intree: --osc-patch: no NNNN-*.patch in upstream/$OSC_SERIES" >&2; exit 2; }
    PATCH_HASH=$(cat "${OSC_PATCHES[@]}" | sha256sum | cut -c1-12)
    [ -n "$WORK" ] || WORK=/var/tmp/btl-ofi-intree-$OMPI_UPSTREAM-osc-$PATCH_HASH
    [ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(dso)
fi
[ -n "$WORK" ] || WORK=/var/tmp/btl-ofi-intree-$OMPI_UPSTREAM
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(badofi dso static)
mkdir -p "$WORK" || exit 2
WORK=$(cd "$WORK" && pwd)
OMPI_SRC=$WORK/openmpi-$OMPI_UPSTREAM
LOCK=/tmp/btl-ofi-mpi.lock
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

step() { printf '\n==> %s\n' "$*"; }
die() { echo "check-intree: $*" >&2; exit 2; }
SUMMARY=()
FAILED=0
record() { # record VARIANT CHECK pass|FAIL DETAIL
    SUMMARY+=("$(printf '%-7s %-34s %-5s %s' "$1" "$2" "$3" "$4")")
    [ "$3" = pass ] || FAILED=1
}
# run LOG CMD... : run CMD with output to LOG; print the log's tail on failure
run() {
    local log=$1; shift
    if ! "$@" >"$log" 2>&1; then
        echo "check-intree: failed: $*" >&2
        tail -n 40 "$log" >&2
        return 1
    fi
}

# The component's files as the repository tracks them (build products of the
# standalone build in btl_ofi/ must not leak into Open MPI's tree).
component_files() {
    if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$REPO" ls-files btl_ofi
    else
        (cd "$REPO" && ls btl_ofi/*.c btl_ofi/*.h btl_ofi/*.am btl_ofi/*.m4 btl_ofi/*.txt btl_ofi/*.awk | grep -v btl_ofi_help_text.h)
    fi
}
BTL_OFI_HASH=$(cd "$REPO" && component_files | xargs sha256sum | sha256sum | cut -c1-16)
# Only these change Open MPI's generated build system; when they are the same
# as last time, a changed .c/.h needs no autogen.pl/configure, just make.
BUILDSYS_HASH=$(cd "$REPO" && sha256sum btl_ofi/configure.m4 btl_ofi/Makefile.am btl_ofi/sources.am |
    sha256sum | cut -c1-16)
STAMP="$BUILDSYS_HASH $BTL_OFI_HASH"
# a patched tree's builds are never taken for the plain ones (nor for another patch's)
[ -z "$PATCH_HASH" ] || STAMP="$STAMP osc-$PATCH_HASH"
BTL_OFI_VERSION=$(sed -n 's/^AC_INIT(\[btl-ofi\], \[\([^]]*\)\].*/\1/p' "$REPO/configure.ac")
[ -n "$BTL_OFI_VERSION" ] || die "cannot read btl-ofi's version from configure.ac"

# ------------------------------------------------------------------ source
fetch_source() {
    [ -f "$OMPI_SRC/autogen.pl" ] && return 0
    [ "$(id -u)" = 0 ] || die "needs root for apt-get (deb-src entry and build dependencies)"
    export DEBIAN_FRONTEND=noninteractive
    if ensure_deb_src "$SUITE"; then
        step "Added a deb-src entry for Debian $SUITE (the mirror apt already uses)"
    fi
    apt-get update -qq || die "apt-get update failed"
    step "Build dependencies of Open MPI (compilers, autotools, flex, hwloc, libevent, pmix, libfabric)"
    apt-get install -y -qq --no-install-recommends dpkg-dev build-essential autoconf automake \
        libtool flex perl pkg-config libhwloc-dev libevent-dev libpmix-dev libfabric-dev \
        python3-venv python3-dev git >/dev/null || die "apt-get install failed"
    step "apt-get source openmpi=$OMPI_DEB_VERSION into $WORK"
    (cd "$WORK" && apt-get source -qq "openmpi=$OMPI_DEB_VERSION") >"$WORK/apt-source.log" 2>&1 ||
        { tail -n 20 "$WORK/apt-source.log" >&2; die "apt-get source openmpi=$OMPI_DEB_VERSION failed"; }
    [ -f "$OMPI_SRC/autogen.pl" ] || die "no $OMPI_SRC/autogen.pl after apt-get source"
    # Debian's tree as fetched for --osc-patch (removed once the patches are applied)
    [ "$OSC_PATCH" = 0 ] || touch "$OMPI_SRC/.osc-unpatched"
}

# --osc-patch: apply upstream/'s osc/rdma patches to the freshly fetched tree
# (Debian's own patches already applied by apt-get source), or check that the tree
# carries exactly them. The tree's .osc-patch-stamp holds the patches' hash; a plain
# run refuses a patched tree and a patched run an unpatched one it did not fetch.
# The marker: the table the patches add, absent before and present after.
OSC_MARKER=ompi_osc_rdma_op_support
apply_osc_patch() {
    local have p log=$WORK/osc-patch.log
    have=$(cat "$OMPI_SRC/.osc-patch-stamp" 2>/dev/null)
    if [ "$OSC_PATCH" = 0 ]; then
        [ -z "$have" ] || die "$OMPI_SRC carries upstream/'s osc/rdma patch ($have): give another --work"
        return 0
    fi
    if [ "$have" = "$PATCH_HASH" ]; then
        echo "check-intree: $OMPI_SRC carries upstream/$OSC_SERIES's patches ($PATCH_HASH)"
        return 0
    fi
    if [ -n "$have" ]; then
        # another version of the patches (--work named explicitly): start from Debian's source
        step "$OMPI_SRC carries other patches ($have): fetching Debian's source again"
        rm -rf "$OMPI_SRC" "$WORK"/build-*
        fetch_source || return 1
    fi
    [ -e "$OMPI_SRC/.osc-unpatched" ] ||
        die "$OMPI_SRC holds Debian's source without the osc/rdma patch, not fetched for it (a plain check-intree tree?): give another --work"
    if grep -rq "$OSC_MARKER" "$OMPI_SRC/ompi/mca/osc/rdma"; then
        die "Debian's source already names $OSC_MARKER: it cannot tell the patched osc/rdma from the stock one"
    fi
    : >"$log"
    for p in "${OSC_PATCHES[@]}"; do
        step "Applying upstream/$OSC_SERIES/$(basename "$p") to Open MPI $OMPI_DEB_VERSION (patch -p1 --fuzz=0)"
        # first a dry run: a patch that does not apply leaves the tree untouched
        if ! (cd "$OMPI_SRC" && patch -p1 --forward --batch --fuzz=0 --dry-run <"$p") >>"$log" 2>&1; then
            cat "$log" >&2
            echo "check-intree: upstream/$OSC_SERIES/$(basename "$p") DOES NOT APPLY to Debian's" \
                "Open MPI $OMPI_DEB_VERSION source ($OMPI_SRC, log $log)" >&2
            exit 2
        fi
        (cd "$OMPI_SRC" && patch -p1 --forward --batch --fuzz=0 <"$p") >>"$log" 2>&1 ||
            { cat "$log" >&2; die "patch -p1 < $p failed after a clean dry run (log $log)"; }
    done
    # what patch said (files, offsets)
    grep -v '^checking file' "$log"
    grep -rq "$OSC_MARKER" "$OMPI_SRC/ompi/mca/osc/rdma" ||
        die "after the patch, ompi/mca/osc/rdma still does not name $OSC_MARKER"
    echo "$PATCH_HASH" >"$OMPI_SRC/.osc-patch-stamp"
    rm -f "$OMPI_SRC/.osc-unpatched"
}

# Replace opal/mca/btl/ofi with btl_ofi/ and regenerate Open MPI's build system.
# Stamps hold "BUILDSYS_HASH BTL_OFI_HASH" of what was copied and built.
prepare_source() {
    local stamp
    stamp=$(cat "$OMPI_SRC/.btl-ofi-stamp" 2>/dev/null)
    if [ "$REBUILD" = 0 ] && [ "$stamp" = "$STAMP" ]; then
        echo "check-intree: source tree already carries btl_ofi/ $BTL_OFI_HASH"
        return 0
    fi
    if [ "$REBUILD" = 0 ] && [ "${stamp%% *}" = "$BUILDSYS_HASH" ]; then
        step "Copying btl_ofi/ sources over opal/mca/btl/ofi (build system unchanged: no autogen.pl)"
        # not configure.m4, Makefile.am, sources.am: a fresh timestamp on them
        # would make make rerun Open MPI's autotools by itself, which fails
        (cd "$REPO/btl_ofi" && component_files | sed 's|^btl_ofi/||' | grep -v '\.\(m4\|am\)$' |
            xargs cp -t "$OMPI_SRC/opal/mca/btl/ofi/") || return 1
        echo "$STAMP" >"$OMPI_SRC/.btl-ofi-stamp"
        return 0
    fi
    step "Replacing opal/mca/btl/ofi with btl_ofi/ ($(component_files | wc -l) files)"
    rm -rf "$OMPI_SRC/opal/mca/btl/ofi"
    mkdir -p "$OMPI_SRC/opal/mca/btl/ofi" || return 1
    (cd "$REPO/btl_ofi" && component_files | sed 's|^btl_ofi/||' |
        xargs cp -t "$OMPI_SRC/opal/mca/btl/ofi/") || return 1
    step "autogen.pl (Open MPI's autotools run; a few minutes)"
    # Debian's rules regenerate this file before autogen.pl too.
    (cd "$OMPI_SRC/config" && autom4te --language=m4sh opal_get_version.m4sh -o opal_get_version.sh) ||
        return 1
    run "$WORK/autogen.log" bash -c "cd '$OMPI_SRC' && ./autogen.pl --force" || return 1
    grep -q 'Found opal / btl / ofi component' "$WORK/autogen.log" ||
        { echo "autogen.pl did not find opal/mca/btl/ofi" >&2; return 1; }
    echo "$STAMP" >"$OMPI_SRC/.btl-ofi-stamp"
    rm -f "$WORK"/build-*/.built
}

# ------------------------------------------------------------------- build
# --with-ofi given but unusable: a copy of the installed libfabric whose
# headers claim API 1.4 (the library itself is the real one, so only the
# version test can refuse it). configure must stop, naming the reason.
check_badofi() {
    local fake=$WORK/fake-ofi-1.4 build=$WORK/build-badofi hdr
    hdr=$(echo '#include <rdma/fabric.h>' | cpp -H -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -n1)
    [ -f "$hdr" ] || { record badofi "configure refuses API 1.4" FAIL "no rdma/fabric.h found"; return; }
    rm -rf "$fake" "$build"
    mkdir -p "$fake/include" "$fake/lib" "$build"
    cp -r "$(dirname "$hdr")" "$fake/include/"
    sed -i -e 's/^#define FI_MAJOR_VERSION .*/#define FI_MAJOR_VERSION 1/' \
        -e 's/^#define FI_MINOR_VERSION .*/#define FI_MINOR_VERSION 4/' "$fake/include/rdma/fabric.h"
    ln -s "$(gcc -print-file-name=libfabric.so)" "$fake/lib/libfabric.so"
    step "[badofi] configure --with-ofi=$fake (headers say libfabric API 1.4)"
    (cd "$build" && "$OMPI_SRC/configure" --prefix="$build/none" --with-ofi="$fake" \
        --with-hwloc=external --with-libevent=external \
        $PMIX_FLAG \
        --disable-mpi-fortran --disable-oshmem) >"$build/configure.log" 2>&1
    local rc=$?
    grep -A1 'cannot be built' "$build/configure.log"
    if [ $rc != 0 ] && grep -q 'btl/ofi (btl-ofi) cannot be built: its API version is older than 1.5' \
        "$build/configure.log" && grep -q 'Cannot continue' "$build/configure.log"; then
        record badofi "configure refuses API 1.4" pass "exit $rc: btl-ofi's reason printed"
    else
        tail -n 15 "$build/configure.log"
        record badofi "configure refuses API 1.4" FAIL "exit $rc; see $build/configure.log"
    fi
}

build_ompi() { # VARIANT
    local v=$1 build=$WORK/build-$1 prefix=$WORK/prefix-$1 extra=()
    local built
    built=$(cat "$build/.built" 2>/dev/null)
    if [ "$built" = "$STAMP" ]; then
        echo "check-intree: $v Open MPI already built with btl_ofi/ $BTL_OFI_HASH"
        return 0
    fi
    if [ "${built%% *}" = "$BUILDSYS_HASH" ] && [ -f "$build/Makefile" ]; then
        step "[$v] btl_ofi/ sources changed: make -j$JOBS && make install in $build"
        run "$build/make.log" make -C "$build" -j"$JOBS" || return 1
        run "$build/install.log" make -C "$build" install || return 1
        echo "$STAMP" >"$build/.built"
        return 0
    fi
    if [ "$v" = static ]; then extra=("${STATIC_FLAG[@]}"); else extra=("${DSO_FLAG[@]}"); fi
    rm -rf "$build" "$prefix"
    mkdir -p "$build"
    step "[$v] configure Open MPI into $prefix ${extra[*]}"
    # Only what one-sided checks need: no Fortran, OpenSHMEM or ROMIO; hwloc,
    # libevent and PMIx from Debian (as Debian's own build does).
    run "$build/configure.log" bash -c "cd '$build' && '$OMPI_SRC/configure' \
        --prefix='$prefix' --with-ofi --with-devel-headers \
        --with-hwloc=external --with-libevent=external \
        $PMIX_FLAG \
        --disable-mpi-fortran --disable-oshmem --enable-mca-no-build=io-romio321,io-romio341 \
        --without-ucx --without-verbs ${extra[*]}" || return 1
    grep -A3 'checking for MCA component opal:btl:ofi compile mode' "$build/config.log" | head -n 2 || true
    step "[$v] make -j$JOBS && make install (the long part)"
    run "$build/make.log" make -C "$build" -j"$JOBS" || return 1
    run "$build/install.log" make -C "$build" install || return 1
    echo "$STAMP" >"$build/.built"
}

# The project's harness programs and a mpi4py, both against that Open MPI.
build_clients() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 proj=$WORK/project-$1 venv=$WORK/venv-$1
    step "[$v] osc_harness programs built with $prefix/bin/mpicc"
    rm -rf "$proj"
    mkdir -p "$proj/src"
    # A copy of the checkout (the checkout itself may be configured in place,
    # which rules out a VPATH build from it).
    if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$REPO" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$proj/src" || return 1
    else
        cp -a "$REPO/." "$proj/src/" && (cd "$proj/src" && { make distclean >/dev/null 2>&1 || true; })
    fi
    run "$proj/autoreconf.log" bash -c "cd '$proj/src' && autoreconf -fi" || return 1
    # (an Open MPI 5 installation lacks headers even when built --with-devel-headers)
    run "$proj/configure.log" bash -c "cd '$proj' && src/configure --with-ompi='$prefix' \
        --with-ompi-source='$OMPI_SRC' --prefix='$proj/install'" || return 1
    run "$proj/make.log" make -C "$proj" -j"$JOBS" || return 1
    if [ "$NODE_BTL" = sm ]; then
        # Debian 13 (no PyPI in the root): Debian's mpi4py, built against the
        # same Open MPI version, runs on this build's libmpi (LD_LIBRARY_PATH below)
        [ -x "$venv/bin/python" ] || python3 -m venv --system-site-packages "$venv" || return 1
    elif [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
        step "[$v] Python venv with mpi4py compiled against $prefix"
        python3 -m venv "$venv" || return 1
        run "$venv/pip.log" "$venv/bin/pip" install -q --upgrade pip || return 1
        run "$venv/pip-mpi4py.log" env MPICC="$prefix/bin/mpicc" "$venv/bin/pip" install -q \
            --no-binary mpi4py --no-cache-dir -r "$REPO/python_tests/requirements.txt" || return 1
    fi
    # What python_tests and check scripts read instead of the installed
    # btl-ofi env file: only this Open MPI's own component directory.
    local pkglibdir
    pkglibdir=$(pkglibdir_of "$v") || return 1
    local pmix_dir
    pmix_dir=$(pkg-config --variable=libdir pmix 2>/dev/null)/pmix
    local patched=""
    [ -z "$PATCH_HASH" ] ||
        patched=", osc/rdma patched with upstream/$OSC_SERIES/ ($(basename -a "${OSC_PATCHES[@]}" | paste -sd' ' -), $PATCH_HASH)"
    {
        echo "# Open MPI $OMPI_DEB_VERSION built from source with btl-ofi in-tree ($v$patched): $prefix"
        echo "export PATH=\"$prefix/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\""
        echo "export LD_LIBRARY_PATH=\"$prefix/lib\""
        echo "export OMPI_MCA_mca_base_component_path=\"$pkglibdir\""
        if [ "$NODE_BTL" = sm ] && [ -d "$pmix_dir" ]; then
            echo "export PMIX_MCA_mca_base_component_path=\"$pmix_dir\""
        fi
        echo "export BTL_OFI_COMPONENT=\"ofi\""
        echo "export BTL_OFI_NODE_BTL=\"$NODE_BTL\""
        echo "export BTL_OFI_OMPI_VERSION=\"$OMPI_UPSTREAM\""
        echo "export BTL_OFI_COMPONENT_DIR=\"$pkglibdir\""
        echo "export BTL_OFI_OMPI_PKGLIBDIR=\"$pkglibdir\""
        echo "export BTL_OFI_LIBEXECDIR=\"$proj\""
    } >"$WORK/env-$v.sh"
    # the same in the prefix, where an installed btl-ofi keeps it
    mkdir -p "$prefix/share/btl-ofi" && cp "$WORK/env-$v.sh" "$prefix/share/btl-ofi/btl-ofi-env.sh"
}

# ------------------------------------------------------------------ checks
# Where that Open MPI keeps its components (Debian's patches make it
# lib/openmpi3, not lib/openmpi).
pkglibdir_of() { # VARIANT
    local prefix=$WORK/prefix-$1 dir
    dir=$(env -i HOME="$WORK" PATH="$prefix/bin:/usr/bin:/bin" "$prefix/bin/ompi_info" --parsable --path pkglibdir |
        sed -n 's/^path:pkglibdir://p')
    [ -d "$dir" ] || { echo "check-intree: no pkglibdir from $prefix/bin/ompi_info" >&2; return 1; }
    echo "$dir"
}

# mpirun of the scratch Open MPI, with no btl-ofi env file and no user MCA files.
scratch_mpirun() { # VARIANT TIMEOUT NP PROVIDER PROG ARGS...
    local v=$1 to=$2 np=$3 prov=$4; shift 4
    # the component paths as the env file gives them (Open MPI 5's prterun
    # would hand the ranks PMIx's plugin directory instead of Open MPI's)
    # shellcheck disable=SC1090
    env -i HOME="$WORK" PATH="$WORK/prefix-$v/bin:/usr/bin:/bin" \
        LD_LIBRARY_PATH="$WORK/prefix-$v/lib" BTL_OFI_COMPONENT=ofi \
        $(. "$WORK/env-$v.sh" && env | grep '^[A-Z]*_MCA_mca_base_component_path=') \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        flock "$LOCK" timeout "$to" "$WORK/prefix-$v/bin/mpirun" -np "$np" --oversubscribe \
        --bind-to none --mca pml ob1 --mca btl "self,$NODE_BTL,ofi" --mca osc rdma \
        --mca btl_ofi_provider_include "$prov" "$@"
}

# ompi_info names btl-ofi's btl/ofi, built as the variant says.
check_component() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 line
    step "[$v] which btl/ofi this Open MPI has"
    line=$(env -i HOME="$WORK" PATH="$prefix/bin:/usr/bin:/bin" "$prefix/bin/ompi_info" | grep 'MCA btl: ofi')
    echo "$line"
    if [[ "$line" == *"Component v$BTL_OFI_VERSION)"* ]]; then
        record "$v" "ompi_info: btl ofi is btl-ofi" pass "Component v$BTL_OFI_VERSION"
    else
        record "$v" "ompi_info: btl ofi is btl-ofi" FAIL "${line:-no btl ofi listed}"
    fi
    local so
    so=$(pkglibdir_of "$v")/mca_btl_ofi.so
    if [ "$v" = dso ]; then
        [ -f "$so" ] && record "$v" "component is a DSO" pass "$so" ||
            record "$v" "component is a DSO" FAIL "no $so"
        # linked against libfabric: its symbols carry libfabric's versions
        # (unversioned, ld.so would bind them to the API 1.0 ones)
        local ver
        ver=$(objdump -T "$so" 2>/dev/null | awk '$NF == "fi_getinfo" { print $(NF-1) }')
        if [[ "$ver" == *FABRIC_* ]]; then
            record "$v" "DSO links libfabric" pass "fi_getinfo $ver"
        else
            record "$v" "DSO links libfabric" FAIL "fi_getinfo is unversioned (${ver:-absent}): no -lfabric"
        fi
    else
        local syms # (not nm | grep -q: with pipefail, nm's SIGPIPE would fail the test)
        syms=$(nm -D --defined-only "$prefix/lib/libopen-pal.so")
        if [ ! -e "$so" ] && grep -q ' mca_btl_ofi_component$' <<<"$syms"; then
            record "$v" "component is in libopen-pal" pass "no .so; libopen-pal.so defines mca_btl_ofi_component"
        else
            record "$v" "component is in libopen-pal" FAIL "$(ls "$so" 2>/dev/null) / symbol missing"
        fi
    fi
}

check_variant() { # VARIANT
    local v=$1 proj=$WORK/project-$1 log p
    check_component "$v"
    for p in shm sockets "tcp;ofi_rxm"; do
        log=$WORK/$v-osc_demo-${p//;/_}.log
        step "[$v] osc_demo, 2 ranks, $p"
        if scratch_mpirun "$v" 120 2 "$p" "$proj/osc_demo" >"$log" 2>&1 && grep -q PASSED "$log"; then
            record "$v" "osc_demo $p" pass "$(grep -c ' exact ' "$log") rows exact, counters moved"
        else
            tail -n 30 "$log"
            record "$v" "osc_demo $p" FAIL "see $log"
        fi
    done

    log=$WORK/$v-flush_visibility.log
    step "[$v] osc_flush_visibility, 2 ranks, shm"
    scratch_mpirun "$v" 300 2 shm "$proj/osc_flush_visibility" $((4 << 20)) 50 >"$log" 2>&1
    local rc=$?
    if [ $rc = 0 ] && grep -q ' stale=0 ' "$log"; then
        record "$v" "osc_flush_visibility shm" pass "$(grep -m1 'stale=' "$log")"
    else
        tail -n 20 "$log"
        record "$v" "osc_flush_visibility shm" FAIL "exit $rc (2: not carried by btl-ofi); see $log"
    fi

    log=$WORK/$v-pytest.log
    step "[$v] python_tests: conformance + accumulate-lock contention, mpi4py on this Open MPI"
    (
        # shellcheck disable=SC1090
        . "$WORK/env-$v.sh"
        export BTL_OFI_ENV_FILE="$WORK/env-$v.sh"
        cd "$REPO" && "$WORK/venv-$v/bin/python" -m pytest python_tests/test_conformance.py \
            python_tests/test_reliability.py::test_accumulate_lock_contention \
            -q -p no:cacheprovider --timeout-scale 3
    ) >"$log" 2>&1
    rc=$?
    local tally
    tally=$(grep -E '^[0-9]+ (passed|failed)|[0-9]+ passed|[0-9]+ failed' "$log" | tail -n 1)
    tail -n 8 "$log"
    # (" 198 xfailed" is not a failure; " 3 failed" is)
    if [ $rc = 0 ] && [[ "$tally" =~ [0-9]+\ passed ]] && ! [[ "$tally" =~ (^|\ )[0-9]+\ failed ]]; then
        record "$v" "pytest conformance+contention" pass "$tally"
    else
        record "$v" "pytest conformance+contention" FAIL "exit $rc: ${tally:-no tally}; see $log"
    fi
}

# ------------------------------------------------------ --osc-patch checks
# The host namespaces of scripts/check-multihost.sh --setup-only, while they exist.
MH_CONF=
teardown_hosts() {
    [ -n "$MH_CONF" ] && [ -f "$MH_CONF" ] || return 0
    bash "$REPO/scripts/check-multihost.sh" --teardown "$MH_CONF" >/dev/null 2>&1 ||
        echo "check-intree: removing the namespaces of $MH_CONF failed" >&2
    MH_CONF=
}
mh_conf() { sed -n "s/^$1=//p" "$MH_CONF" | head -n1; } # KEY of netns.conf

# mpirun of the build in the hub namespace, the ranks placed by HOSTFILE on the host
# namespaces (their daemons started through scripts/netns-rsh), btl-ofi on
# tcp;ofi_rxm over their veths; only the build's Open MPI in the environment.
hosts_mpirun() { # VARIANT TIMEOUT NP HOSTFILE ARGS...
    local v=$1 to=$2 np=$3 hf=$4 prefix=$WORK/prefix-$1 e subnet iface launch fwd=() comp=()
    shift 4
    subnet=$(mh_conf subnet) iface=$(mh_conf iface)
    if [ "$NODE_BTL" = sm ]; then # PRRTE's names (5.0), ORTE's (4.1)
        launch=(--prtemca plm_ssh_agent "$(mh_conf agent)" --prtemca plm_ssh_no_tree_spawn 1
            --prtemca oob_tcp_if_include "$subnet")
    else
        launch=(--mca plm_rsh_agent "$(mh_conf agent)" --mca plm_rsh_no_tree_spawn 1
            --mca oob_tcp_if_include "$subnet")
    fi
    # shellcheck disable=SC1090
    mapfile -t comp < <(. "$WORK/env-$v.sh" && env | grep '^[A-Z]*_MCA_mca_base_component_path=')
    for e in "${comp[@]}"; do fwd+=(-x "${e%%=*}"); done
    env -i HOME="$WORK" PATH="$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        LD_LIBRARY_PATH="$prefix/lib" "${comp[@]}" BTL_OFI_COMPONENT=ofi \
        NETNS_RSH_MAP="$(mh_conf netns_map)" \
        FI_TCP_IFACE="$iface" FI_SOCKETS_IFACE="$iface" \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        flock "$LOCK" timeout -k 5 "$to" ip netns exec "$(mh_conf hub)" "$prefix/bin/mpirun" \
        -np "$np" --hostfile "$hf" --map-by slot --bind-to none "${launch[@]}" \
        --mca btl_tcp_if_include "$subnet" --mca pml ob1 --mca btl "self,$NODE_BTL,tcp,ofi" \
        --mca osc rdma --mca btl_ofi_provider_include "tcp;ofi_rxm" --mca mpi_yield_when_idle 1 \
        "${fwd[@]}" -x LD_LIBRARY_PATH -x BTL_OFI_COMPONENT -x FI_TCP_IFACE -x FI_SOCKETS_IFACE "$@"
}

# Mixed atomics on one word from both hosts with the patched osc/rdma and
# acc_single_intrinsic: osc_stress (its commute, chain and claim groups: several origins
# on one cell) and osc_soak's fetch-and-add counter (every rank on one word at rank 0,
# whose node also holds two more ranks), 4 ranks 3 + 1.
osc_mixed_atomics() { # VARIANT HOSTFILE PLACEMENT
    local v=$1 hf=$2 where=$3 bin=$WORK/project-$1 seed=$((RANDOM * 32768 + RANDOM))
    intrinsic_run "$v" "$hf" "$where" "osc_stress 3+1, intrinsic" "seed $seed: exact" \
        "$bin/osc_stress" -s "$seed" -e 4 -f create,allocate
    intrinsic_run "$v" "$hf" "$where" "osc_soak fadd 3+1, intrinsic" \
        "40000 fetch-and-adds on one word exact" "$bin/osc_soak" -m fadd -n 40000
}

# One program on 4 ranks with acc_single_intrinsic: its row passes on exit 0.
intrinsic_run() { # VARIANT HOSTFILE PLACEMENT ROW PASS_NOTE PROGRAM ARGS...
    local v=$1 hf=$2 where=$3 row=$4 note=$5 log rc
    shift 5
    log=$WORK/$v-$(basename "$1")-intrinsic.log
    step "[$v] $(basename "$1") ${*:2}, 4 ranks ($where), --mca osc_rdma_acc_single_intrinsic true"
    hosts_mpirun "$v" 900 4 "$hf" --mca osc_rdma_acc_single_intrinsic true "$@" >"$log" 2>&1
    rc=$?
    grep -iE '^(osc_stress|fadd|PASS|FAIL|RESULT)|mismatch' "$log" | head -n 12
    if [ $rc = 0 ]; then
        record "$v" "$row" pass "exit 0, $note"
    else
        tail -n 30 "$log"
        record "$v" "$row" FAIL "exit $rc; see $log"
    fi
}

# scripts/check-multihost.sh --hosts 3 (osc_demo, osc_flush_visibility, osc_stress and the
# Python conformance suite across three host namespaces) on this build with
# acc_single_intrinsic on every mpirun.
osc_suite_across_hosts() { # VARIANT
    local v=$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh dir=$WORK/$1-multihost rc
    step "[$v] scripts/check-multihost.sh --hosts 3 --mca osc_rdma_acc_single_intrinsic true 'tcp;ofi_rxm'"
    rm -rf "$dir" && mkdir -p "$dir"
    env -i HOME="$WORK" PATH="$WORK/prefix-$v/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        BTL_OFI_ENV_FILE="$envf" PYTHON="$WORK/venv-$v/bin/python" \
        bash "$REPO/scripts/check-multihost.sh" --hosts 3 --log-dir "$dir" \
        --mca osc_rdma_acc_single_intrinsic true "tcp;ofi_rxm" >"$dir/run.log" 2>&1
    rc=$?
    sed -n '/summary/,$p' "$dir/run.log"
    if [ $rc = 0 ]; then
        record "$v" "multihost suite, intrinsic" pass \
            "check-multihost.sh exit 0: $(grep -m1 -oE '[0-9]+ passed(, [0-9]+ [a-z]+)*' "$dir/run.log")"
    else
        tail -n 30 "$dir/run.log"
        record "$v" "multihost suite, intrinsic" FAIL "check-multihost.sh exit $rc; see $dir/run.log"
    fi
}

# The checks of a build with upstream/'s osc/rdma patch (see the help above).
check_osc() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh
    local out where obj syms bin log rc start

    step "[$v] is the patched osc/rdma the one this build loads"
    # shellcheck disable=SC2016
    out=$(env -i HOME="$WORK" bash -c '. "$1" && command -v ompi_info &&
        ompi_info --parsable --path prefix && ompi_info | grep "MCA osc: rdma"' _ "$envf" 2>&1)
    echo "$out"
    where=$(sed -n 's/^path:prefix://p' <<<"$out")
    if [ "$where" = "$prefix" ] && grep -qx "$prefix/bin/ompi_info" <<<"$out" &&
        grep -q 'MCA osc: rdma' <<<"$out"; then
        record "$v" "ompi_info: the build's prefix" pass "$prefix/bin/ompi_info, prefix $where, osc rdma listed"
    else
        record "$v" "ompi_info: the build's prefix" FAIL "prefix '${where:-none}' (env file $envf)"
    fi
    obj=$(pkglibdir_of "$v")/mca_osc_rdma.so # 4.1: a DSO; 5.0: in libmpi
    [ -f "$obj" ] || obj=$prefix/lib/libmpi.so
    syms=$(nm "$obj" 2>&1) # .symtab: the patch's table is a static (local) symbol
    if grep -q " $OSC_MARKER\$" <<<"$syms"; then
        record "$v" "osc/rdma carries the patch" pass \
            "$(grep " $OSC_MARKER\$" <<<"$syms" | head -n1 | awk '{ print $2, $3 }') in $obj"
    else
        record "$v" "osc/rdma carries the patch" FAIL "no $OSC_MARKER in $obj"
    fi

    bin=$WORK/osc_rdma_acc_lock-$v
    step "[$v] upstream/test/osc_rdma_acc_lock.c with $prefix/bin/mpicc"
    if ! env -i HOME="$WORK" PATH="$prefix/bin:/usr/bin:/bin" "$prefix/bin/mpicc" -O2 -Wall \
        -o "$bin" "$REPO/upstream/test/osc_rdma_acc_lock.c" >"$WORK/$v-acc_lock-build.log" 2>&1; then
        cat "$WORK/$v-acc_lock-build.log"
        record "$v" "build osc_rdma_acc_lock" FAIL "see $WORK/$v-acc_lock-build.log"
        return
    fi
    cat "$WORK/$v-acc_lock-build.log" # warnings, if any
    out=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$prefix/lib" ldd "$bin" | grep 'libmpi\.so')
    echo "$out"
    if [[ "$out" == *"=> $prefix/lib/libmpi.so"* ]]; then
        record "$v" "osc_rdma_acc_lock links the build" pass "$(sed 's/^[[:space:]]*//; s/ (0x.*//' <<<"$out")"
    else
        record "$v" "osc_rdma_acc_lock links the build" FAIL "${out:-no libmpi}"
    fi

    step "[$v] two host namespaces (scripts/check-multihost.sh --setup-only --hosts 2)"
    local mhdir=$WORK/$v-hosts hf ips
    rm -rf "$mhdir" && mkdir -p "$mhdir"
    trap teardown_hosts EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    MH_CONF=$mhdir/netns.conf
    env -i HOME="$WORK" PATH="$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin" BTL_OFI_ENV_FILE="$envf" \
        bash "$REPO/scripts/check-multihost.sh" --setup-only --hosts 2 --log-dir "$mhdir" \
        >"$mhdir/setup.log" 2>&1
    rc=$?
    cat "$mhdir/setup.log"
    if [ $rc != 0 ] || [ ! -f "$MH_CONF" ]; then
        record "$v" "host namespaces" FAIL "check-multihost.sh --setup-only: exit $rc"
        teardown_hosts
        trap - EXIT INT TERM
        return
    fi
    # 3 ranks on the first host, 1 alone on the second: as target and as origin
    # that one takes osc/rdma's "rank alone on its node" path
    hf=$mhdir/hostfile-3+1
    read -r -a ips <<<"$(mh_conf ips)"
    printf '%s slots=3\n%s slots=1\n' "${ips[0]}" "${ips[1]}" >"$hf"
    where=$(hosts_mpirun "$v" 120 4 "$hf" hostname 2>"$mhdir/hostname.log" | sort | uniq -c |
        awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
    echo "placement: ${where:-none}"
    if [ "$where" = "mh-h1 x3, mh-h2 x1" ]; then
        record "$v" "4 ranks on 2 hosts, 3 + 1" pass "$where"
    else
        cat "$mhdir/hostname.log"
        record "$v" "4 ranks on 2 hosts, 3 + 1" FAIL "placement: ${where:-none}"
    fi

    local intr cases
    for intr in false true; do
        log=$WORK/$v-acc_lock-intrinsic-$intr.log
        step "[$v] osc_rdma_acc_lock $ACC_ITERATIONS, 4 ranks ($where), tcp;ofi_rxm, --mca osc_rdma_acc_single_intrinsic $intr"
        start=$(date +%s)
        hosts_mpirun "$v" 3600 4 "$hf" --mca osc_rdma_acc_single_intrinsic "$intr" \
            "$bin" "$ACC_ITERATIONS" >"$log" 2>&1
        rc=$?
        grep -E '^(osc_rdma_acc_lock|allocate |create |PASSED|FAILED)|FAILED' "$log"
        cases=$(grep -cE '^(allocate|create) .*: exact$' "$log")
        if [ $rc = 0 ] && grep -qx PASSED "$log" && [ "$cases" = 16 ]; then
            record "$v" "acc_lock 3+1, intrinsic $intr" pass \
                "exit 0, PASSED, 16 cases exact ($(($(date +%s) - start))s)"
        else
            tail -n 30 "$log"
            record "$v" "acc_lock 3+1, intrinsic $intr" FAIL \
                "exit $rc, $cases of 16 cases exact; see $log"
        fi
    done
    osc_mixed_atomics "$v" "$hf" "$where"
    teardown_hosts
    trap - EXIT INT TERM
    osc_suite_across_hosts "$v"

    # btl-ofi's atomic counter per operation across two hosts (tools/acc_lock_cost.py
    # makes and removes its own namespaces): 3 BTL atomics per single-element fetch-and-op,
    # accumulate and get-accumulate under lock_all by default, as before the patch; 1 with
    # acc_single_intrinsic
    log=$WORK/$v-acc_lock_cost.log
    step "[$v] tools/acc_lock_cost.py --settings default,intrinsic --epochs lock_all --ops-list fop,acc1,gacc1"
    (
        # shellcheck disable=SC1090
        . "$envf"
        export BTL_OFI_ENV_FILE=$envf
        cd "$REPO" && timeout -k 10 1800 "$WORK/venv-$v/bin/python" tools/acc_lock_cost.py \
            --settings default,intrinsic --epochs lock_all --ops-list fop,acc1,gacc1 --ops 200 --reps 1
    ) >"$log" 2>&1
    rc=$?
    cat "$log"
    local mode want got
    for mode in default intrinsic; do
        want=3.00
        [ "$mode" = default ] || want=1.00
        # | setting | epoch | operation | us/call | puts | gets | atomics | proof reads | CQ reads |
        got=$(awk -F'|' -v m="$mode" '{ for (i = 2; i <= 8; i++) gsub(/ /, "", $i) }
            $2 == m && $3 == "lock_all" { printf "%s%s %s", sep, $4, $8; sep = ", " }' "$log")
        if [ $rc = 0 ] && [ "$got" = "fop $want, acc1 $want, gacc1 $want" ]; then
            record "$v" "acc_lock_cost $mode" pass "lock_all BTL atomics per call: $got"
        else
            record "$v" "acc_lock_cost $mode" FAIL \
                "exit $rc; lock_all BTL atomics per call: ${got:-none} (want $want each); see $log"
        fi
    done

    step "[$v] to use this build: . $envf  (or BTL_OFI_ENV_FILE=$envf, python $WORK/venv-$v/bin/python)"
    sed 's/^/    /' "$envf"
}

# -------------------------------------------------------------------- main
START=$(date +%s)
fetch_source || exit 2
apply_osc_patch
if [ "$SOURCE_ONLY" = 1 ]; then
    echo "check-intree: --source-only: Open MPI $OMPI_DEB_VERSION source in $OMPI_SRC"
    exit 0
fi
[ -z "$PATCH_HASH" ] || record source "upstream/$OSC_SERIES patches applied" pass \
    "$(basename -a "${OSC_PATCHES[@]}" | paste -sd' ' -) ($PATCH_HASH)"
prepare_source || die "preparing $OMPI_SRC failed (log: $WORK/autogen.log)"
for v in "${VARIANTS[@]}"; do
    if [ "$v" = badofi ]; then
        check_badofi
        continue
    fi
    if ! build_ompi "$v"; then
        record "$v" "build Open MPI" FAIL "see $WORK/build-$v/*.log"
        continue
    fi
    if ! build_clients "$v"; then
        record "$v" "build harness + mpi4py" FAIL "see $WORK/project-$v, $WORK/venv-$v"
        continue
    fi
    if [ "$OSC_PATCH" = 1 ]; then
        check_component "$v"
        check_osc "$v"
    else
        check_variant "$v"
    fi
done

printf '\n== check-intree summary (btl-ofi %s, btl_ofi/ %s, Open MPI %s from Debian source%s, %ss) ==\n' \
    "$BTL_OFI_VERSION" "$BTL_OFI_HASH" "$OMPI_DEB_VERSION" \
    "${PATCH_HASH:+ + upstream/$OSC_SERIES osc/rdma patch $PATCH_HASH, in $WORK}" "$(($(date +%s) - START))"
printf '%s\n' "${SUMMARY[@]}"
if [ "$FAILED" = 0 ]; then
    echo "check-intree: all passed"
    exit 0
fi
echo "check-intree: FAILED"
exit 1
