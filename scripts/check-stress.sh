#!/usr/bin/env bash
# Reliability runs of btl-ofi: osc_stress (exact random RMA/atomic mix, plus
# fault injection), osc_soak, osc_threads and scripts/endurance.sh, on every
# served provider (or those given), then one summary table. Exit 1 if any run
# failed or timed out.
#
#   scripts/check-stress.sh [--long] [--seed N] [--bin-dir DIR] [--log-dir DIR] [PROVIDER...]
#
#   default   fast subset (a few minutes): short stress runs, 200k fetch-adds,
#             10-job endurance
#   --long    adds the long runs: 10M fetch-add soak, long stress, 3-rank
#             threads, 200-job endurance
#   --seed    base seed of osc_stress (default: random; always printed)
#   --bin-dir where osc_stress, osc_soak, osc_threads, osc_demo are
#             (default: BTL_OFI_LIBEXECDIR of the env file, else
#             $PREFIX/libexec/btl-ofi, PREFIX=/usr/local)
# Every mpirun runs under flock /tmp/btl-ofi-mpi.lock and a timeout.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)

LONG=0
SEED=""
PREFIX=${PREFIX:-/usr/local}
BIN_DIR=""
LOG_DIR=""
PROVIDERS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --long) LONG=1 ;;
    --seed) SEED=$2; shift ;;
    --bin-dir) BIN_DIR=$2; shift ;;
    --log-dir) LOG_DIR=$2; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) PROVIDERS+=("$1") ;;
    esac
    shift
done
[ ${#PROVIDERS[@]} -gt 0 ] || PROVIDERS=(shm sockets "tcp;ofi_rxm")
ENV_FILE=${BTL_OFI_ENV_FILE:-$PREFIX/share/btl-ofi/btl-ofi-env.sh}
# shellcheck disable=SC1090
. "$ENV_FILE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "$BIN_DIR" ]; then
    # the programs installed with the component the env file names
    BIN_DIR=${BTL_OFI_LIBEXECDIR:-$PREFIX/libexec/btl-ofi}
    [ -x "$BIN_DIR/osc_stress" ] || BIN_DIR=$REPO
fi
for prog in osc_stress osc_soak osc_threads osc_demo; do
    if [ ! -x "$BIN_DIR/$prog" ]; then
        echo "check-stress: $BIN_DIR/$prog not found (build and install, or give --bin-dir)" >&2
        exit 2
    fi
done
[ -n "$SEED" ] || SEED=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/check-stress.XXXXXX)}
mkdir -p "$LOG_DIR"

ROWS=()
FAILED=0

# run_mpi LOG TIMEOUT NP PROVIDER "EXTRA MCA ARGS" PROG ARGS... -> exit code of mpirun
run_mpi() {
    local log=$1 to=$2 np=$3 prov=$4 mca=$5
    shift 5
    # shellcheck disable=SC2086
    flock /tmp/btl-ofi-mpi.lock timeout "$to" mpirun -np "$np" --oversubscribe --mca pml ob1 \
        --mca btl "self,$BTL_OFI_NODE_BTL,$BTL_OFI_COMPONENT" --mca osc rdma --mca "btl_${BTL_OFI_COMPONENT}_provider_include" "$prov" \
        $mca "$@" >"$log" 2>&1
}

# row TEST PROVIDER RESULT COUNTS SECONDS SEED LOG
row() {
    ROWS+=("$(printf '%-24s %-12s %-8s %-62s %6ss  %s' "$1" "$2" "$3" "$4" "$5" "$6")")
    case "$3" in
    PASS | SKIP) ;;
    *)
        FAILED=1
        echo "---- $1 on $2: $3 (log: $7), last lines:" >&2
        tail -15 "$7" >&2
        ;;
    esac
}

# classify EXIT -> result word (0 pass, 77 skip, 124 timeout, 2 wrong path, else fail)
classify() {
    case "$1" in
    0) echo PASS ;;
    77) echo SKIP ;;
    124) echo TIMEOUT ;;
    2) echo WRONGPATH ;;
    *) echo "FAIL($1)" ;;
    esac
}

field() { # field NAME LOG: value of NAME= on the RESULT line
    sed -n "s/^RESULT .*[ ]$1=\([^ ]*\).*/\1/p" "$2" | tail -1
}

stress_ops() { # total ops over the flavor lines
    awk '/^flavor /{ for (i = 1; i <= NF; i++) if ($(i+1) == "ops") s += $i } END { print s + 0 }' "$1"
}

stress_sum() { # stress_sum NAME LOG: NAME=value summed over the flavor lines
    sed -n "s/^flavor .* $1=\([0-9]*\).*/\1/p" "$2" | awk '{ s += $1 } END { print s + 0 }'
}

safe() { tr -c 'A-Za-z0-9_\n' '_' <<<"$1"; }

