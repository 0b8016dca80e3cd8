#!/bin/sh
# bulk-uevents: one KOBJ_OFFLINE/KOBJ_ONLINE uevent per CPU that a batch changed,
# counted by a netlink listener in the guest (uevent-count: NETLINK_KOBJECT_UEVENT,
# group 1, SUBSYSTEM=cpu), none for CPUs that were skipped or not reached; and after
# every batch each per-CPU online file agrees with cpu/online.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v uevent-count >/dev/null || skip "uevent-count not in the initramfs (no static gcc at build time)"
assert_all_online "start"
PK=$(last $(packages))
B=$(cpus_of_pkg $PK)
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
BL=$(compress $B)

# counted FILE VALUE WANT_OFF "CPUS_OFF" WANT_ON "CPUS_ON" WHAT: the write with a
# listener around it; exactly the given CPUs, each once.
counted() {
    local f=$1 v=$2 woff=$3 coff=$4 won=$5 con=$6 what=$7 pid i=0 got want c
    rm -f /tmp/ue.ready /tmp/ue.out
    uevent-count -t 120 -r /tmp/ue.ready -v >/tmp/ue.out 2>/tmp/ue.err &
    pid=$!
    while [ ! -e /tmp/ue.ready ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    [ -e /tmp/ue.ready ] || fail "$what: uevent-count did not start"
    if [ "$f" = cpuctl ]; then
        cc --json $v; KW=$RC; [ "$RC" = 0 ] && KW=ok
    else
        kwrite $f "$v"
    fi
    sleep 0.5
    kill -TERM $pid; wait $pid
    sed 's/^/  | /' /tmp/ue.out
    grep -q 'ENOBUFS' /tmp/ue.err && fail "$what: the listener lost messages (ENOBUFS)"
    got=$(head -n1 /tmp/ue.out)
    assert_eq "$got" "offline=$woff online=$won" "$what: uevents"
    want=""
    for c in $(union "$coff $con"); do
        want="$want cpu$c:-$(contains " $coff " $c && echo 1 || echo 0)/+$(contains " $con " $c && echo 1 || echo 0)"
    done
    assert_eq "$(sed -n 's/^cpus: *//p' /tmp/ue.out)" "$(echo $want)" "$what: uevents per CPU"
    UE_RC=$KW
}

# 1. a batch down and up: one uevent per CPU
counted $SYS/offline "$BL" $(count $B) "$B" 0 "" "write $BL > offline"
assert_eq "$UE_RC" ok "write $BL > offline"
assert_offline_exactly "$B" "batch offline"
counted $SYS/online "$BL" 0 "" $(count $B) "$B" "write $BL > online"
assert_eq "$UE_RC" ok "write $BL > online"
assert_all_online "batch online"

# 2. CPUs already in the state send nothing
x=$(first $B); y=$(last $B)
kwrite $SYS/offline "$x,$y"; assert_eq "$KW" ok "write $x,$y > offline"
R=$(minus "$B" "$x $y")
counted $SYS/offline "$BL" $(count $R) "$R" 0 "" "write $BL > offline with $x,$y already offline"
assert_offline_exactly "$B" "overlap offline"
counted $SYS/online "$BL" 0 "" $(count $B) "$B" "write $BL > online"
assert_all_online "overlap online"

# 3. a refused batch sends nothing
counted $SYS/offline "$(compress $PRESENT)" 0 "" 0 "" "write every CPU > offline (EBUSY)"
assert_eq "$UE_RC" EBUSY "every CPU refused"
assert_all_online "after the refusal"

# 4. a mid-batch failure: uevents for the CPUs done before it only
st=$(hotplug_state_num sched:active)
if [ -n "$st" ] && [ -e $SYS/cpu$y/hotplug/fail ]; then
    ORD=$(kernel_order offline "$B"); n=$(count $ORD); k=$((n / 2)); V=$(nth $k $ORD)
    BEFORE=""; i=0; for c in $ORD; do [ $i -lt $k ] && BEFORE="$BEFORE $c"; i=$((i + 1)); done
    echo $st >$SYS/cpu$V/hotplug/fail
    counted $SYS/offline "$BL" $(count $BEFORE) "$BEFORE" 0 "" "write $BL > offline, cpu$V failing"
    echo -1 >$SYS/cpu$V/hotplug/fail 2>/dev/null
    assert_eq "$UE_RC" EAGAIN "cpu$V failing"
    assert_offline_exactly "$BEFORE" "after the mid-batch failure"
    counted $SYS/online "$BL" 0 "" $(count $BEFORE) "$BEFORE" "write $BL > online after the failure"
    assert_all_online "after the failure"
else
    note "no failure injection: mid-batch case not run"
fi

# 5. through cpuhpd (bulk strategy): the same one uevent per CPU
if has_cap bulk; then
    counted cpuctl "offline $BL" $(count $B) "$B" 0 "" "cpuctl offline $BL"
    assert_eq "$UE_RC" ok "cpuctl offline $BL"
    assert_strategy bulk "cpuctl offline $BL"
    assert_offline_exactly "$B" "cpuctl offline"
    counted cpuctl "online $BL" 0 "" $(count $B) "$B" "cpuctl online $BL"
    assert_eq "$UE_RC" ok "cpuctl online $BL"
    assert_all_online "cpuctl online"
else
    note "cpuhpd does not list bulk ($(caps)): cpuctl case not run"
fi
exit 0
