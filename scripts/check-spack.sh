#!/usr/bin/env bash
# btl-ofi's Spack recipe (packaging/spack) with a real Spack: the release tarball
# served from a source mirror, the Debian's Open MPI, libfabric, pkgconf and make
# registered as externals (spack external find), `spack install btl-ofi`, then
# `spack load btl-ofi` and mpirun -np 2 --mca osc rdma osc_demo through it (its
# counters must move).
#
#   scripts/check-spack.sh [--suite SUITE] TARBALL
#
# Spack: $SPACK_ROOT, else the newest /var/cache/btl-ofi/spack-*/ (a checkout or
# `git archive` of github.com/spack/spack; this machine reaches no git host, so
# one is put there by hand). Without one: exit 77, saying how to get one. Spack's
# concretizer, clingo, comes from PyPI into a venv beside it. Everything Spack
# writes (configuration, stage, install tree) goes to a temporary directory; the
# Spack tree is only read. In a root, clingo comes as wheels fetched by the host. With --suite (trixie): in a throwaway overlay of the
# Debian root made for building (scripts/debroot.sh --purpose build), where
# Debian's Open MPI 5.0 lacks headers and the recipe is given the Open MPI
# source of that version (BTL_OFI_OMPI_SOURCE, fetched with apt-get source as
# check-tarball.sh does). Needs root for --suite.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
SUITE=
if [ "${1:-}" = --suite ]; then SUITE=$2; shift 2; fi
{ [ $# -eq 1 ] && [ -f "$1" ]; } ||
    { echo "usage: check-spack.sh [--suite SUITE] TARBALL" >&2; exit 2; }

find_spack() {
    if [ -n "${SPACK_ROOT:-}" ]; then
        echo "$SPACK_ROOT"
        return
    fi
    local d
    for d in $(ls -dt /var/cache/btl-ofi/spack-*/ 2>/dev/null || true); do
        if [ -x "$d/bin/spack" ]; then
            echo "${d%/}"
            return 0
        fi
    done
}

if [ -n "$SUITE" ] && [ "${BTL_OFI_CHECK_SPACK_INSIDE:-}" != 1 ]; then
    spack_root=$(find_spack)
    [ -n "$spack_root" ] || { echo "check-spack: SKIP: no Spack (set SPACK_ROOT, or put a" \
        "checkout of https://github.com/spack/spack in /var/cache/btl-ofi/spack-<commit>)"; exit 77; }
    # clingo for the root's Python, fetched here: the root's pip does not trust this
    # machine's PyPI proxy, and Debian packages no clingo
    wheels=/var/cache/btl-ofi/spack-wheels
    for py in 3.12 3.13; do
        ls "$wheels"/clingo-*-cp${py/./}-*.whl >/dev/null 2>&1 ||
            python3 -m pip download -q clingo --only-binary=:all: --python-version "$py" \
                --implementation cp --abi "cp${py/./}" --platform manylinux_2_28_x86_64 \
                --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$wheels" \
                2> >(grep -v '^WARNING: Location' >&2)
    done
    exec bash "$HERE/debroot.sh" --suite "$SUITE" --purpose build \
        --copy-in "$1" --copy-in "$HERE/check-spack.sh" --copy-in "$HERE/apt-sources.sh" \
        --copy-in "$REPO/packaging/spack" --copy-in "$spack_root" --copy-in "$wheels" \
        scratch /usr/bin/env BTL_OFI_CHECK_SPACK_INSIDE=1 \
        SPACK_ROOT="/tmp/in/$(basename "$spack_root")" BTL_OFI_SPACK_REPO=/tmp/in/spack \
        BTL_OFI_SPACK_WHEELS=/tmp/in/spack-wheels \
        bash /tmp/in/check-spack.sh "/tmp/in/$(basename "$1")"
fi

SPACK_ROOT=$(find_spack)
[ -n "$SPACK_ROOT" ] || { echo "check-spack: SKIP: no Spack (set SPACK_ROOT, or put a checkout" \
    "of https://github.com/spack/spack in /var/cache/btl-ofi/spack-<commit>)"; exit 77; }
RECIPES=${BTL_OFI_SPACK_REPO:-$REPO/packaging/spack}
tarball=$(readlink -f "$1")
name=$(basename "$tarball")
version=${name#btl-ofi-}
version=${version%.tar.gz}
work=$(mktemp -d "${TMPDIR:-/tmp}/btl-ofi-spack.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n--> %s\n' "$*"; }
. /etc/os-release

# clingo from PyPI for the Python that runs Spack (a venv kept beside the Spack tree)
venv=${BTL_OFI_SPACK_VENV:-/var/cache/btl-ofi/spack-venv-$VERSION_CODENAME}
if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null ||
   ! command -v g++ >/dev/null; then
    # Spack runs on Python; its compiler entry wants a C++ compiler beside the C one
    step "python3, its venv module and g++, from Debian"
    apt-get install -y -qq python3 python3-venv g++ >/dev/null
fi
if ! "$venv/bin/python" -c 'import clingo' 2>/dev/null; then
    step "clingo (Spack's concretizer) from PyPI into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q ${BTL_OFI_SPACK_WHEELS:+--no-index --find-links "$BTL_OFI_SPACK_WHEELS"} clingo
fi
export SPACK_PYTHON=$venv/bin/python
export SPACK_USER_CONFIG_PATH=$work/config SPACK_USER_CACHE_PATH=$work/cache
spack=("$SPACK_ROOT/bin/spack")

step "$PRETTY_NAME, Spack $("${spack[@]}" --version), $(ompi_info --version | head -n1)"
mkdir -p "$work/config" "$work/mirror/btl-ofi"
cp "$tarball" "$work/mirror/btl-ofi/btl-ofi-$version.tar.gz"
cat >"$work/config/config.yaml" <<EOF
config:
  install_tree:
    root: $work/opt
  build_stage: [$work/stage]
  source_cache: $work/source-cache
  misc_cache: $work/misc-cache
EOF
cat >"$work/config/repos.yaml" <<EOF
repos: [$RECIPES]
EOF
cat >"$work/config/mirrors.yaml" <<EOF
mirrors:
  btl-ofi-release: file://localhost$work/mirror
EOF
"${spack[@]}" compiler find --scope user >/dev/null
"${spack[@]}" external find --scope user --not-buildable openmpi libfabric pkgconf gmake |
    sed -n '/^--/,$p'

if ompi_info --version | grep -q "v5\."; then
    # Debian 13's libopenmpi-dev lacks headers (NOTES.txt section 14): the source
    . "$(dirname "$0")/apt-sources.sh"
    step "apt-get source openmpi=$(ompi_source_version) for BTL_OFI_OMPI_SOURCE (headers libopenmpi-dev lacks)"
    BTL_OFI_OMPI_SOURCE=$(apt_source_ompi "$work/src")
    export BTL_OFI_OMPI_SOURCE
fi

step "spack spec btl-ofi@$version"
"${spack[@]}" spec -I "btl-ofi@$version"
step "spack install --no-checksum btl-ofi@$version (from the mirror: no published sha256 for a tarball of one's own)"
"${spack[@]}" install --no-checksum "btl-ofi@$version" >"$work/install.log" 2>&1 ||
    { tail -n 40 "$work/install.log"; echo "check-spack: spack install failed"; exit 1; }
tail -n 4 "$work/install.log"

step "spack load btl-ofi; mpirun -np 2 --mca osc rdma osc_demo"
eval "$("${spack[@]}" load --sh "btl-ofi@$version")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
prefix=$("${spack[@]}" location -i "btl-ofi@$version")
# shellcheck disable=SC2154 # set by the eval of spack load above
case ":$OMPI_MCA_mca_base_component_path:" in
*":$prefix/lib/btl-ofi:"*) echo "   component path (from spack load): $OMPI_MCA_mca_base_component_path" ;;
*) echo "check-spack: spack load did not give Open MPI $prefix/lib/btl-ofi"; exit 1 ;;
esac
ompi_info | grep "MCA btl: ofirma" || { echo "check-spack: ompi_info does not list btl/ofirma"; exit 1; }
flock /tmp/btl-ofi-mpi.lock mpirun -np 2 --mca osc rdma osc_demo | tee "$work/demo.txt"
grep -q '^PASSED' "$work/demo.txt" || { echo "check-spack: osc_demo did not pass"; exit 1; }
awk '/^(put|get|accumulate|fetch_and_op|compare_and_swap) / && $NF > 0 { moved++ } END { exit !(moved >= 4) }' \
    "$work/demo.txt" || { echo "check-spack: btl-ofi's counters did not move"; exit 1; }
echo "check-spack: PASSED ($name with Spack $("${spack[@]}" --version) on $PRETTY_NAME)"
