#!/usr/bin/env bash
# Memory checks of btl-ofi under a 2-rank osc_stress run (and osc_demo with --asan).
#
#   scripts/check-memory.sh [--epochs N] [--seed N] [--log-dir DIR] [--gen-supp FILE] [PROVIDER...]
#   scripts/check-memory.sh --asan [--asan-prefix DIR] [--epochs N] [PROVIDER...]
#
#   default   valgrind memcheck on every rank of `osc_stress -e N` (default 2 epochs)
#             per provider (default: shm and tcp;ofi_rxm), with
#             osc_harness/valgrind.supp (Open MPI / PMIx / hwloc / libfabric's own
#             reports, never a stack through mca_btl_ofi.so). Fails (exit 1) on any
#             invalid read/write/free, on any definitely/indirectly lost block whose
#             stack has an mca_btl_ofi frame, on an uninitialised-value report through
#             mca_btl_ofi, or if the job itself failed.
#             dlclose() is made a no-op in the ranks (a 1-line LD_PRELOAD shim built
#             into the log dir) so that leak stacks of unloaded components keep
#             their names instead of "???".
#   --gen-supp FILE  also write, to FILE, a suppression for every unsuppressed report
#             whose stack has no mca_btl_ofi frame (deduplicated, cut at the MPI entry
#             point); how osc_harness/valgrind.supp was made
#   --asan    instead of valgrind: run osc_demo and `osc_stress -e N` (default 4) per
#             provider through the component installed in --asan-prefix (default
#             /tmp/asan-prefix, built with ./configure --enable-asan), with libasan
#             preloaded (the MPI programs are not ASan-built). ASAN_OPTIONS defaults to
#             detect_leaks=0 (LeakSanitizer would report Open MPI's own init leaks and
#             fail every run; valgrind above is the leak check). Fails on any
#             "ERROR: AddressSanitizer" report or a failed job.
# Every mpirun runs under flock /tmp/btl-ofi-mpi.lock and a timeout.
# BTL_OFI_ENV_FILE selects the env file of the valgrind run (default
# $PREFIX/share/btl-ofi/btl-ofi-env.sh, PREFIX=/usr/local).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)

ASAN=0
ASAN_PREFIX=/tmp/asan-prefix
EPOCHS=""
SEED=1
LOG_DIR=""
GEN_SUPP=""
PREFIX=${PREFIX:-/usr/local}
PROVIDERS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --asan) ASAN=1 ;;
    --asan-prefix) ASAN_PREFIX=$2; shift ;;
    --epochs) EPOCHS=$2; shift ;;
    --seed) SEED=$2; shift ;;
    --log-dir) LOG_DIR=$2; shift ;;
    --gen-supp) GEN_SUPP=$2; shift ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) PROVIDERS+=("$1") ;;
    esac
    shift
done
[ ${#PROVIDERS[@]} -gt 0 ] || PROVIDERS=(shm "tcp;ofi_rxm")
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/check-memory.XXXXXX)}
mkdir -p "$LOG_DIR"
SUPP=$REPO/osc_harness/valgrind.supp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ $ASAN = 1 ]; then
    ENV_FILE=$ASAN_PREFIX/share/btl-ofi/btl-ofi-env.sh
else
    ENV_FILE=${BTL_OFI_ENV_FILE:-$PREFIX/share/btl-ofi/btl-ofi-env.sh}
fi
if [ ! -r "$ENV_FILE" ]; then
    echo "check-memory: $ENV_FILE not found (install the component first)" >&2
    exit 2
fi
# shellcheck disable=SC1090
. "$ENV_FILE"
BIN_DIR=${BTL_OFI_LIBEXECDIR:-$PREFIX/libexec/btl-ofi}

# mpirun_2 LOG TIMEOUT PROVIDER MPIRUN-ARGS... -> exit code of mpirun
mpirun_2() {
    local log=$1 to=$2 prov=$3
    shift 3
    flock /tmp/btl-ofi-mpi.lock timeout "$to" mpirun -np 2 --oversubscribe --mca pml ob1 \
        --mca btl "self,$BTL_OFI_NODE_BTL,$BTL_OFI_COMPONENT" --mca osc rdma --mca "btl_${BTL_OFI_COMPONENT}_provider_include" "$prov" \
        "$@" >"$log" 2>&1
}

