#!/usr/bin/env bash
# btl-ofi, first command: install every dependency (as root), build and install
# the component, and run a short one-sided demo through it.
#
# Platforms: Debian 12 (Open MPI 4.1, libfabric 1.17), Debian 13 (Open MPI 5.0,
# libfabric 2.x) and Debian unstable (Open MPI 6.0 release candidates). On
# Open MPI 5 and 6 Debian's devel headers are incomplete: the matching Open MPI
# source is fetched with apt-get source (a deb-src entry for the mirror apt
# already uses is added if needed) and kept in $BTL_OFI_CACHE, by version.
#
#   PREFIX         install prefix (default /usr/local)
#   VENV           Python virtual environment for the tests (default ./.venv)
#   BTL_OFI_CACHE  cache of downloaded sources (default /var/cache/btl-ofi)
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
VENV=${VENV:-$PWD/.venv}
CACHE=${BTL_OFI_CACHE:-/var/cache/btl-ofi}
# shellcheck source=scripts/apt-sources.sh
. scripts/apt-sources.sh

step() { printf '\n==> %s\n' "$*"; }
die() { echo "setup: $*" >&2; exit 2; }

# shellcheck disable=SC1091
. /etc/os-release
case "${VERSION_CODENAME:-}" in
bookworm) PLATFORM="Debian 12" ;;
trixie) PLATFORM="Debian 13" ;;
forky | sid) PLATFORM="Debian unstable" ;;
*) die "unsupported platform '${PRETTY_NAME:-unknown}': Debian 12, 13 or unstable" ;;
esac
# The suite apt knows this system by (unstable's os-release names the next release).
SUITE=$VERSION_CODENAME
[ "$PLATFORM" = "Debian unstable" ] && SUITE=sid

# What the tests call besides Open MPI and libfabric (fi_info): gdb, the stacks of a
# launch that times out (python_tests/launcher.py, dump_rank_stacks); iproute2 (ip, tc,
# bridge) and procps (sysctl), the host namespaces of scripts/check-multihost.sh that
# the multi-host tests run in; gcc, the C tools some tests build (tools/stale_key.c);
# and the scripts' lint, shellcheck (python_tests/test_scripts_lint.py).
PACKAGES=(openmpi-bin libopenmpi-dev libfabric-dev libfabric-bin
    autoconf automake libtool pkg-config make gcc libc6-dev python3 python3-venv
    gdb iproute2 procps shellcheck)
if [ "$PLATFORM" = "Debian 12" ]; then
    # Python packages come from PyPI into the venv.
    PACKAGES+=(python3-dev)
else
    # Open MPI 5's headers need these; Python packages come from Debian (pip
    # inside such a root does not see the host's package index).
    PACKAGES+=(libpmix-dev libhwloc-dev libevent-dev dpkg-dev
        python3-mpi4py python3-numpy python3-pytest python3-cffi python3-matplotlib
        python3-dev python3-setuptools)
fi

step "$PLATFORM: Debian packages (Open MPI, libfabric, autotools, Python)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null

# Open MPI 5/6 on Debian: the headers libopenmpi-dev leaves out come from the
# same version's source, fetched only when configure says it needs them.
#   fetch_ompi_source VERSION SUITE   prints the tree's path; 1 if not served
fetch_ompi_source() {
    local version=$1 suite=$2 src_dir
    src_dir=$CACHE/openmpi-src/$version
    if [ ! -f "$src_dir/.complete" ]; then
        step "Open MPI $version source (apt-get source, $suite), for the headers Debian does not install" >&2
        rm -rf "$src_dir"
        if ! apt_source_ompi "$src_dir" "$version" "$suite" >/dev/null; then
            echo "setup: apt-get source openmpi=$version failed: this machine's Debian mirror does not serve it" >&2
            rm -rf "$src_dir"
            return 1
        fi
        touch "$src_dir/.complete"
    fi
    find "$src_dir" -mindepth 1 -maxdepth 1 -type d -name 'openmpi-*' | head -n1
}

# The newest Open MPI source Debian 13 has (apt-cache on a trixie deb-src entry).
trixie_ompi_version() {
    apt-cache showsrc openmpi 2>/dev/null | awk '/^Version:/ { print $2 }' |
        while read -r v; do dpkg --compare-versions "$v" lt 6 && echo "$v"; done |
        sort -V | tail -n1
}

step "Python environment in $VENV (mpi4py, numpy, cffi, pytest; matplotlib for the benchmarks)"
if [ "$PLATFORM" = "Debian 12" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -r python_tests/requirements.txt -r osc_harness/requirements.txt
else
    python3 -m venv --system-site-packages "$VENV"
    "$VENV/bin/python" -c 'import mpi4py, numpy, cffi, pytest, matplotlib, setuptools' ||
        die "Debian's python3 packages are not importable from $VENV"
fi

step "Build and install btl-ofi into $PREFIX"
autoreconf -fi >/dev/null 2>&1
if ! ./configure -q --prefix="$PREFIX"; then
    grep -q "installed headers are incomplete" config.log || die "configure failed (config.log)"
    version=$(ompi_source_version)
    if tree=$(fetch_ompi_source "$version" "$SUITE"); then
        [ -n "$tree" ] || die "no openmpi-* source tree in $CACHE/openmpi-src/$version"
        ./configure -q --prefix="$PREFIX" --with-ompi-source="$tree"
    elif [ "$PLATFORM" = "Debian unstable" ]; then
        # A release candidate's source may be gone from the mirror while its
        # binaries stay. The four missing headers (pthread mutex, thread, TSD
        # and the Linux timer) declare the same types in 5.0.7 and 6.0 (NOTES
        # section 12): take just those from Debian 13's Open MPI source.
        ensure_deb_src trixie && apt-get update -qq
        other=$(trixie_ompi_version)
        [ -n "$other" ] || die "no Open MPI source in Debian 13's deb-src either"
        echo "setup: WARNING: Open MPI $version's source is not served; taking only the" \
            "headers libopenmpi-dev lacks from Open MPI $other (--with-ompi-headers-from)" >&2
        tree=$(fetch_ompi_source "$other" trixie) || die "apt-get source openmpi=$other failed"
        ./configure -q --prefix="$PREFIX" --with-ompi-headers-from="$tree"
    else
        die "configure needs Open MPI $version's source (above)"
    fi
fi
make -s -j"$(nproc)"
make -s install >/dev/null

step "Demo: 2 ranks, one-sided operations through btl-ofi on the shm provider"
# shellcheck disable=SC1091
. "$PREFIX/share/btl-ofi/btl-ofi-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi_info | grep "MCA btl: $BTL_OFI_COMPONENT "
mpirun -np 2 --mca pml ob1 --mca btl "self,$BTL_OFI_NODE_BTL,$BTL_OFI_COMPONENT" --mca osc rdma \
    --mca "btl_${BTL_OFI_COMPONENT}_provider_include" shm "$PREFIX/libexec/btl-ofi/osc_demo"
