#!/usr/bin/env bash
# btl-ofi's Debian package on a clean Debian: install it the way a user does,
# run a one-sided program through it, remove it, and check that nothing is left.
#
#   scripts/check-deb.sh [--suite SUITE] DEB
#
# DEB    openmpi-btl-ofirma_VERSION_ARCH.deb (packaging/build-deb.sh)
# SUITE  the Debian it was built on: bookworm (the default) or trixie
#
# Runs in a throwaway overlay of a minimal Debian root (scripts/debroot.sh
# --purpose pkg scratch; the root is cached in /var/cache/btl-ofi/debroot-SUITE-pkg),
# from the mirror this machine's apt uses. Inside, as a user would:
#   1. apt install ./DEB (pulls in Open MPI and libfabric)
#   2. ompi_info lists btl ofirma; as an ordinary user, with an empty environment,
#      no environment file and no parameter beyond --mca osc rdma (issue 27, item 4),
#      mpirun -np 2 --mca osc rdma osc_demo passes with btl-ofi's counters moved,
#      btl_base_verbose names the provider, and osc_base_verbose names ofirma as the
#      window's BTL where this osc/rdma prints its choice (not 4.1 release builds)
#   3. apt purge removes every file of the package; apt autopurge then leaves
#      the file system as it was before step 1 (apt's and dpkg's own records aside)
# Exit status: 0 when all hold. Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm
if [ "${1:-}" = --suite ]; then SUITE=$2; shift 2; fi
{ [ $# -eq 1 ] && [ -f "$1" ]; } ||
    { echo "usage: check-deb.sh [--suite SUITE] DEB" >&2; exit 2; }

if [ "${BTL_OFI_CHECK_DEB_INSIDE:-}" != 1 ]; then
    exec bash "$HERE/debroot.sh" --suite "$SUITE" --purpose pkg \
        --copy-in "$1" --copy-in "$HERE/check-deb.sh" \
        scratch /usr/bin/env BTL_OFI_CHECK_DEB_INSIDE=1 bash /tmp/in/check-deb.sh "/tmp/in/$(basename "$1")"
fi

# ---- inside the clean root
deb=$1
pkg=$(dpkg-deb -f "$deb" Package)
step() { printf '\n--> %s\n' "$*"; }
fail() { echo "check-deb: FAILED: $*" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
# Every file outside the kernel's, the scratch area and the package tools' records
# (and the backups useradd and userdel make of the account files: the check's user).
snapshot() {
    find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /run \
        -o -path /var/lib/apt -o -path /var/cache -o -path /var/lib/dpkg -o -path /var/log \
        -o -path /etc/ld.so.cache -o -path /root \) -prune -o -print |
        grep -v '^/etc/\(passwd\|group\|shadow\|gshadow\|subuid\|subgid\)-$' | sort
}

. /etc/os-release
step "clean $PRETTY_NAME root; installing $(basename "$deb") as a user would: apt install ./$(basename "$deb")"
apt-get update -qq
snapshot >/tmp/before.txt
ls /usr/bin/mpirun 2>/dev/null && fail "Open MPI is installed before the package"
(cd "$(dirname "$deb")" && apt install -y -qq "./$(basename "$deb")" >/tmp/apt-install.log 2>&1) ||
    { tail -n 20 /tmp/apt-install.log; fail "apt install ./$(basename "$deb")"; }
grep -E "^(Setting up|Unpacking) ($pkg|openmpi-bin|libopenmpi|libfabric)" /tmp/apt-install.log | sed 's/^/   /' | sort -u

step "where Open MPI finds it (no environment file: OMPI_MCA_* unset, no mca-params.conf entry)"
env | grep -E '^(OMPI|PMIX)_MCA' && fail "an MCA variable is set"
grep -rs ofirma /etc/openmpi/ && fail "a parameter file names the component"
dpkg -L "$pkg" | grep 'mca_btl_ofirma.so$'
ompi_info --parsable --path pkglibdir
ompi_info | grep "MCA btl: ofirma" || fail "ompi_info does not list btl ofirma"
step "as an ordinary user, an empty environment, no flag but the osc: mpirun -np 2 --mca osc rdma osc_demo"
useradd -m btlofiuser
flock /tmp/btl-ofi-mpi.lock runuser -u btlofiuser -- env -i HOME=/home/btlofiuser PATH=/usr/bin:/bin \
    mpirun -np 2 --mca osc rdma /usr/libexec/btl-ofi/osc_demo | tee /tmp/demo.txt
grep -q '^PASSED' /tmp/demo.txt || fail "osc_demo did not pass"
awk '/^(put|get|accumulate|fetch_and_op|compare_and_swap) / && $NF > 0 { moved++ } END { exit !(moved >= 4) }' \
    /tmp/demo.txt || fail "btl-ofi's counters did not move"
step "the same with btl_base_verbose 10 and osc_base_verbose 100: which provider, which BTL"
flock /tmp/btl-ofi-mpi.lock runuser -u btlofiuser -- env -i HOME=/home/btlofiuser PATH=/usr/bin:/bin \
    mpirun -np 2 --mca osc rdma --mca btl_base_verbose 10 --mca osc_base_verbose 100 \
    /usr/libexec/btl-ofi/osc_demo >/tmp/verbose.txt 2>&1 || { cat /tmp/verbose.txt; fail "osc_demo with verbose output"; }
grep "btl:ofirma: selected provider" /tmp/verbose.txt ||
    fail "btl_base_verbose does not show btl:ofirma selecting a provider"
# Open MPI 4.1's osc/rdma prints its choice through OPAL_OUTPUT_VERBOSE, compiled out of
# a release build such as Debian's: there the counters above are the proof. Where it
# prints one (5.0: "accelerated_query: selected btl: ..."), it must name ofirma.
if grep -q "selected btl:" /tmp/verbose.txt; then
    grep -m2 "selected btl: ofirma" /tmp/verbose.txt ||
        { grep -m2 "selected btl:" /tmp/verbose.txt; fail "osc/rdma selected another BTL"; }
else
    echo "   (this Open MPI's osc/rdma prints no BTL choice: OSC_RDMA_VERBOSE is compiled out; the counters are the proof)"
fi
userdel -r btlofiuser 2>/dev/null

step "apt purge $pkg: none of its files is left"
dpkg -L "$pkg" >/tmp/files.txt
apt-get purge -y -qq "$pkg" >/dev/null
left=$(while read -r f; do if [ -f "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done </tmp/files.txt)
[ -z "$left" ] || fail "files left after apt purge: $left"
for d in /usr/libexec/btl-ofi "/usr/share/doc/$pkg"; do
    [ ! -e "$d" ] || fail "$d left after apt purge"
done
echo "   $(wc -l </tmp/files.txt) paths of $pkg: gone"
apt-get autopurge -y -qq >/dev/null
snapshot >/tmp/after.txt
if ! diff /tmp/before.txt /tmp/after.txt >/tmp/diff.txt; then
    cat /tmp/diff.txt
    fail "apt autopurge does not bring the file system back to its state before the install"
fi
echo "   apt autopurge: the file system is as before apt install ($(wc -l </tmp/before.txt) paths)"
echo "check-deb: PASSED ($pkg on $PRETTY_NAME)"