# stress NAME PROVIDER NP TIMEOUT "MCA" SEED ARGS...
stress() {
    local name=$1 prov=$2 np=$3 to=$4 mca=$5 seed=$6
    shift 6
    local log start rc res
    log="$LOG_DIR/$name-$(safe "$prov").log"
    start=$(date +%s)
    run_mpi "$log" "$to" "$np" "$prov" "$mca" "$BIN_DIR/osc_stress" -s "$seed" "$@"
    rc=$?
    res=$(classify $rc)
    if [ "$res" = PASS ] && ! grep -q '^RESULT PASSED' "$log"; then
        res="FAIL(noresult)"
    fi
    local emulated
    emulated=$(stress_sum emulated "$log")
    # the emulation run must really have gone through the compare-and-swap loop
    if [ "$res" = PASS ] && [[ "$mca" == *debug_atomic_emulation* ]] && [ "$emulated" -eq 0 ]; then
        res="FAIL(emulated=0)"
    fi
    # an injection run must show that faults were really injected
    if [ "$res" = PASS ] && [[ "$mca" == *debug_inject_eagain* ]] && [ "$(field injected "$log")" = 0 ]; then
        res="FAIL(injected=0)"
    fi
    echo "$name|$prov|$res|ops=$(stress_ops "$log") mismatches=$(field mismatches "$log") emulated=$emulated injected=$(field injected "$log")|$(($(date +%s) - start))|$seed|$log"
}

# fault injection, every Nth put/get with a corrupted key: the component must show libfabric's
# error text, count cq errors, and the process must survive; osc/rdma ignores the error status
# so the results may be wrong: osc_stress -r reports them (its mismatches are expected > 0).
cq_error_run() {
    local prov=$1 seed=$2 log start rc res why=""
    log="$LOG_DIR/cq-error-$(safe "$prov").log"
    start=$(date +%s)
    # btl_base_verbose 1: every error completion is also printed by the rank
    # itself ("btl:ofi: operation failed: ..."); the one-time show_help can be
    # lost by Open MPI's forwarding (about 1 run in 6, NOTES.txt section 10)
    run_mpi "$log" 120 2 "$prov" "--mca btl_${BTL_OFI_COMPONENT}_debug_inject_cq_error 50 --mca btl_base_verbose 1" "$BIN_DIR/osc_stress" \
        -s "$seed" -e 8 -r
    rc=$?
    res=$(classify $rc)
    local cqe mism
    cqe=$(field cq_errors "$log")
    mism=$(field mismatches "$log")
    if [ "$res" = PASS ]; then
        grep -q 'Permission denied' "$log" || why="$why no-'Permission denied'-message"
        [ "${cqe:-0}" -gt 0 ] || why="$why cq_errors=0"
        [ "${mism:-0}" -gt 0 ] || why="$why checker-saw-no-damage"
        [ -z "$why" ] || res="FAIL(${why# })"
    fi
    echo "cq-error-inject|$prov|$res|cq_errors=$cqe mismatches=$mism mpi_errors=$(field mpi_errors "$log") (wrong data expected)|$(($(date +%s) - start))|$seed|$log"
}

simple() { # simple NAME PROVIDER NP TIMEOUT PROG ARGS... (osc_soak / osc_threads)
    local name=$1 prov=$2 np=$3 to=$4 prog=$5
    shift 5
    local log start rc res counts
    log="$LOG_DIR/$name-$(safe "$prov").log"
    start=$(date +%s)
    run_mpi "$log" "$to" "$np" "$prov" "" "$BIN_DIR/$prog" "$@"
    rc=$?
    res=$(classify $rc)
    if [ "$res" = PASS ] && ! grep -q '^RESULT PASSED' "$log"; then
        res="FAIL(noresult)"
    fi
    counts="mismatches=$(field mismatches "$log") regs_live=$(field registrations_live "$log")"
    if [ "$prog" = osc_soak ]; then
        counts="$counts $(sed -n 's/^\([a-z]*\) .* \([0-9]*\) ops\/s$/\1 \2 ops\/s/p' "$log" | paste -sd, -)"
    fi
    echo "$name|$prov|$res|$counts|$(($(date +%s) - start))|-|$log"
}

endurance() {
    local prov=$1 jobs=$2 log start rc res
    log="$LOG_DIR/endurance-$(safe "$prov").log"
    start=$(date +%s)
    DEMO="$BIN_DIR/osc_demo" BTL_OFI_ENV_FILE="$ENV_FILE" "$REPO/scripts/endurance.sh" "$jobs" \
        "$prov" >"$log" 2>&1
    rc=$?
    res=$([ $rc -eq 0 ] && echo PASS || echo "FAIL($rc)")
    echo "endurance-$jobs|$prov|$res|$(sed -n 's/.* \([0-9]* jobs\) *\([0-9]* failed\).*/\1, \2/p' "$log" | tail -1)|$(($(date +%s) - start))|-|$log"
}

