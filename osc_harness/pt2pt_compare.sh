#!/usr/bin/env bash
# What an installed btl-ofi changes for a program without one-sided
# communication (issue 27, item 4): pt2pt_latency (MPI_Init time, two-sided
# ping-pong 8 B..64 KiB) with the component where Open MPI finds it ("with")
# against Open MPI without it ("without"), interleaved in one run, ROUNDS each;
# the median per row and the ratio with/without. No timing is asserted.
#
#   osc_harness/pt2pt_compare.sh [-r ROUNDS] COMPONENT_DIR PT2PT_LATENCY
#
# COMPONENT_DIR  the directory holding mca_btl_ofirma.so; "with" puts it in
#                front of Open MPI's own directory, as the env file or the
#                package's install location does; "without" leaves Open MPI's
#                default path alone.
# Runs mpirun -np 2 (no --mca beyond the component path) under the MPI lock.
set -euo pipefail
ROUNDS=5
if [ "${1:-}" = -r ]; then ROUNDS=$2; shift 2; fi
[ $# -eq 2 ] || { sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
dir=$1 prog=$2
pkglib=$(ompi_info --parsable --path pkglibdir | cut -d: -f3-)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 "$ROUNDS"); do
    for cfg in with without; do
        if [ $cfg = with ]; then
            p="$dir:$pkglib"
        else
            p="$pkglib"
        fi
        flock /tmp/btl-ofi-mpi.lock env OMPI_MCA_mca_base_component_path="$p" \
            mpirun -np 2 "$prog" -j >"$out/$cfg.$r" || { echo "run $cfg $r failed" >&2; exit 1; }
    done
done
python3 - "$out" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows, mapped = {}, {}
for cfg in ("with", "without"):
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{cfg}.{r}"):
            d = json.loads(line)
            if "init_ms" in d:
                rows.setdefault(("MPI_Init (ms)", 0), {}).setdefault(cfg, []).append(d["init_ms"])
                mapped.setdefault(cfg, set()).add(d["btl_ofi_mapped"])
            else:
                rows.setdefault((f"{d['bytes']} B (us)", d["bytes"]), {}).setdefault(cfg, []).append(d["latency_us"])
print(f"# {rounds} rounds, interleaved; median per row; btl-ofi DSO mapped: "
      f"with {sorted(mapped['with'])}, without {sorted(mapped['without'])}")
print(f"{'row':<16} {'with':>10} {'without':>10} {'with/without':>13}")
for key in sorted(rows, key=lambda k: k[1]):
    w, wo = statistics.median(rows[key]["with"]), statistics.median(rows[key]["without"])
    print(f"{key[0]:<16} {w:>10.3f} {wo:>10.3f} {w / wo:>13.2f}")
PY
