#!/usr/bin/env bash
# btl-ofi on another Debian: make a Debian root with debootstrap and run
# commands in it, on a copy of this checkout.
#
#   scripts/debroot.sh [--suite SUITE] [--root DIR] create
#   scripts/debroot.sh [--suite SUITE] [--root DIR] run CMD [ARG...]
#   scripts/debroot.sh [--suite SUITE] [--root DIR] shell
#   scripts/debroot.sh [--suite SUITE] [--root DIR] info
#   scripts/debroot.sh [--suite SUITE] [--root DIR] remove
#   scripts/debroot.sh --purpose pkg [--suite SUITE] [--copy-in FILE]... scratch CMD [ARG...]
#
#   SUITE    trixie (Debian 13: Open MPI 5.0.x, libfabric 2.x; the default),
#            sid (Debian unstable: Open MPI 6.0 release candidates) or
#            bookworm (Debian 12; with --purpose pkg)
#   PURPOSE  test (the default): a root with Debian's Open MPI, libfabric and
#            python3 packages, for setup.sh and test.sh; pkg: debootstrap's
#            minimal base and nothing else, a clean system to install btl-ofi's
#            Debian package on; build: Open MPI, libfabric and what a release
#            tarball's build needs (a compiler, make, pkg-config, dpkg-dev),
#            nothing of the repository's own tools
#   DIR      where the root lives (default /var/cache/btl-ofi/debroot-SUITE,
#            or debroot-SUITE-PURPOSE for another purpose than test)
#
# create   debootstrap --variant=minbase from the Debian mirror this machine's
#          apt already uses (read from its sources), then Debian's Open MPI,
#          libfabric and python3 packages. The root is kept and reused; it is
#          made again when it is missing, unfinished, or its package list
#          changed. About a minute.
# run      create if needed, copy this checkout to /btl-ofi in the root (its
#          tracked and untracked files, not what .gitignore lists, so builds
#          made inside persist between runs) and run CMD there as root. The
#          mounts CMD needs (/proc, /sys, /dev, /dev/pts, a tmpfs on /dev/shm,
#          the host's MPI lock file, and read-only the MPICH and Intel MPI of
#          scripts/install-mpis.sh when the host has them, for compare.py --net)
#          exist only in a mount namespace of its own, so they vanish with it
#          whichever way it ends.
# shell    the same, an interactive shell
# scratch  create if needed, copy each --copy-in FILE to /tmp/in/ of a throwaway
#          copy of the root (an overlay: the cached root is never changed) and
#          run CMD there as root, in /tmp/in (the checkout is not copied: the
#          system stays as a user's would be)
# info     the Debian, Open MPI and libfabric versions in the root
# remove   delete the root (refused while anything is mounted below it)
#
# Exit status: CMD's for run; 2 for a usage or setup error. Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=scripts/apt-sources.sh
. "$HERE/apt-sources.sh"

SUITE=trixie
ROOT=
PURPOSE='test'
COPY_IN=()
while [ $# -gt 0 ]; do
    case "$1" in
    --suite) SUITE=$2; shift 2 ;;
    --root) ROOT=$2; shift 2 ;;
    --purpose) PURPOSE=$2; shift 2 ;;
    --copy-in) COPY_IN+=("$(readlink -f "$2")"); shift 2 ;;
    -h | --help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
    esac
