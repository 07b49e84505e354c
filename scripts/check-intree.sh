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
#
# Per variant, with ONLY the scratch Open MPI (its own mpirun, libraries and
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
# Exit: 0 all passed, 1 a check failed, 2 usage or a build step failed.
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

WORK=/var/tmp/btl-ofi-intree-$OMPI_UPSTREAM
JOBS=$(nproc)
REBUILD=0
VARIANTS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --work) WORK=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --rebuild) REBUILD=1 ;;
    -h | --help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    dso | static | badofi) VARIANTS+=("$1") ;;
    *) echo "check-intree: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
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
    {
        echo "# Open MPI $OMPI_DEB_VERSION built from source with btl-ofi in-tree ($v): $prefix"
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

check_variant() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 proj=$WORK/project-$1 line log
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

    local p
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

# -------------------------------------------------------------------- main
START=$(date +%s)
fetch_source || exit 2
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
    check_variant "$v"
done

printf '\n== check-intree summary (btl-ofi %s, btl_ofi/ %s, Open MPI %s from Debian source, %ss) ==\n' \
    "$BTL_OFI_VERSION" "$BTL_OFI_HASH" "$OMPI_DEB_VERSION" "$(($(date +%s) - START))"
printf '%s\n' "${SUMMARY[@]}"
if [ "$FAILED" = 0 ]; then
    echo "check-intree: all passed"
    exit 0
fi
echo "check-intree: FAILED"
exit 1
