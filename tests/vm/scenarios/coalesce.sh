#!/bin/sh
# coalesce: 8 cpuctl processes started together (one CPU each; fewer where the guest
# has fewer hotpluggable CPUs) are served in fewer batches than processes (distinct
# batch_id values), each gets exactly its own CPU's result, and the kernel has all of
# them offline; then the same for online. The daemon runs with a coalescing window
# (coalesce_ms, none by default), the setting for callers that fire bursts from separate
# processes: under TCG the 8 processes reach the bus spread out by their starts, further
# apart than a one-CPU batch lasts.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
H=$(hotpluggable)
n=$(count $H)
[ $n -ge 2 ] || skip "needs 2 hotpluggable CPUs, have $n"
N=8; [ $n -lt $N ] && N=$n
[ $N -lt 8 ] && note "only $n hotpluggable CPUs: $N processes instead of 8"
# the last N hotpluggable CPUs, one per process
CPUS=""; i=$((n - N)); while [ $i -lt $n ]; do CPUS="$CPUS $(nth $i $H)"; i=$((i + 1)); done
CPUS=$(echo "$CPUS" | norm)

together() { # action
    local act=$1 k=0 c pids=""
    rm -f /tmp/co.*
    echo "+ $N x cpuctl --json $act <cpu> in parallel: $CPUS"
    for c in $CPUS; do
        cpuctl --timeout $CPUCTL_TIMEOUT --json $act $c >/tmp/co.$c.out 2>/tmp/co.$c.err &
        pids="$pids $!:$c"
    done
    for p in $pids; do
        wait ${p%%:*}; echo $? >/tmp/co.${p#*:}.rc
    done
    local ids="" c2
    for c in $CPUS; do
        echo "  cpu$c rc=$(cat /tmp/co.$c.rc) $(head -c 400 /tmp/co.$c.out) $(head -c 200 /tmp/co.$c.err)"
        [ "$(cat /tmp/co.$c.rc)" = 0 ] || fail "$act $c: exit $(cat /tmp/co.$c.rc)"
        json_load /tmp/co.$c.out
        json_ok "$act $c"
        [ "$J_CPUS" = "$c" ] || fail "$act $c: results for CPUs {$J_CPUS}, expected only {$c}"
        [ "$J_CHANGED" = "$c" ] || fail "$act $c: result not changed"
        [ "$J_OUTCOME" = ok ] || fail "$act $c: outcome '$J_OUTCOME', expected ok"
        ids="$ids $J_BATCH"
    done
    local distinct; distinct=$(echo $ids | norm)
    note "$act: batch ids {$distinct} for $N requests"
    [ $(count $distinct) -lt $N ] || fail "$act: $N requests served in $(count $distinct) batches (no coalescing)"
    echo "  ok: $act: $N requests in $(count $distinct) batch(es)"
}

daemon_restart_with "coalesce_ms: 300"
together offline
assert_offline_exactly "$CPUS" "after $N parallel offlines"
together online
assert_all_online "after $N parallel onlines"
daemon_restart_default
exit 0
