#!/bin/sh
# lockdep-rcutorture: the kernel's own RCU torture test races bulk batches (issue 28 item
# 6). rcutorture (a module of the lockdep flavour, kernel/build.sh --lockdep) runs its
# readers, writers and barrier tests with its own random per-CPU hotplug on
# (onoff_interval), while this script writes masks to cpu/offline and back to cpu/online
# for TORTURE_SECS (default 60) s. Then rcutorture is unloaded and must end with "End of
# test: SUCCESS", or with "RCU_HOTPLUG" (some of its own hotplug calls failed) only when
# every failure it logged is errno 1: the device core's "already in that state", a bulk
# batch that got to the CPU between rcutorture's cpu_online() check and its remove_cpu()
# or add_cpu(). Each direction must have had at least 3 batches. WARN, lockdep and
# stall reports are init's kernel-log check. /sys/kernel/rcu_expedited is 1 while it
# runs (below: rcutorture must be the only one driving rcu_expedite_gp() otherwise).
# TORTURE_TYPE (default rcu) is rcutorture's torture_type: "busted", its deliberately
# broken RCU, must make this scenario fail.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
MODS=/lib/cpuhpd-modules
[ -f $MODS/rcutorture.ko ] && [ -f $MODS/torture.ko ] ||
    skip "no rcutorture module in the initramfs (kernel/build.sh --lockdep builds it: CONFIG_RCU_TORTURE_TEST=m)"
assert_all_online "start"
SECS=${TORTURE_SECS:-60}
TYPE=${TORTURE_TYPE:-rcu}
rnd_setup
[ $NH -ge 4 ] || skip "needs 4 hotpluggable CPUs"

# Few readers (the default is one per CPU): 16 vCPUs share 2 host cores under TCG. No
# forward-progress test: it floods callbacks, which measures the host, not the batch.
# onoff_interval is in jiffies: HZ (250 here) is 1 s between its hotplug operations.
params="torture_type=$TYPE nreaders=4 nfakewriters=2 fwd_progress=0 stat_interval=20 verbose=1 onoff_interval=250 onoff_holdoff=1"
ends0=$(dmesg | grep -c -- '-torture:--- End of test')
# rcutorture's writer cycles rcu_expedite_gp() nesting itself and WARNs when grace
# periods are expedited while its own count is zero: it must be the only one expediting.
# A batch expedites (patch 6/N, rcu_expedite_gp(), as suspend does), and so does
# userspace through /sys/kernel/rcu_expedited (cpuhpd's per-cpu strategy): toggling that
# file alone, with no batch, trips the same WARN (rcutorture.c:1590 on 6.12.118). Its
# documented way around it: expediting "controlled from boot/sysfs", rcu_expedited=1
# from before the writer starts until it stops; rcutorture then leaves expediting alone.
exp0=$(rd /sys/kernel/rcu_expedited)
# Whatever way the scenario ends: the modules out, rcu_expedited as it was.
unload() { rmmod rcutorture 2>/dev/null; rmmod torture 2>/dev/null; echo "$exp0" >/sys/kernel/rcu_expedited; }
trap unload EXIT
echo 1 >/sys/kernel/rcu_expedited || fail "cannot write /sys/kernel/rcu_expedited"
insmod $MODS/torture.ko || fail "insmod torture.ko failed"
insmod $MODS/rcutorture.ko $params || fail "insmod rcutorture.ko $params failed"
note "rcutorture loaded ($params); bulk batches for $SECS s"

off_ok=0 off_err=0 on_ok=0 on_err=0 errs=""
END=$(( $(date +%s) + SECS ))
while [ $(date +%s) -lt $END ]; do
    m=$(rnd_mask)
    if err=$( (echo "$m" >$SYS/offline) 2>&1 ); then off_ok=$((off_ok + 1)); else
        off_err=$((off_err + 1)); contains "$errs" "${err##*: }" || errs="$errs|${err##*: }"; fi
    if err=$( (echo "$m" >$SYS/online) 2>&1 ); then on_ok=$((on_ok + 1)); else
        on_err=$((on_err + 1)); contains "$errs" "${err##*: }" || errs="$errs|${err##*: }"; fi
done
note "batches: offline $off_ok done, $off_err refused; online $on_ok done, $on_err refused${errs:+ (${errs#|})}"

t0=$(now_ms)
rmmod rcutorture || fail "rmmod rcutorture failed"
unload
note "rcutorture unloaded in $(( $(now_ms) - t0 )) ms"
dmesg | grep -E -- "$TYPE-torture: *(Reader Pipe|Reader Batch|Free-Block|rtc:)" | tail -n 4 | sed 's/^/  | /'
dmesg | grep -q -- "$TYPE-torture: GP expediting controlled from boot/sysfs" ||
    fail "rcutorture did not leave expediting to sysfs (no 'GP expediting controlled from boot/sysfs')"
# its own hotplug calls that failed (verbose=1 logs each with its errno)
onoff_failed=$(dmesg | grep -E "torture_onoff task: (offline|online) [0-9]+ failed")
[ -n "$onoff_failed" ] && echo "$onoff_failed" | tail -n 5 | sed 's/^/  | /'
ends=$(dmesg | grep -c -- '-torture:--- End of test')
[ "$ends" -gt "$ends0" ] || fail "rcutorture printed no 'End of test' line on unload"
end=$(dmesg | grep -- '-torture:--- End of test' | tail -n 1)
verdict=$(echo "$end" | sed 's/.*End of test: \([A-Z_]*\).*/\1/')
note "rcutorture: End of test: $verdict"
case "$verdict" in
SUCCESS) ;;
RCU_HOTPLUG)
    bad=$(printf '%s' "$onoff_failed" | grep -vc 'errno 1$')
    n1=$(printf '%s' "$onoff_failed" | grep -c 'errno 1$')
    [ "$bad" = 0 ] || fail "rcutorture's own hotplug failed $bad time(s) with an errno other than 1 (see above)"
    note "its $n1 failed hotplug call(s) all found the CPU already there (errno 1): a bulk batch got there first" ;;
*) fail "rcutorture: End of test: $verdict" ;;
esac
assert_eq "$([ $off_ok -ge 3 ] && [ $on_ok -ge 3 ] && echo yes)" yes "at least 3 bulk batches each way during the torture"
restore_all_online
assert_all_online "end"
exit 0
