#!/bin/sh
# bulk-smt: smt/control goes through the kernel's batch (the series' in-kernel user):
# "off" takes every secondary thread down with 1 sched-domain rebuild and at most 3
# synchronize_rcu(), "on" brings them back with 1 rebuild (the per-CPU path of the stock
# kernel and of v3 before this patch: one rebuild per sibling), written by hand and by
# `cpuctl smt off|on` (cpuhpd's smt strategy gets the same counts). After each switch
# every per-CPU online file agrees with cpu/online (dev->offline updated), every offline
# vCPU halts (host-side check), and a switch that fails at a sibling in the middle
# (cpuN/hotplug/fail at sched:active) keeps the siblings before it offline, the rest
# online, and smt/control not "off", as the per-CPU loop did.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
need_binaries
assert_all_online "start"
[ "$(smt_control)" = on ] || skip "smt/control is '$(smt_control)' (no SMT in this topology)"
S=$(smt_secondaries)
[ $(count $S) -ge 3 ] || skip "needs 3 secondary threads, has {$(compress $S)}"
PROBES="partition_sched_domains_locked synchronize_rcu"
kprobes_setup $PROBES || skip "no kprobe events (tracefs $TRACEFS/kprobe_events not writable)"
note "secondary threads: {$(compress $S)} ($(count $S))"

snap() { echo "$(kprobe_hits partition_sched_domains_locked) $(kprobe_hits synchronize_rcu)"; }
# switch HOW VALUE: one switch by a write (HOW=write) or cpuctl (HOW=cpuctl); its
# counts in REBUILDS and GPS, its wall time noted
switch() {
    local how=$1 v=$2 b a t0 t1
    b=$(snap); t0=$(now_ms)
    if [ $how = write ]; then
        kwrite $SYS/smt/control $v; assert_eq "$KW" ok "write $v > smt/control"
    else
        cc --json smt $v; assert_rc 0 "cpuctl smt $v"; assert_strategy smt "cpuctl smt $v"
    fi
    t1=$(now_ms); a=$(snap)
    set -- $b $a
    REBUILDS=$(($3 - $1)); GPS=$(($4 - $2))
    note "COUNT smt $v by $how: rebuilds=$REBUILDS synchronize_rcu=$GPS wall=$((t1 - t0)) ms"
}

for how in write cpuctl; do
    switch $how off
    assert_eq "$REBUILDS" 1 "smt off by $how: sched-domain rebuilds"
    [ $GPS -le 3 ] || fail "smt off by $how: $GPS synchronize_rcu(), expected at most 3"
    assert_eq "$(smt_control)" off "smt off by $how: smt/control"
    assert_offline_exactly "$S" "smt off by $how"
    [ $how = write ] && halt_check smt-off
    switch $how on
    assert_eq "$REBUILDS" 1 "smt on by $how: sched-domain rebuilds"
    assert_eq "$(smt_control)" on "smt on by $how: smt/control"
    assert_all_online "smt on by $how"
done

# A switch that fails at a sibling in the middle of the order.
st=$(hotplug_state_num sched:active)
[ -n "$st" ] || fail "no sched:active in $SYS/hotplug/states"
n=$(count $S); k=$((n / 2))
V=$(nth $k $S)
BEFORE=""; i=0; for c in $S; do [ $i -lt $k ] && BEFORE="$BEFORE $c"; i=$((i + 1)); done
note "smt off order {$(compress $S)}: cpu$V fails (sched:active=$st); before it {$(compress $BEFORE)}"
echo $st >$SYS/cpu$V/hotplug/fail
kwrite $SYS/smt/control off
echo -1 >$SYS/cpu$V/hotplug/fail 2>/dev/null
assert_eq "$KW" EAGAIN "write off > smt/control with cpu$V failing"
# cpu_smt_control is left as it was: "on", or on 6.12 the thread count the failed write
# already set ("1"), as on the stock kernel; never "off"
[ "$(smt_control)" != off ] || fail "failed smt off: smt/control says off"
echo "  ok: failed smt off: smt/control = '$(smt_control)', not off"
assert_offline_exactly "$BEFORE" "failed smt off keeps what is done"
dmesg | grep 'smt/control' | tail -n 1 | sed 's/^/  dmesg: /'
# Back as on the stock kernel: on 6.12 the failed write already set cpu_smt_num_threads
# to 1 (a second "off" does nothing, the siblings are not bootable one by one) and "on"
# brings them back; on 6.1 smt/control is still "on", so "on" does nothing and each
# sibling comes back through its own online file.
kwrite $SYS/smt/control on; assert_eq "$KW" ok "write on > smt/control after the failure"
for c in $BEFORE; do
    cpu_is_online $c || { kwrite $SYS/cpu$c/online 1; assert_eq "$KW" ok "write 1 > cpu$c/online"; }
done
assert_all_online "end"
exit 0
