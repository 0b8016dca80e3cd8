#!/bin/sh
# bulk-halt: no CPU is left running while offline. After an offline batch, after an
# online batch that fails part way (cpuN/hotplug/fail at sched:active on a CPU in the
# middle of the kernel's order) and after an online batch whose writer is killed with
# SIGKILL once its first CPU came up, every CPU that sysfs shows offline must be parked
# (hlt_play_dead(): its vCPU halts), as after cpuN/online = 0. The guest cannot see that
# itself: halt_check (lib.sh) has the host measure the CPU time of each vCPU thread
# while the guest idles (run-guest.sh prints the HALT-CHECK verdicts; a vCPU that is
# offline in sysfs but uses >= 5% of a host CPU fails the run). Series v2 on 6.12 kicked
# every CPU of an online pass to CPUHP_BP_KICK_AP first: the kicked CPUs that a failed or
# killed batch never completed kept spinning in cpuhp_ap_sync_alive().
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
H=$(hotpluggable)
HL=$(compress $H)

# back_online CTX: every CPU online again, by a batch write, or one CPU at a time should
# the batch be refused (the check of this scenario is the host's: go on either way).
back_online() {
    kwrite $SYS/online "$HL"
    [ "$KW" = ok ] || { note "$1: write $HL > online: $KW; per-CPU writes"; restore_all_online; }
    assert_all_online "$1"
}

# 1. every CPU offline after a batch: the reference (every vCPU but cpu0's halts)
kwrite $SYS/offline "$HL"; assert_eq "$KW" ok "write $HL > offline"
assert_offline_exactly "$H" "offline batch"
halt_check offline-batch
back_online "after the offline batch"

# 2. an online batch that fails in the middle of the kernel's order
st=$(hotplug_state_num sched:active)
[ -n "$st" ] || fail "no sched:active in $SYS/hotplug/states"
ORD=$(kernel_order online "$H")
n=$(count $ORD); k=$((n / 2 + 1)); [ $k -ge $n ] && k=$((n - 1))
V=$(nth $k $ORD)
kwrite $SYS/offline "$HL"; assert_eq "$KW" ok "write $HL > offline"
note "online order {$ORD}: cpu$V fails (sched:active=$st)"
echo $st >$SYS/cpu$V/hotplug/fail
kwrite $SYS/online "$HL"
echo -1 >$SYS/cpu$V/hotplug/fail 2>/dev/null
assert_eq "$KW" EAGAIN "write $HL > online with cpu$V failing"
dmesg | grep 'cpu_up_mask' | tail -n 1 | sed 's/^/  dmesg: /'
note "offline after the failed online batch: {$(compress $(minus "$PRESENT" "$(kernel_online)"))}"
halt_check online-failed
back_online "after the failed online batch"

# 3. an online batch whose writer is killed once the first CPU came up (see
# bulk-interrupt: a tight read of cpu/online, shell builtins only)
try=1
while :; do
    kwrite $SYS/offline "$HL"; assert_eq "$KW" ok "write $HL > offline"
    write_killed_after_first_change $SYS/online "$HL" cpu_up_mask
    [ $STOPPED = 1 ] && break
    note "the online batch ended before the signal; trying again"
    back_online "after an online batch that was not interrupted"
    try=$((try + 1))
    [ $try -le 5 ] || fail "could not interrupt an online batch in 5 tries"
done
note "offline after the killed online batch: {$(compress $(minus "$PRESENT" "$(kernel_online)"))}"
halt_check online-killed
back_online "after the killed online batch"
exit 0