record() { # record "name|prov|result|counts|secs|seed|log"
    local IFS='|'
    # shellcheck disable=SC2086
    set -- $1
    row "$1" "$2" "$3" "$4" "$5" "$6" "$7"
    printf '  %-24s %-12s %s (%ss)\n' "$1" "$2" "$3" "$5"
}

echo "check-stress: $([ $LONG -eq 1 ] && echo long || echo fast) run, seed $SEED, providers: ${PROVIDERS[*]}"
echo "binaries: $BIN_DIR   logs: $LOG_DIR"
T0=$(date +%s)
for prov in "${PROVIDERS[@]}"; do
    record "$(stress stress-2r "$prov" 2 180 "" "$SEED")"
    record "$(stress stress-3r-3flavors "$prov" 3 240 "" "$((SEED + 1))" -e 8 -f create,dynamic,allocate)"
    record "$(stress stress-eagain200-batch1 "$prov" 2 240 \
        "--mca btl_${BTL_OFI_COMPONENT}_debug_inject_eagain 200 --mca btl_${BTL_OFI_COMPONENT}_progress_batch 1" "$((SEED + 2))" -e 8)"
    record "$(stress stress-atomic-emulation "$prov" 2 240 "--mca btl_${BTL_OFI_COMPONENT}_debug_atomic_emulation 1" \
        "$((SEED + 3))" -e 8)"
    # read_proof: the completion mode for providers without delivery-complete
    # (put callbacks wait for a proof read; flush proves non-fetching atomics)
    record "$(stress stress-3r-read-proof "$prov" 3 240 "--mca btl_${BTL_OFI_COMPONENT}_completion read_proof" \
        "$((SEED + 5))" -e 8 -f create,dynamic,allocate)"
    if [ "$prov" = sockets ]; then
        record "$(cq_error_run "$prov" "$((SEED + 4))")"
    fi
    record "$(simple soak-fadd-200k+outst "$prov" 2 300 osc_soak -n 200000 -k 10000 -r 3)"
    record "$(simple threads-2r-4t "$prov" 2 180 osc_threads -t 4 -i 300)"
    if [ $LONG -eq 1 ]; then
        record "$(stress stress-long-2r "$prov" 2 1200 "" "$((SEED + 10))" -e 200 -p 4)"
        record "$(stress stress-long-4r "$prov" 4 1200 "" "$((SEED + 11))" -e 60)"
        record "$(simple soak-fadd-10M-4r+outst "$prov" 4 2400 osc_soak -n 10000000 -k 10000 -r 20)"
        record "$(simple threads-3r-4t "$prov" 3 900 osc_threads -t 4 -i 300)"
        record "$(simple threads-2r-3t-long "$prov" 2 900 osc_threads -t 3 -i 5000)"
        record "$(endurance "$prov" 200)"
    else
        record "$(endurance "$prov" 10)"
    fi
done
# The injected bad key is only a survivable error on sockets (NOTES.txt 6b, 8).
for p in "${PROVIDERS[@]}"; do
    case "$p" in
    shm) row cq-error-inject "$p" SKIP "shm never completes a bad-key access (NOTES.txt 6b)" 0 - - ;;
    "tcp;ofi_rxm") row cq-error-inject "$p" SKIP "tcp;ofi_rxm tears the connection down after a bad-key access (NOTES.txt 6b)" 0 - - ;;
    esac
done

# --long also runs the memory checks and the multi-host runs, so that one
# command covers the whole reliability set (each keeps its own logs).
companion() { # companion NAME SCRIPT ARGS...: one summary row from another check script
    local name=$1 script=$2 start log rc res
    shift 2
    start=$(date +%s)
    log="$LOG_DIR/$name.log"
    bash "$script" "$@" >"$log" 2>&1
    rc=$?
    case $rc in
        0) res=PASS ;;
        77) res=SKIP ;;
        *) res="FAIL(exit $rc)" ;;
    esac
    echo "$name|${*:-all}|$res|$(tail -1 "$log" | cut -c1-60)|$(($(date +%s) - start))|-|$log"
}
if [ $LONG -eq 1 ]; then
    record "$(companion memory-valgrind "$(dirname "$0")/check-memory.sh" "${PROVIDERS[@]}")"
    record "$(companion multihost "$(dirname "$0")/check-multihost.sh")"
fi

echo
echo "== check-stress summary ($([ $LONG -eq 1 ] && echo long || echo fast), base seed $SEED, $(($(date +%s) - T0))s, logs $LOG_DIR)"
printf '%-24s %-12s %-8s %-62s %7s  %s\n' test provider result counts time seed
printf '%s\n' "${ROWS[@]}"
if [ $FAILED -ne 0 ]; then
    echo "check-stress: FAILED"
    exit 1
fi
echo "check-stress: all passed"
exit 0
