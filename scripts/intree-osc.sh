# shellcheck shell=bash
# btl-ofi: the checks of scripts/check-intree.sh --osc-patch, on an Open MPI built with
# upstream/'s osc/rdma patches (sourced by check-intree.sh, not run; only definitions):
# steps 1-5 of its --help, in that order. They use check-intree.sh's settings (WORK, REPO,
# NODE_BTL, LOCK, OSC_MARKER, ACC_ITERATIONS, MH_CONF: the host namespaces while they exist)
# and helpers (step, record, pkglibdir_of).

# Removes the host namespaces MH_CONF names, if any.
teardown_hosts() {
    [ -n "$MH_CONF" ] && [ -f "$MH_CONF" ] || return 0
    bash "$REPO/scripts/check-multihost.sh" --teardown "$MH_CONF" >/dev/null 2>&1 ||
        echo "check-intree: removing the namespaces of $MH_CONF failed" >&2
    MH_CONF=
}
mh_conf() { sed -n "s/^$1=//p" "$MH_CONF" | head -n1; } # KEY of netns.conf

# mpirun of the build in the hub namespace, the ranks placed by HOSTFILE on the host
# namespaces (their daemons started through scripts/netns-rsh), btl-ofi on
# tcp;ofi_rxm over their veths; only the build's Open MPI in the environment.
hosts_mpirun() { # VARIANT TIMEOUT NP HOSTFILE ARGS...
    local v=$1 to=$2 np=$3 hf=$4 prefix=$WORK/prefix-$1 e subnet iface launch fwd=() comp=()
    shift 4
    subnet=$(mh_conf subnet) iface=$(mh_conf iface)
    if [ "$NODE_BTL" = sm ]; then # PRRTE's names (5.0), ORTE's (4.1)
        launch=(--prtemca plm_ssh_agent "$(mh_conf agent)" --prtemca plm_ssh_no_tree_spawn 1
            --prtemca oob_tcp_if_include "$subnet")
    else
        launch=(--mca plm_rsh_agent "$(mh_conf agent)" --mca plm_rsh_no_tree_spawn 1
            --mca oob_tcp_if_include "$subnet")
    fi
    # shellcheck disable=SC1090
    mapfile -t comp < <(. "$WORK/env-$v.sh" && env | grep '^[A-Z]*_MCA_mca_base_component_path=')
    for e in "${comp[@]}"; do fwd+=(-x "${e%%=*}"); done
    env -i HOME="$WORK" PATH="$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        LD_LIBRARY_PATH="$prefix/lib" "${comp[@]}" BTL_OFI_COMPONENT=ofi \
        NETNS_RSH_MAP="$(mh_conf netns_map)" \
        FI_TCP_IFACE="$iface" FI_SOCKETS_IFACE="$iface" \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        flock "$LOCK" timeout -k 5 "$to" ip netns exec "$(mh_conf hub)" "$prefix/bin/mpirun" \
        -np "$np" --hostfile "$hf" --map-by slot --bind-to none "${launch[@]}" \
        --mca btl_tcp_if_include "$subnet" --mca pml ob1 --mca btl "self,$NODE_BTL,tcp,ofi" \
        --mca osc rdma --mca btl_ofi_provider_include "tcp;ofi_rxm" --mca mpi_yield_when_idle 1 \
        "${fwd[@]}" -x LD_LIBRARY_PATH -x BTL_OFI_COMPONENT -x FI_TCP_IFACE -x FI_SOCKETS_IFACE "$@"
}

# Mixed atomics on one word from both hosts with the patched osc/rdma and
# acc_single_intrinsic: osc_stress (its commute, chain and claim groups: several origins
# on one cell) and osc_soak's fetch-and-add counter (every rank on one word at rank 0,
# whose node also holds two more ranks), 4 ranks 3 + 1.
osc_mixed_atomics() { # VARIANT HOSTFILE PLACEMENT
    local v=$1 hf=$2 where=$3 bin=$WORK/project-$1 seed=$((RANDOM * 32768 + RANDOM))
    intrinsic_run "$v" "$hf" "$where" "osc_stress 3+1, intrinsic" "seed $seed: exact" \
        "$bin/osc_stress" -s "$seed" -e 4 -f create,allocate
    intrinsic_run "$v" "$hf" "$where" "osc_soak fadd 3+1, intrinsic" \
        "40000 fetch-and-adds on one word exact" "$bin/osc_soak" -m fadd -n 40000
}

