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
cd "$(dirname "$0")/.." || exit 2
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
        # shellcheck disable=SC2010 # ls sorts all operands as one list and skips an
        # unmatched pattern: the hash below depends on both (the names are plain)
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

# The marker of upstream/'s osc/rdma patches: the table they add, absent before and present after.
OSC_MARKER=ompi_osc_rdma_op_support
# The host namespaces of scripts/check-multihost.sh --setup-only, while they exist.
MH_CONF=
# Fetching, patching and building (intree-build.sh); the checks of --osc-patch (intree-osc.sh).
# shellcheck source=scripts/intree-build.sh
. scripts/intree-build.sh
# shellcheck source=scripts/intree-osc.sh
. scripts/intree-osc.sh

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
    local v=$1 to=$2 np=$3 prov=$4 cpath; shift 4
    # the component paths as the env file gives them (Open MPI 5's prterun
    # would hand the ranks PMIx's plugin directory instead of Open MPI's)
    # shellcheck disable=SC1090
    mapfile -t cpath < <(. "$WORK/env-$v.sh" && env | grep '^[A-Z]*_MCA_mca_base_component_path=')
    env -i HOME="$WORK" PATH="$WORK/prefix-$v/bin:/usr/bin:/bin" \
        LD_LIBRARY_PATH="$WORK/prefix-$v/lib" BTL_OFI_COMPONENT=ofi \
        "${cpath[@]}" \
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
        if [ -f "$so" ]; then
            record "$v" "component is a DSO" pass "$so"
        else
            record "$v" "component is a DSO" FAIL "no $so"
        fi
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
