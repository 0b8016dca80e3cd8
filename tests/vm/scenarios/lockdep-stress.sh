#!/bin/sh
# lockdep-stress: for STRESS_SECS (default 75) s, concurrently: batches through cpuctl
# (bulk strategy where offered), direct batch writes to cpu/offline and cpu/online,
# per-CPU `echo 0|1 > cpuN/online` writes, smt/control off/on toggles, an outside
# stressor (stress-ng --cpu-online 2, its own per-CPU hotplug workers) and a task moved
# between two cgroup v2 cpusets (the last package, the rest) as fast as a shell can -
# background loops with a common deadline; refusals from the conflicts (EBUSY, EINVAL,
# EPERM, cpuctl exit 1/64) are expected and only counted. Then: dmesg gained no line of
# lib.sh's KERNEL_SPLAT (WARNING:, BUG:, lockdep's reports, stalls, hung tasks) and no
# Call Trace; lockdep is still on (debug_locks 1 in /proc/lockdep_stats); every CPU
# comes back online.
# Meant for the lockdep kernel (kernel/build.sh --lockdep); runs on any bulk kernel.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
SECS=${STRESS_SECS:-75}
rnd_setup
[ $NH -ge 4 ] || skip "needs 4 hotpluggable CPUs"
PAT="$KERNEL_SPLAT|Call Trace"
lockdep_on=0
if [ -r /proc/lockdep_stats ]; then
    lockdep_on=1
    note "lockdep: $(grep -E 'debug_locks' /proc/lockdep_stats | tr -s ' ')"
else
    note "no /proc/lockdep_stats: this kernel has no lockdep; only WARNING/BUG/Call Trace are checked"
fi
# What the log held before (boot, earlier scenarios) is init's to report, not this check's.
pre=$(splat_count "$PAT")
END=$(( $(date +%s) + SECS ))
note "stress for $SECS s: hotpluggable {$(compress $H)}, package $PK {$P1}, secondaries {$(compress $S)}"

worker() { # NAME: loops until the deadline, counts ok/refused per worker
    local name=$1 ok=0 err=0 m v
    while [ $(date +%s) -lt $END ]; do
        case $name in
        cpuctl)
            m=$(rnd_mask pairs)
            if [ $(( RANDOM % 2 )) = 0 ]; then v=offline; else v=online; fi
            cpuctl --timeout 120 $v "$m" >/dev/null 2>&1 && ok=$((ok + 1)) || err=$((err + 1)) ;;
        direct)
            m=$(rnd_mask pairs)
            if [ $(( RANDOM % 2 )) = 0 ]; then v=offline; else v=online; fi
            (echo "$m" >$SYS/$v) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1)) ;;
        percpu)
            m=$(rnd_cpu); v=$(( RANDOM % 2 ))
            (echo $v >$SYS/cpu$m/online) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1)) ;;
        stressng)
            # stress-ng's cpu-online stressor stops at the first refused write (e.g. EPERM
            # for a sibling while smt/control is off): start it again until the deadline.
            # It skips its stressor when its first probe write to cpu1/online is refused
            # (smt/control off at that moment). Its exit status only says whether its
            # own writes met refusals. The log of its last run that did dispatch is kept.
            local log=/tmp/stress-ng.log
            rm -f /tmp/stress-ng.ran.log
            while [ $(date +%s) -lt $END ]; do
                stress-ng --pathological --cpu-online 2 --timeout $(( END - $(date +%s) ))s >$log 2>&1
                if grep -q 'dispatching hogs' $log; then
                    ok=$((ok + 1)); cp $log /tmp/stress-ng.ran.log
                else
                    err=$((err + 1)); usleep 200000
                fi
            done
            echo "stressng: stress-ng --cpu-online 2 started $((ok + err)) times, its workers ran $ok times" >/tmp/stress.stressng
            return 0 ;;
        attach)
            (echo $MOVED >$CG/stress-a/cgroup.procs) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1))
            (echo $MOVED >$CG/stress-b/cgroup.procs) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1)) ;;
        smt)
            if [ -w $SYS/smt/control ] && [ -n "$S" ]; then
                (echo off >$SYS/smt/control) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1))
                sleep 1
                (echo on >$SYS/smt/control) 2>/dev/null && ok=$((ok + 1)) || err=$((err + 1))
                sleep 1
            else
                sleep 1
            fi ;;
        esac
    done
    echo "$name: $ok ok, $err refused/failed" >/tmp/stress.$name
}
pids=""
workers="direct percpu smt"
have_binaries && daemon_alive && workers="cpuctl $workers"
# stress-ng first: it checks once, at its start, that it can write cpu1/online, and
# skips its stressor if another worker's hotplug made that write fail
if command -v stress-ng >/dev/null; then workers="stressng $workers"
else note "no stress-ng in the initramfs: the outside stressor is left out"; fi
# the cpuset mover: a task moved between cpusets on the last package and on the rest
CG=/sys/fs/cgroup MOVED=""
if cpuset_pair stress-a "$P1" stress-b "$(compress $(minus "$PRESENT" "$(expand "$P1")"))"; then
    sh -c 'while :; do usleep 1000; done' &
    MOVED=$!
    workers="$workers attach"
else
    note "no cgroup v2 cpuset controller: the cpuset mover is left out"
fi
for w in $workers; do
    worker $w & pids="$pids $!"
    # let stress-ng pass its start-up check before the others race it
    [ $w = stressng ] || continue
    i=0
    until grep -q 'dispatching hogs\|skipped' /tmp/stress-ng.log 2>/dev/null || [ $i -ge 100 ]; do
        usleep 100000; i=$((i + 1))
    done
done
note "workers: $workers (pids$pids)"
for p in $pids; do wait $p; done
for w in $workers; do note "$(cat /tmp/stress.$w 2>/dev/null || echo "$w: no report")"; done
if contains "$workers" stressng; then
    if [ -s /tmp/stress-ng.ran.log ]; then
        sed 's/^/  | /' /tmp/stress-ng.ran.log | tail -n 4
    else
        sed 's/^/  | /' /tmp/stress-ng.log | tail -n 4
        fail "stress-ng did not run its cpu-online stressor in any of its starts"
    fi
fi
if [ -n "$MOVED" ]; then
    kill -0 $MOVED 2>/dev/null || fail "the task moved between cpusets ($MOVED) died"
    kill $MOVED; wait $MOVED 2>/dev/null
    cgroup_remove $CG/stress-a $CG/stress-b || fail "$CGROUP_ERR"
fi
note "online after the stress: $(rd $SYS/online), smt/control $(smt_control)"

# every CPU back online: smt on, one batch, then per CPU what is left
[ "$(smt_control)" = off ] && echo on >$SYS/smt/control
kwrite $SYS/online "$(compress $H)"
restore_all_online
assert_all_online "every CPU back online after the stress"
have_binaries && { daemon_alive && note "cpuhpd still running" || note "cpuhpd is NOT running any more (see its log)"; }

n=$(( $(splat_count "$PAT") - pre ))
dmesg | grep -E 'cpu_(down|up)_mask' | tail -n 5 | sed 's/^/  dmesg: /'
if [ "$n" != 0 ]; then
    splat_show $((pre + 1)) "$PAT"
    fail "$n splat line(s) in dmesg after the stress: $(splat_first $((pre + 1)) "$PAT")"
fi
echo "  ok: no WARNING/BUG/lockdep report in dmesg"
if [ $lockdep_on = 1 ]; then
    dl=$(awk '/debug_locks/ { print $2 }' /proc/lockdep_stats)
    assert_eq "$dl" 1 "lockdep still enabled (debug_locks)"
fi
exit 0