# One program on 4 ranks with acc_single_intrinsic: its row passes on exit 0.
intrinsic_run() { # VARIANT HOSTFILE PLACEMENT ROW PASS_NOTE PROGRAM ARGS...
    local v=$1 hf=$2 where=$3 row=$4 note=$5 log rc
    shift 5
    log=$WORK/$v-$(basename "$1")-intrinsic.log
    step "[$v] $(basename "$1") ${*:2}, 4 ranks ($where), --mca osc_rdma_acc_single_intrinsic true"
    hosts_mpirun "$v" 900 4 "$hf" --mca osc_rdma_acc_single_intrinsic true "$@" >"$log" 2>&1
    rc=$?
    grep -iE '^(osc_stress|fadd|PASS|FAIL|RESULT)|mismatch' "$log" | head -n 12
    if [ $rc = 0 ]; then
        record "$v" "$row" pass "exit 0, $note"
    else
        tail -n 30 "$log"
        record "$v" "$row" FAIL "exit $rc; see $log"
    fi
}

# scripts/check-multihost.sh --hosts 3 (osc_demo, osc_flush_visibility, osc_stress and the
# Python conformance suite across three host namespaces) on this build with
# acc_single_intrinsic on every mpirun.
osc_suite_across_hosts() { # VARIANT
    local v=$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh dir=$WORK/$1-multihost rc
    step "[$v] scripts/check-multihost.sh --hosts 3 --mca osc_rdma_acc_single_intrinsic true 'tcp;ofi_rxm'"
    rm -rf "$dir" && mkdir -p "$dir"
    env -i HOME="$WORK" PATH="$WORK/prefix-$v/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        BTL_OFI_ENV_FILE="$envf" PYTHON="$WORK/venv-$v/bin/python" \
        bash "$REPO/scripts/check-multihost.sh" --hosts 3 --log-dir "$dir" \
        --mca osc_rdma_acc_single_intrinsic true "tcp;ofi_rxm" >"$dir/run.log" 2>&1
    rc=$?
    sed -n '/summary/,$p' "$dir/run.log"
    if [ $rc = 0 ]; then
        record "$v" "multihost suite, intrinsic" pass \
            "check-multihost.sh exit 0: $(grep -m1 -oE '[0-9]+ passed(, [0-9]+ [a-z]+)*' "$dir/run.log")"
    else
        tail -n 30 "$dir/run.log"
        record "$v" "multihost suite, intrinsic" FAIL "check-multihost.sh exit $rc; see $dir/run.log"
    fi
}

# Step 1: the build's ompi_info names its prefix and lists osc/rdma, and the osc/rdma it
# installed defines the patch's marker.
osc_patch_loaded() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh
    local out where obj syms
    step "[$v] is the patched osc/rdma the one this build loads"
    # shellcheck disable=SC2016
    out=$(env -i HOME="$WORK" bash -c '. "$1" && command -v ompi_info &&
        ompi_info --parsable --path prefix && ompi_info | grep "MCA osc: rdma"' _ "$envf" 2>&1)
    echo "$out"
    where=$(sed -n 's/^path:prefix://p' <<<"$out")
    if [ "$where" = "$prefix" ] && grep -qx "$prefix/bin/ompi_info" <<<"$out" &&
        grep -q 'MCA osc: rdma' <<<"$out"; then
        record "$v" "ompi_info: the build's prefix" pass "$prefix/bin/ompi_info, prefix $where, osc rdma listed"
    else
        record "$v" "ompi_info: the build's prefix" FAIL "prefix '${where:-none}' (env file $envf)"
    fi
    obj=$(pkglibdir_of "$v")/mca_osc_rdma.so # 4.1: a DSO; 5.0: in libmpi
    [ -f "$obj" ] || obj=$prefix/lib/libmpi.so
    syms=$(nm "$obj" 2>&1) # .symtab: the patch's table is a static (local) symbol
    if grep -q " $OSC_MARKER\$" <<<"$syms"; then
        record "$v" "osc/rdma carries the patch" pass \
            "$(grep " $OSC_MARKER\$" <<<"$syms" | head -n1 | awk '{ print $2, $3 }') in $obj"
    else
        record "$v" "osc/rdma carries the patch" FAIL "no $OSC_MARKER in $obj"
    fi
}