tag_of() { echo "${1//;/+}"; }

FAILED=0
ROWS=()

run_asan() {
    local libasan comp
    libasan=$(gcc -print-file-name=libasan.so)
    comp=$BTL_OFI_COMPONENT_DIR/mca_btl_$BTL_OFI_COMPONENT.so
    if ! readelf -d "$comp" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
        echo "check-memory: $comp is not ASan-built (configure --enable-asan)" >&2
        exit 2
    fi
    local asan_opts=${ASAN_OPTIONS:-detect_leaks=0}
    for prov in "${PROVIDERS[@]}"; do
        local tag
        tag=$(tag_of "$prov")
        for prog in osc_demo "osc_stress -e ${EPOCHS:-4} -s $SEED -f create,dynamic"; do
            local name=${prog%% *} log rc result
            log=$LOG_DIR/asan.$tag.$name.log
            # shellcheck disable=SC2086
            mpirun_2 "$log" 300 "$prov" -x LD_PRELOAD="$libasan" -x ASAN_OPTIONS="$asan_opts" \
                "$BIN_DIR"/$prog
            rc=$?
            if grep -q 'ERROR: AddressSanitizer' "$log"; then
                result="FAIL(asan report)"
            elif [ $rc -ne 0 ]; then
                result="FAIL(exit $rc)"
            elif ! grep -q 'PASSED' "$log"; then
                result="FAIL(no PASSED)"
            else
                result=PASS
            fi
            [ "$result" = PASS ] || { FAILED=1; tail -20 "$log" >&2; }
            ROWS+=("$(printf '%-12s %-12s %-20s %s' "$prov" "$name" "$result" "$log")")
        done
    done
    echo "ASan (component: $comp; LD_PRELOAD=$libasan; ASAN_OPTIONS=$asan_opts)"
    printf '%-12s %-12s %-20s %s\n' provider program result log
    printf '%s\n' "${ROWS[@]}"
    exit $FAILED
}
[ $ASAN = 1 ] && run_asan

# ranks keep every dlopen()ed object mapped, so leak stacks keep their names
echo 'int dlclose(void *handle) { (void) handle; return 0; }' >"$LOG_DIR/nodlclose.c"
if ! gcc -shared -fPIC -O1 -o "$LOG_DIR/nodlclose.so" "$LOG_DIR/nodlclose.c"; then
    echo "check-memory: cannot build the dlclose shim" >&2
    exit 2
fi
if grep -v '^#' "$SUPP" | grep -q 'mca_btl_ofi'; then
    echo "check-memory: $SUPP names mca_btl_ofi; it must never suppress btl-ofi" >&2
    exit 2
fi

