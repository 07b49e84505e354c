# shellcheck shell=bash
# btl-ofi: the Debian mirror this machine's apt already uses, for scripts that
# fetch Debian packages or sources (sourced, not run). No host name is ever
# written in this project: it is read from the apt sources here.
#
#   debian_mirror              print the URI of the main Debian archive
#   ensure_deb_src SUITE       make sure apt has a deb-src entry for SUITE
#                              (returns 0 if it added one: run apt-get update)
#   ompi_source_version        print the version of the source package the
#                              installed libopenmpi-dev was built from

# URIs of "deb" entries, one per line, main archive first (security and
# update suites left out), from deb822 .sources files and one-line .list files.
_apt_deb_uris() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822: stanzas separated by blank lines; keep Types: deb with a plain suite
        awk 'BEGIN { RS = ""; FS = "\n" }
             {
                 types = ""; uris = ""; suites = ""
                 for (i = 1; i <= NF; i++) {
                     if ($i ~ /^Types:/)  { types = $i }
                     if ($i ~ /^URIs:/)   { uris = $i }
                     if ($i ~ /^Suites:/) { suites = $i }
                 }
                 if (types ~ /(^|[ \t])deb([ \t]|$)/ && suites !~ /-security/) {
                     sub(/^URIs:[ \t]*/, "", uris); split(uris, u, /[ \t]+/)
                     for (j in u) if (u[j] != "") print u[j]
                 }
             }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        # one-line: deb [options] URI suite components...
        sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\).*/\2 \3/p' "$f" |
            awk '$2 !~ /-security/ { print $1 }'
    done
}

debian_mirror() {
    local uri
    uri=$(_apt_deb_uris | grep -v -- '-security' | grep -m1 '/debian/\{0,1\}$')
    [ -n "$uri" ] || uri=$(_apt_deb_uris | head -n1)
    if [ -z "$uri" ]; then
        echo "no Debian archive found in this machine's apt sources (/etc/apt/sources.list*)" >&2
        return 1
    fi
    printf '%s\n' "${uri%/}"
}

ensure_deb_src() {
    local suite=$1 mirror
    if grep -rqsE "^deb-src[[:space:]].*[[:space:]]$suite([[:space:]]|$)" \
            /etc/apt/sources.list /etc/apt/sources.list.d/ ||
       awk -v s="$suite" 'BEGIN { RS = "" }
            /Types:[^\n]*deb-src/ && $0 ~ ("Suites:[^\n]*(^|[ \t])" s "([ \t\n]|$)") { found = 1 }
            END { exit !found }' /etc/apt/sources.list.d/*.sources 2>/dev/null; then
        return 1
    fi
    mirror=$(debian_mirror) || return 2
    {
        echo "# Added by btl-ofi (scripts/apt-sources.sh): Debian sources, for Open MPI's headers."
        echo "Types: deb-src"
        echo "URIs: $mirror"
        echo "Suites: $suite"
        echo "Components: main"
        if [ -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
            echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
        fi
    } >"/etc/apt/sources.list.d/btl-ofi-src-$suite.sources"
    return 0
}

# Not the binary's own version: a binary rebuild (binNMU, e.g. 4.1.4-3+b1 on
# Debian 12) has no source package of its own.
ompi_source_version() {
    dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null
}

# apt_source_ompi DIR [VERSION [SUITE]]: Open MPI's source (apt-get source, a deb-src
# entry for SUITE on the mirror apt uses added where missing) unpacked in DIR; prints the
# tree's path. By default the installed version from this system's suite. Its log is
# DIR/source.log.
apt_source_ompi() {
    local dir=$1 version=${2:-} suite=${3:-}
    [ -n "$version" ] || version=$(ompi_source_version)
    [ -n "$suite" ] || suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
    if ensure_deb_src "$suite"; then apt-get update -qq; fi
    mkdir -p "$dir"
    (cd "$dir" && apt-get source -qq "openmpi=$version" >"$dir/source.log" 2>&1) ||
        { tail -n 5 "$dir/source.log" >&2; return 1; }
    find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'openmpi-*' | head -n1
}