# Step 1: upstream/test/osc_rdma_acc_lock.c built with the build's mpicc links its libmpi.
# Returns 1 when it does not build.
osc_acc_lock_build() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 bin=$WORK/osc_rdma_acc_lock-$1 out
    step "[$v] upstream/test/osc_rdma_acc_lock.c with $prefix/bin/mpicc"
    if ! env -i HOME="$WORK" PATH="$prefix/bin:/usr/bin:/bin" "$prefix/bin/mpicc" -O2 -Wall \
        -o "$bin" "$REPO/upstream/test/osc_rdma_acc_lock.c" >"$WORK/$v-acc_lock-build.log" 2>&1; then
        cat "$WORK/$v-acc_lock-build.log"
        record "$v" "build osc_rdma_acc_lock" FAIL "see $WORK/$v-acc_lock-build.log"
        return 1
    fi
    cat "$WORK/$v-acc_lock-build.log" # warnings, if any
    out=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$prefix/lib" ldd "$bin" | grep 'libmpi\.so')
    echo "$out"
    if [[ "$out" == *"=> $prefix/lib/libmpi.so"* ]]; then
        record "$v" "osc_rdma_acc_lock links the build" pass "$(sed 's/^[[:space:]]*//; s/ (0x.*//' <<<"$out")"
    else
        record "$v" "osc_rdma_acc_lock links the build" FAIL "${out:-no libmpi}"
    fi
}

# Two host namespaces for steps 3 and 4, their removal trapped on exit (MH_CONF names
# them). Returns 1, with nothing left behind, when they cannot be made.
osc_hosts_up() { # VARIANT
    local v=$1 prefix=$WORK/prefix-$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh
    local mhdir=$WORK/$1-hosts rc
    step "[$v] two host namespaces (scripts/check-multihost.sh --setup-only --hosts 2)"
    rm -rf "$mhdir" && mkdir -p "$mhdir"
    trap teardown_hosts EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    MH_CONF=$mhdir/netns.conf
    env -i HOME="$WORK" PATH="$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin" BTL_OFI_ENV_FILE="$envf" \
        bash "$REPO/scripts/check-multihost.sh" --setup-only --hosts 2 --log-dir "$mhdir" \
        >"$mhdir/setup.log" 2>&1
    rc=$?
    cat "$mhdir/setup.log"
    if [ $rc != 0 ] || [ ! -f "$MH_CONF" ]; then
        record "$v" "host namespaces" FAIL "check-multihost.sh --setup-only: exit $rc"
        teardown_hosts
        trap - EXIT INT TERM
        return 1
    fi
}

# Step 3: osc_rdma_acc_lock on 4 ranks across the host namespaces, without and with
# acc_single_intrinsic.
osc_acc_lock_runs() { # VARIANT HOSTFILE PLACEMENT
    local v=$1 hf=$2 where=$3 bin=$WORK/osc_rdma_acc_lock-$1 intr log start rc cases
    for intr in false true; do
        log=$WORK/$v-acc_lock-intrinsic-$intr.log
        step "[$v] osc_rdma_acc_lock $ACC_ITERATIONS, 4 ranks ($where), tcp;ofi_rxm, --mca osc_rdma_acc_single_intrinsic $intr"
        start=$(date +%s)
        hosts_mpirun "$v" 3600 4 "$hf" --mca osc_rdma_acc_single_intrinsic "$intr" \
            "$bin" "$ACC_ITERATIONS" >"$log" 2>&1
        rc=$?
        grep -E '^(osc_rdma_acc_lock|allocate |create |PASSED|FAILED)|FAILED' "$log"
        cases=$(grep -cE '^(allocate|create) .*: exact$' "$log")
        if [ $rc = 0 ] && grep -qx PASSED "$log" && [ "$cases" = 16 ]; then
            record "$v" "acc_lock 3+1, intrinsic $intr" pass \
                "exit 0, PASSED, 16 cases exact ($(($(date +%s) - start))s)"
        else
            tail -n 30 "$log"
            record "$v" "acc_lock 3+1, intrinsic $intr" FAIL \
                "exit $rc, $cases of 16 cases exact; see $log"
        fi
    done
}

