#!/usr/bin/env bash
# btl-ofi: build the Debian binary package from a release tarball.
#
#   packaging/build-deb.sh [--install-deps] TARBALL [OUTDIR]
#
# --install-deps  first install (as root) the Build-Depends (apt-get build-dep
#                 on the unpacked tree), dpkg-dev and lintian
# TARBALL  btl-ofi-VERSION.tar.gz (make dist)
# OUTDIR   where the .deb, .buildinfo and .changes go, and lintian's report
#          (lintian.txt); default: the current directory
#
# Debian's way for an upstream that keeps its packaging: the tarball is the
# .orig.tar.gz, packaging/debian/ becomes debian/ of the unpacked tree (NOTES.txt
# section 14). Needs dpkg-dev, debhelper and the Build-Depends of
# packaging/debian/control (dpkg-buildpackage names any that are missing);
# not root, unless --install-deps. Exit status: dpkg-buildpackage's, or 1 when lintian reports an
# error.
set -euo pipefail
die() { echo "build-deb: $*" >&2; exit 2; }
install_deps=no
if [ "${1:-}" = --install-deps ]; then install_deps=yes; shift; fi
[ $# -ge 1 ] || die "usage: build-deb.sh TARBALL [OUTDIR]"
tarball=$(readlink -f "$1")
outdir=$(mkdir -p "${2:-.}" && cd "${2:-.}" && pwd)
[ -f "$tarball" ] || die "no such tarball: $1"
base=$(basename "$tarball" .tar.gz)
version=${base#btl-ofi-}
[ "$base" != "$version" ] || die "$1 is not named btl-ofi-VERSION.tar.gz"

work=$(mktemp -d "${TMPDIR:-/tmp}/btl-ofi-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
ln -s "$tarball" "$work/btl-ofi_$version.orig.tar.gz"
tar -xzf "$tarball" -C "$work"
src=$work/btl-ofi-$version
[ -d "$src/packaging/debian" ] || die "$1 has no packaging/debian"
cp -r "$src/packaging/debian" "$src/debian"
chmod +x "$src/debian/rules"

if [ "$install_deps" = yes ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends dpkg-dev lintian >/dev/null ||
        die "apt-get install dpkg-dev lintian failed"
    apt-get build-dep -y -qq "$src" >/dev/null || die "apt-get build-dep failed"
fi
deb_version=$(cd "$src" && dpkg-parsechangelog -S Version)
[ "${deb_version%-*}" = "$version" ] ||
    die "debian/changelog is at $deb_version, the tarball at $version"

(cd "$src" && dpkg-buildpackage -us -uc -b)
for f in "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes; do
    [ -e "$f" ] && mv -f "$f" "$outdir/"
done
changes=$(ls "$outdir"/btl-ofi_"$deb_version"_*.changes | head -n1)
ls -l "$outdir"/*_"$deb_version"_*.deb

# lintian: errors fail the build; warnings are listed (NOTES.txt section 14 says
# which remain and why).
if command -v lintian >/dev/null; then
    lintian --info --display-info "$changes" >"$outdir/lintian.txt" 2>&1 || true
    cat "$outdir/lintian.txt"
    if grep -q '^E: ' "$outdir/lintian.txt"; then
        echo "build-deb: lintian reports errors" >&2
        exit 1
    fi
else
    echo "build-deb: lintian is not installed; package not checked" >&2
fi
