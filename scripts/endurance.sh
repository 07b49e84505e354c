#!/usr/bin/env bash
# Run N consecutive 2-rank jobs (init, window, puts/gets/atomics, finalize)
# per provider through btl-ofi and count failures. Exit 1 if any job failed.
#
#   scripts/endurance.sh [JOBS] [PROVIDER...]     default: 50 jobs, every provider btl-ofi accepts
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
JOBS=${1:-50}
shift || true
PREFIX=${PREFIX:-/usr/local}
ENV_FILE=${BTL_OFI_ENV_FILE:-$PREFIX/share/btl-ofi/btl-ofi-env.sh}
DEMO=${DEMO:-$PREFIX/libexec/btl-ofi/osc_demo}
# shellcheck disable=SC1090
. "$ENV_FILE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ $# -eq 0 ]; then
    set -- shm sockets "tcp;ofi_rxm"
fi
status=0
for provider in "$@"; do
    fails=0
    start=$(date +%s)
    for ((i = 1; i <= JOBS; i++)); do
        log=$(flock /tmp/btl-ofi-mpi.lock timeout 120 mpirun -np 2 --mca pml ob1 \
            --mca btl "self,$BTL_OFI_NODE_BTL,$BTL_OFI_COMPONENT" --mca osc rdma --mca "btl_${BTL_OFI_COMPONENT}_provider_include" "$provider" \
            "$DEMO" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] || ! grep -q '^PASSED$' <<<"$log"; then
            fails=$((fails + 1))
            echo "job $i on $provider failed (exit $rc):" >&2
            tail -20 <<<"$log" >&2
        fi
    done
    printf '%-14s %4d jobs  %3d failed  %4ds\n' "$provider" "$JOBS" "$fails" $(($(date +%s) - start))
    [ $fails -eq 0 ] || status=1
done
exit $status