# Step 5: btl-ofi's atomic counter per operation across two hosts (tools/acc_lock_cost.py
# makes and removes its own namespaces): 3 BTL atomics per single-element fetch-and-op,
# accumulate and get-accumulate under lock_all by default, as before the patch; 1 with
# acc_single_intrinsic.
osc_acc_lock_cost() { # VARIANT
    local v=$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh log=$WORK/$1-acc_lock_cost.log
    local rc mode want got
    step "[$v] tools/acc_lock_cost.py --settings default,intrinsic --epochs lock_all --ops-list fop,acc1,gacc1"
    (
        # shellcheck disable=SC1090
        . "$envf"
        export BTL_OFI_ENV_FILE=$envf
        cd "$REPO" && timeout -k 10 1800 "$WORK/venv-$v/bin/python" tools/acc_lock_cost.py \
            --settings default,intrinsic --epochs lock_all --ops-list fop,acc1,gacc1 --ops 200 --reps 1
    ) >"$log" 2>&1
    rc=$?
    cat "$log"
    for mode in default intrinsic; do
        want=3.00
        [ "$mode" = default ] || want=1.00
        # | setting | epoch | operation | us/call | puts | gets | atomics | proof reads | CQ reads |
        got=$(awk -F'|' -v m="$mode" '{ for (i = 2; i <= 8; i++) gsub(/ /, "", $i) }
            $2 == m && $3 == "lock_all" { printf "%s%s %s", sep, $4, $8; sep = ", " }' "$log")
        if [ $rc = 0 ] && [ "$got" = "fop $want, acc1 $want, gacc1 $want" ]; then
            record "$v" "acc_lock_cost $mode" pass "lock_all BTL atomics per call: $got"
        else
            record "$v" "acc_lock_cost $mode" FAIL \
                "exit $rc; lock_all BTL atomics per call: ${got:-none} (want $want each); see $log"
        fi
    done
}

# The checks of a build with upstream/'s osc/rdma patch (check-intree.sh --help), steps 1,
# 3, 4 and 5 in turn; step 2's env file is build_clients'. A program that does not build or
# host namespaces that cannot be made end them.
check_osc() { # VARIANT
    local v=$1 envf=$WORK/prefix-$1/share/btl-ofi/btl-ofi-env.sh hf=$WORK/$1-hosts/hostfile-3+1
    local ips where
    osc_patch_loaded "$v"
    osc_acc_lock_build "$v" || return 0
    osc_hosts_up "$v" || return 0
    # 3 ranks on the first host, 1 alone on the second: as target and as origin
    # that one takes osc/rdma's "rank alone on its node" path
    read -r -a ips <<<"$(mh_conf ips)"
    printf '%s slots=3\n%s slots=1\n' "${ips[0]}" "${ips[1]}" >"$hf"
    where=$(hosts_mpirun "$v" 120 4 "$hf" hostname 2>"$WORK/$v-hosts/hostname.log" | sort | uniq -c |
        awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
    echo "placement: ${where:-none}"
    if [ "$where" = "mh-h1 x3, mh-h2 x1" ]; then
        record "$v" "4 ranks on 2 hosts, 3 + 1" pass "$where"
    else
        cat "$WORK/$v-hosts/hostname.log"
        record "$v" "4 ranks on 2 hosts, 3 + 1" FAIL "placement: ${where:-none}"
    fi
    osc_acc_lock_runs "$v" "$hf" "$where"
    osc_mixed_atomics "$v" "$hf" "$where"
    teardown_hosts
    trap - EXIT INT TERM
    osc_suite_across_hosts "$v"
    osc_acc_lock_cost "$v"

    step "[$v] to use this build: . $envf  (or BTL_OFI_ENV_FILE=$envf, python $WORK/venv-$v/bin/python)"
    sed 's/^/    /' "$envf"
}
