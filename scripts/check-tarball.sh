#!/usr/bin/env bash
# btl-ofi's release tarball, built the way its README says: unpacked anywhere,
# ./configure --prefix=DIR && make && make install against the Debian's own
# Open MPI, then a 2-rank osc_demo through the installed component.
#
#   scripts/check-tarball.sh [--suite SUITE] TARBALL
#
# Without --suite: on this machine, into a temporary prefix. With --suite
# (trixie, sid): in a throwaway overlay of a Debian root made for building
# (scripts/debroot.sh --purpose build, cached as debroot-SUITE-build). Where
# Debian's libopenmpi-dev lacks headers (Open MPI 5), configure says so and
# the Open MPI source of the installed version is fetched with apt-get source,
# as a user would (a deb-src entry for the mirror apt uses is added), and
# given with --with-ompi-source (NOTES.txt section 14). Needs root for --suite.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=
if [ "${1:-}" = --suite ]; then SUITE=$2; shift 2; fi
{ [ $# -eq 1 ] && [ -f "$1" ]; } ||
    { echo "usage: check-tarball.sh [--suite SUITE] TARBALL" >&2; exit 2; }
if [ -n "$SUITE" ] && [ "${BTL_OFI_CHECK_TARBALL_INSIDE:-}" != 1 ]; then
    exec bash "$HERE/debroot.sh" --suite "$SUITE" --purpose build \
        --copy-in "$1" --copy-in "$HERE/check-tarball.sh" --copy-in "$HERE/apt-sources.sh" \
        scratch /usr/bin/env BTL_OFI_CHECK_TARBALL_INSIDE=1 \
        bash /tmp/in/check-tarball.sh "/tmp/in/$(basename "$1")"
fi

tarball=$(readlink -f "$1")
work=$(mktemp -d "${TMPDIR:-/tmp}/btl-ofi-tarball.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { printf '\n--> %s\n' "$*"; }
. /etc/os-release
step "$PRETTY_NAME, $(ompi_info --version | head -n1): $(basename "$tarball") -> ./configure --prefix=$prefix && make && make install"
tar -xzf "$tarball" -C "$work"
cd "$work"/btl-ofi-*/
if ! ./configure -q --prefix="$prefix" >"$work/configure.log" 2>&1; then
    grep -q "installed headers are incomplete" config.log || { tail "$work/configure.log"; exit 1; }
    grep -m1 "installed headers are incomplete" "$work/configure.log" | cut -c1-200
    . "$HERE/apt-sources.sh"
    step "apt-get source openmpi=$(ompi_source_version) (the headers libopenmpi-dev lacks), then --with-ompi-source"
    tree=$(apt_source_ompi "$work/src")
    ./configure -q --prefix="$prefix" --with-ompi-source="$tree" >"$work/configure.log" 2>&1 ||
        { tail "$work/configure.log"; exit 1; }
fi
sed -n '/^btl-ofi /,$p' "$work/configure.log"
make -s -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log"; exit 1; }
make -s install >/dev/null
find "$prefix" -name 'mca_btl_*.so'

step "osc_demo through the installed component (its env file names the directory)"
. "$prefix/share/btl-ofi/btl-ofi-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi_info | grep "MCA btl: $BTL_OFI_COMPONENT "
flock /tmp/btl-ofi-mpi.lock mpirun -np 2 --mca osc rdma --mca btl "self,$BTL_OFI_NODE_BTL,$BTL_OFI_COMPONENT" \
    --mca "btl_${BTL_OFI_COMPONENT}_provider_include" shm "$prefix/libexec/btl-ofi/osc_demo" | tee "$work/demo.txt"
grep -q '^PASSED' "$work/demo.txt"
echo "check-tarball: PASSED ($(basename "$tarball") on $PRETTY_NAME)"