# parse_logs PROVIDER OUT LOG... : one summary row; exit 1 if the provider fails
parse_logs() {
    python3 - "$@" <<'PY'
import re, sys
prov, gen_out, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
invalid = btl_leaks = other_leaks = other_errors = sup_errs = sup_bytes = sup_blocks = 0
details, supps = [], []
for path in logs:
    text = open(path).read()
    # valgrind records: lines "==PID== ..." up to an empty "==PID== " line;
    # --gen-suppressions blocks follow their record, without the prefix
    record, cur_supp = [], None
    for line in text.splitlines() + ["==0== "]:
        if cur_supp is not None:
            cur_supp.append(line)
            if line == "}":
                supps.append((record_hdr, "\n".join(cur_supp)))
                cur_supp = None
            continue
        if line == "{":
            cur_supp = [line]
            continue
        m = re.match(r"==\d+== ?(.*)$", line)
        if not m:
            continue
        body = m.group(1)
        # a record ends at an empty line or where the next header (unindented) starts
        starts_new = bool(body) and not body[0].isspace() and bool(record)
        if body.strip() and not starts_new:
            record.append(body)
            continue
        if record:
            hdr, stack = record[0], "\n".join(record)
            record_hdr = (hdr, "mca_btl_ofi" in stack)
            in_btl = "mca_btl_ofi" in stack
            if re.match(r"(Invalid (read|write|free)|Mismatched free|Source and destination overlap)", hdr):
                invalid += 1
                details.append(f"{path}: {hdr}\n{stack}")
            elif re.search(r"are (definitely|indirectly) lost", hdr):
                if in_btl:
                    btl_leaks += 1
                    details.append(f"{path}: {hdr}\n{stack}")
                else:
                    other_leaks += 1
            elif re.match(r"(Conditional jump|Use of uninitialised|Syscall param)", hdr):
                other_errors += 1
                if in_btl:
                    details.append(f"{path}: {hdr}\n{stack}")
            m2 = re.search(r"ERROR SUMMARY: .*\(suppressed: (\d+) from", stack)
            if m2:
                sup_errs += int(m2.group(1))
            m3 = re.search(r"suppressed: ([\d,]+) bytes in ([\d,]+) blocks", stack)
            if m3:
                sup_bytes += int(m3.group(1).replace(",", ""))
                sup_blocks += int(m3.group(2).replace(",", ""))
        record = [body] if starts_new else []
btl_uninit = sum(1 for d in details if "Conditional" in d or "uninitialised" in d)
print(f"{prov:<12} {invalid:>7} {btl_leaks:>9} {btl_uninit:>10} {other_leaks + other_errors:>11} "
      f"{sup_errs:>10} {sup_blocks:>7} ({sup_bytes} B)")
for d in details:
    print("----", d, file=sys.stderr)
if gen_out != "-":
    seen = set()
    with open(gen_out, "a") as out:
        for (hdr, in_btl), block in supps:
            if in_btl or "mca_btl_ofi" in block:
                continue
            lines = block.splitlines()
            # cut at the entry point into MPI: frames below it are the program's
            frames = []
            for l in lines[1:-1]:
                frames.append(l)
                if re.match(r"\s*fun:P?MPI_", l):
                    break
            key = "\n".join(frames[1:])
            if key in seen:
                continue
            seen.add(key)
            out.write("{\n   %s-%d\n%s\n}\n" % (prov.replace(";", "+"), len(seen), "\n".join(frames[1:])))
sys.exit(1 if invalid or btl_leaks or btl_uninit else 0)
PY
}

SUPP_ARGS=(--suppressions="$SUPP")
[ -z "$GEN_SUPP" ] || : >"$GEN_SUPP"
SUMMARY=()
for prov in "${PROVIDERS[@]}"; do
    tag=$(tag_of "$prov")
    out=$LOG_DIR/$tag.out
    rm -f "$LOG_DIR/$tag".rank*.vg
    mpirun_2 "$out" 1200 "$prov" -x LD_PRELOAD="$LOG_DIR/nodlclose.so" \
        valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --num-callers=50 --error-exitcode=42 \
        --gen-suppressions=all "${SUPP_ARGS[@]}" \
        --log-file="$LOG_DIR/$tag.rank%q{OMPI_COMM_WORLD_RANK}.vg" \
        "$BIN_DIR/osc_stress" -e "${EPOCHS:-2}" -s "$SEED" -f create,dynamic
    rc=$?
    # 42: valgrind found something (judged below); anything else non-zero: the job failed
    if ! grep -q '^RESULT PASSED' "$out" || { [ $rc -ne 0 ] && [ $rc -ne 42 ]; }; then
        echo "---- $prov: the job itself failed (exit $rc), last lines of $out:" >&2
        tail -15 "$out" >&2
        FAILED=1
    fi
    row=$(parse_logs "$prov" "${GEN_SUPP:--}" "$LOG_DIR/$tag".rank*.vg) || FAILED=1
    SUMMARY+=("$row")
done
echo "valgrind memcheck, 2 ranks of osc_stress -e ${EPOCHS:-2} -s $SEED (logs: $LOG_DIR)"
printf '%-12s %7s %9s %10s %11s %10s %s\n' provider invalid btl-leaks btl-uninit other-unsup \
    suppressed "leaks suppressed"
printf '%s\n' "${SUMMARY[@]}"
echo "invalid: invalid read/write/free anywhere; btl-leaks: definitely/indirectly lost with an"
echo "mca_btl_ofi frame; other-unsup: other reports not in valgrind.supp (not btl-ofi's)"
[ -z "$GEN_SUPP" ] || echo "suppressions for non-btl-ofi reports written to $GEN_SUPP"
[ $FAILED = 0 ] && echo "check-memory: PASS" || echo "check-memory: FAIL"
exit $FAILED