done
ACTION=${1:-}
[ $# -gt 0 ] && shift

die() { echo "debroot: $*" >&2; exit 2; }
case "$PURPOSE/$SUITE" in
test/trixie | test/sid | pkg/* | build/*) ;;
*) die "unknown suite '$SUITE' for --purpose $PURPOSE (trixie or sid; bookworm with --purpose pkg)" ;;
esac
if [ -z "$ROOT" ]; then
    ROOT=/var/cache/btl-ofi/debroot-$SUITE
    [ "$PURPOSE" = test ] || ROOT=$ROOT-$PURPOSE
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"

# What the root holds besides debootstrap's minimal base; setup.sh inside adds
# the build tools it needs, as it does on the host. iproute2 and procps (ip,
# sysctl): the network namespaces of compare.py --net and check-multihost.sh.
PACKAGES=(ca-certificates openmpi-bin libopenmpi-dev libfabric-dev libfabric-bin iproute2 procps
    python3-mpi4py python3-numpy python3-pytest python3-cffi)
# A clean system for a package to be installed on: nothing beyond the base.
[ "$PURPOSE" = pkg ] && PACKAGES=()
# A user's build of the release tarball (and of the Debian package).
[ "$PURPOSE" = build ] && PACKAGES=(ca-certificates openmpi-bin libopenmpi-dev libfabric-dev
    libfabric-bin libpmix-dev libhwloc-dev libevent-dev gcc libc6-dev make pkg-config dpkg-dev
    debhelper)
STAMP_FILE=etc/btl-ofi-debroot
STAMP="suite=$SUITE packages=${PACKAGES[*]}"
LOCK=/tmp/btl-ofi-mpi.lock
MPI_CACHE=${BTL_OFI_MPI_CACHE:-/var/cache/btl-ofi/mpis} # scripts/install-mpis.sh
WORKDIR=/btl-ofi

host_tools() {
    local missing=()
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v rsync >/dev/null || missing+=(rsync)
    command -v unshare >/dev/null || missing+=(util-linux)
    [ ${#missing[@]} -eq 0 ] && return 0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}

mounted_below() { findmnt -rn -o TARGET | awk -v r="$1" 'index($0, r "/") == 1 || $0 == r'; }

# rm -rf only a root nothing is mounted in, and never across file systems.
delete_root() {
    local dir=$1 mounts
    [ -e "$dir" ] || return 0
    mounts=$(mounted_below "$dir")
    [ -z "$mounts" ] || die "refusing to delete $dir: still mounted there: $mounts"
    rm -rf --one-file-system "$dir" || die "could not delete $dir"
}

# in_root DIR CMD...: CMD inside DIR, in a private mount namespace. With
# SCRATCH=DIR2 (an empty directory), CMD sees an overlay of DIR whose changes
# go to DIR2, and the files of COPY_IN are copied to its /tmp/in first.
SCRATCH=
in_root() {
    local dir=$1
    shift
    touch "$LOCK"
    unshare --mount --propagation private -- /bin/bash -c '
        set -e
        r=$1 lock=$2 workdir=$3 scratch=$4 copy_in=$5 mpis=$6; shift 6
        if [ -n "$scratch" ]; then
            mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
            mount -t overlay overlay \
                -o "lowerdir=$r,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
            r=$scratch/merged
            if [ -n "$copy_in" ]; then
                mkdir -p "$r/tmp/in"
                printf "%s\n" "$copy_in" | while IFS= read -r f; do cp -r "$f" "$r/tmp/in/"; done
            fi
        fi
        # the root a mount point of its own: `ip netns exec` (compare.py --net) needs
        # "/" to be one to make it a slave
        mount --bind "$r" "$r"
        mount -t proc proc "$r/proc"
        mount --rbind /sys "$r/sys"
        mount --rbind /dev "$r/dev"
        mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
        mkdir -p "$r/tmp" && touch "$r$lock" && mount --bind "$lock" "$r$lock"
        if [ -d "$mpis" ]; then
            mkdir -p "$r$mpis" && mount --bind -o ro "$mpis" "$r$mpis"
        fi
        cd "$r"
        exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            CI="${CI:-}" PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-}" BTL_OFI_MPI_CACHE="$mpis" \
            /bin/sh -c "cd \"$workdir\" 2>/dev/null || cd /; exec \"\$@\"" sh "$@"
    ' debroot "$dir" "$LOCK" "$WORKDIR" "$SCRATCH" "$(printf '%s\n' "${COPY_IN[@]}")" \
        "$([ -n "$SCRATCH" ] || echo "$MPI_CACHE")" "$@"
}

create() {
    local partial=$ROOT.partial mirror
    if [ -f "$ROOT/$STAMP_FILE" ] && [ "$(cat "$ROOT/$STAMP_FILE")" = "$STAMP" ]; then
        return 0
    fi
    host_tools
    mirror=$(debian_mirror) || die "no Debian mirror in this machine's apt sources"
    delete_root "$ROOT"
    delete_root "$partial"
    mkdir -p "$(dirname "$ROOT")" || die "cannot create $(dirname "$ROOT")"
    echo "debroot: debootstrap --variant=minbase $SUITE (mirror from this machine's apt sources)"
    debootstrap --variant=minbase "$SUITE" "$partial" "$mirror" >"$partial.log" 2>&1 ||
        { tail -n 20 "$partial.log" >&2; die "debootstrap $SUITE failed (log: $partial.log)"; }
    cp /etc/resolv.conf "$partial/etc/resolv.conf" 2>/dev/null || true
    if [ "$SUITE" = sid ]; then
        # unstable's Release file is valid for a week only; a mirror that is a
        # dated snapshot (as this machine's may be) serves an expired one
        echo 'Acquire::Check-Valid-Until "false";' >"$partial/etc/apt/apt.conf.d/99btl-ofi-snapshot"
    fi
    if [ ${#PACKAGES[@]} -gt 0 ]; then
        echo "debroot: apt-get install ${PACKAGES[*]}"
        in_root "$partial" /bin/sh -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
            apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} >/dev/null" ||
            die "apt-get install in the $SUITE root failed"
    fi
    echo "$STAMP" >"$partial/$STAMP_FILE"
    mv "$partial" "$ROOT" || die "cannot move $partial to $ROOT"
    rm -f "$partial.log"
}

# This checkout's files into the root; ignored files (builds) there are kept.
# Only files whose content differs are copied, and they get the time of the
# copy, not the checkout's: a build left in the root from another checkout can
# be newer than a changed source's own time, and make would keep its stale
# objects (seen: a link against an older bench_sizes.o).
sync_checkout() {
    host_tools
    mkdir -p "$ROOT$WORKDIR"
    rsync -rlpD --checksum --delete --exclude=/.git --filter=':- .gitignore' \
        "$REPO/" "$ROOT$WORKDIR/" ||
        die "copying the checkout into the root failed"
}

case "$ACTION" in
create) create ;;
run)
    [ $# -gt 0 ] || die "run needs a command"
    create
    sync_checkout
    in_root "$ROOT" "$@"
    exit $?
    ;;
scratch)
    [ $# -gt 0 ] || die "scratch needs a command"
    create
    WORKDIR=/tmp/in
    SCRATCH=$(mktemp -d /var/cache/btl-ofi/scratch.XXXXXX) || die "cannot make a scratch directory"
    rc=0
    in_root "$ROOT" "$@" || rc=$?
    # the overlay was mounted in in_root's namespace only: gone with it
    delete_root "$SCRATCH"
    exit $rc
    ;;
shell)
    create
    sync_checkout
    in_root "$ROOT" /bin/bash -l
    ;;
info)
    create
    in_root "$ROOT" /bin/sh -c 'printf "Debian %s; " "$(cat /etc/debian_version)";
        ompi_info --version | head -n1; fi_info --version | head -n1'
    ;;
remove) delete_root "$ROOT" ;;
*) die "usage: debroot.sh [--suite SUITE] [--purpose test|pkg] [--root DIR] [--copy-in FILE]... create|run CMD...|scratch CMD...|shell|info|remove" ;;
esac
