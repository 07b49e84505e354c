# shellcheck shell=bash
# btl-ofi: the source and build steps of scripts/check-intree.sh (sourced by it, not run;
# only definitions): Debian's Open MPI source fetched, upstream/'s osc/rdma patches
# applied (--osc-patch), btl_ofi/ copied over opal/mca/btl/ofi, the badofi configure
# check, each variant's Open MPI, and the project's programs, mpi4py and env file against
# it. They use check-intree.sh's settings (WORK, OMPI_SRC, STAMP, OSC_PATCHES, OSC_MARKER,
# ...) and helpers (step, die, record, run, component_files, pkglibdir_of).

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
# The marker (OSC_MARKER): the table the patches add, absent before and present after.
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
    # shellcheck disable=SC2153 # STAMP: check-intree.sh's
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
        "$PMIX_FLAG" \
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
