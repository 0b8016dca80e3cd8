#!/bin/sh
# bulk-direct: the patched kernel's writable /sys/devices/system/cpu/offline and
# online, written directly (no cpuhpd). The batch is the last package (derived from
# the topology); refusals change nothing; a failure injected with cpuN/hotplug/fail
# in the middle of the kernel's order (siblings first going down, primaries first
# coming up) returns the errno with the CPUs before the victim changed and the CPUs
# after it untouched.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
H=""; FIXED=""
for c in $PRESENT; do has_online_file $c && H="$H $c" || FIXED="$FIXED $c"; done
H=$(echo $H)
PK=$(last $(packages))
B=$(cpus_of_pkg $PK)
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages (topology has $(packages))"
[ -z "$(minus "$B" "$H")" ] || skip "package $PK has CPUs without an online file: {$(compress $(minus "$B" "$H"))}"
BL=$(compress $B)
MAX=$(last $PRESENT)
note "batch = package $PK = {$BL}; CPUs without an online file: {$(compress $FIXED)}"

# 1. the batch, both ways; the offline file and every per-CPU file agree
kwrite $SYS/offline "$BL"
assert_eq "$KW" ok "write $BL > offline"
assert_offline_exactly "$B" "batch offline $BL"
assert_eq "$(rd $SYS/offline)" "$BL" "$SYS/offline after the batch"
kwrite $SYS/online "$BL"
assert_eq "$KW" ok "write $BL > online"
assert_all_online "batch online $BL"
assert_eq "$(rd $SYS/offline)" "" "$SYS/offline after the batch online"

# 2. refusals: each leaves every CPU as it was
refused() { # FILE VALUE ERRNO WHAT
    kwrite "$1" "$2"
    assert_eq "$KW" "$3" "$4: write '$2' > $(basename $1)"
    assert_all_online "$4: nothing changed"
}
a=$(first $B)
refused $SYS/offline "x-y" EINVAL "garbage"
refused $SYS/online "foo" EINVAL "garbage"
refused $SYS/offline "" EINVAL "empty list"
refused $SYS/offline "$((MAX + 1))" EINVAL "not present"
refused $SYS/offline "$a,$((MAX + 1))" EINVAL "a good CPU with one not present"
refused $SYS/online "$((MAX + 1))" EINVAL "not present (online)"
refused $SYS/offline "$(compress $PRESENT)" EBUSY "every CPU"
if [ -n "$FIXED" ]; then
    f=$(first $FIXED)
    refused $SYS/offline "$f" EPERM "cpu$f (no online file: not hotpluggable)"
    refused $SYS/offline "$f,$a" EPERM "cpu$f with cpu$a"
else
    note "every CPU has an online file (cpu0_hotplug?): EPERM case not run"
fi
kwrite $SYS/online "$BL"
assert_eq "$KW" ok "write $BL > online when already online (skipped)"
assert_all_online "already online"

# 3. CPUs already offline are skipped
x=$(last $B)
kwrite $SYS/offline "$x"; assert_eq "$KW" ok "write $x > offline"
kwrite $SYS/offline "$BL"; assert_eq "$KW" ok "write $BL > offline with cpu$x already offline"
assert_offline_exactly "$B" "overlap"
kwrite $SYS/online "$BL"; assert_eq "$KW" ok "write $BL > online"
assert_all_online "overlap undone"

# 4. mid-batch failure, offline: the victim is in the middle of the kernel's order
STATES=$SYS/hotplug/states
st=$(hotplug_state_num sched:active)
[ -n "$st" ] || fail "no sched:active in $STATES"
ORD=$(kernel_order offline "$B")
n=$(count $ORD); k=$((n / 2 + 1)); [ $k -ge $n ] && k=$((n - 1))
V=$(nth $k $ORD)
BEFORE=""; i=0; for c in $ORD; do [ $i -lt $k ] && BEFORE="$BEFORE $c"; i=$((i + 1)); done
note "offline order {$ORD}: cpu$V fails (sched:active=$st); before it {$BEFORE}"
[ -e $SYS/cpu$V/hotplug/fail ] || fail "no $SYS/cpu$V/hotplug/fail"
echo $st >$SYS/cpu$V/hotplug/fail
kwrite $SYS/offline "$BL"
echo -1 >$SYS/cpu$V/hotplug/fail 2>/dev/null
assert_eq "$KW" EAGAIN "write $BL > offline with cpu$V failing"
assert_offline_exactly "$BEFORE" "mid-batch offline failure keeps what is done"
dmesg | grep 'cpu_down_mask' | tail -n 1 | sed 's/^/  dmesg: /'
kwrite $SYS/online "$BL"; assert_eq "$KW" ok "recover: write $BL > online"
assert_all_online "after the offline failure"

# 5. mid-batch failure, online
kwrite $SYS/offline "$BL"; assert_eq "$KW" ok "write $BL > offline"
ORD=$(kernel_order online "$B")
V=$(nth $k $ORD)
BEFORE=""; i=0; for c in $ORD; do [ $i -lt $k ] && BEFORE="$BEFORE $c"; i=$((i + 1)); done
note "online order {$ORD}: cpu$V fails; before it {$BEFORE}"
echo $st >$SYS/cpu$V/hotplug/fail
kwrite $SYS/online "$BL"
echo -1 >$SYS/cpu$V/hotplug/fail 2>/dev/null
assert_eq "$KW" EAGAIN "write $BL > online with cpu$V failing"
assert_offline_exactly "$(minus "$B" "$BEFORE")" "mid-batch online failure keeps what is done"
dmesg | grep 'cpu_up_mask' | tail -n 1 | sed 's/^/  dmesg: /'
kwrite $SYS/online "$BL"; assert_eq "$KW" ok "recover: write $BL > online"
assert_all_online "end"
exit 0
