#!/bin/sh
# affinity: the kernel rewrites the affinity of a task pinned only to a CPU going offline
# ("no longer affine") and moves an IRQ pinned there; cpuhpd records both before the batch
# and gives them back once the CPU is back: after an atomic rollback (a failure injected with
# cpuN/hotplug/fail), a hold's end, a profile revert, and recovery after a SIGKILL of the
# daemon mid-batch. The task is a busy loop (runnable: the kernel moves it off the dying CPU
# at once; a sleeping one would keep its mask until it wakes, and be reported "intact").
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
H=$(hotpluggable)
n=$(count $H)
[ $n -ge 4 ] || skip "needs 4 hotpluggable CPUs, have $n"

# Two CPUs, A taken before B (per-cpu order: ask the plan).
M="$(compress $(nth $((n - 2)) $H) $(nth $((n - 1)) $H))"
cc --json plan offline --strategy per-cpu "$M"
set -- $J_ORDER
A=$1 B=$2
[ -n "$B" ] || fail "plan offline $M: order '$J_ORDER'"
note "A=$A (taken first), B=$B"

taskset -c "$A" sh -c 'while :; do :; done' &
TASK=$!
i=0
until grep -q "^Cpus_allowed_list:.$A\$" /proc/$TASK/status 2>/dev/null &&
    [ "$(cat /proc/$TASK/comm 2>/dev/null)" = sh ]; do
    i=$((i + 1)); [ $i -le 50 ] || fail "task $TASK never got affinity $A"; usleep 100000
done
task_cpus() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$TASK/status; }

IRQ=
for d in /proc/irq/[0-9]*; do
    IRQ_OLD=$(cat $d/smp_affinity_list 2>/dev/null) || continue
    if echo $A >$d/smp_affinity_list 2>/dev/null; then IRQ=${d##*/}; break; fi
done
[ -n "$IRQ" ] && note "irq $IRQ ($(ls -F /proc/irq/$IRQ | sed -n 's,/$,,p' | tr '\n' ' ')) on CPU $A, was $IRQ_OLD" ||
    note "no IRQ here takes an affinity of CPU $A (none movable): IRQs not checked"
irq_cpus() { cat /proc/irq/$IRQ/smp_affinity_list; }
cleanup() { kill $TASK 2>/dev/null; [ -n "$IRQ" ] && echo "$IRQ_OLD" >/proc/irq/$IRQ/smp_affinity_list 2>/dev/null; }
afail() { cleanup; fail "$@"; }

# check WHEN: the task (and IRQ) have their affinity back and cpuctl/the log said so
check_back() {
    assert_eq "$(task_cpus)" "$A" "$1: task $TASK affinity"
    [ -n "$IRQ" ] && assert_eq "$(irq_cpus)" "$A" "$1: irq $IRQ affinity"
    return 0
}

# --- rollback
STATES=$SYS/hotplug/states
if [ -e $SYS/cpu$B/hotplug/fail ] && [ -r $STATES ]; then
    FS=
    for name in sched:active perf:online workqueue:online; do
        num=$(hotplug_state_num $name)
        [ -n "$num" ] || continue
        echo $num >$SYS/cpu$B/hotplug/fail 2>/dev/null || continue
        if echo 0 >$SYS/cpu$B/online 2>/dev/null; then echo 1 >$SYS/cpu$B/online; continue; fi
        FS=$num; break
    done
    [ -n "$FS" ] || afail "no hotplug state whose injected failure fails an offline"
    echo $FS >$SYS/cpu$B/hotplug/fail
    dmesg -c >/dev/null
    cc offline --strategy per-cpu "$M"
    echo -1 >$SYS/cpu$B/hotplug/fail
    assert_rc 1 "atomic offline $M with cpu$B failing"
    assert_all_online "after the rollback"
    dmesg | grep -q "no longer affine to cpu$A" && note "kernel: $(dmesg | grep 'no longer affine' | tail -n1)"
    grep -q "^affinity: task $TASK (sh) CPU $A: restored" $OUT || afail "the rollback's result does not say task $TASK was restored"
    check_back "after the rollback"
    grep "batch [0-9]*: affinity of" $DAEMON_LOG | tail -n 2 | sed 's/^/  | /'
else
    note "no cpuN/hotplug/fail: rollback not checked"
fi

# --- a hold's end
cc offline "$A" -- sh -c "sed -n 's/^Cpus_allowed_list:/while held:/p' /proc/$TASK/status"
assert_rc 0 "offline $A -- (hold)"
grep -q "while held:.*" $OUT || afail "the held command did not run"
grep -q "while held:[[:space:]]*$A\$" $OUT && afail "task $TASK kept CPU $A while it was offline"
assert_all_online "after the hold"
check_back "after the hold's restore"
grep "affinity of task $TASK" $DAEMON_LOG | tail -n 1 | sed 's/^/  | /'

# --- a profile revert
daemon_restart_with "profiles: {pin: {offline: \"$A\"}}"
cc profile apply pin
assert_rc 0 "profile apply pin"
[ "$(task_cpus)" = "$A" ] && afail "task $TASK kept CPU $A while the profile took it"
cc --json profile revert
assert_rc 0 "profile revert"
grep -q "\"status\":\"restored\"" $OUT || afail "the revert's JSON has no restored affinity entry"
assert_all_online "after the revert"
check_back "after the profile revert"
daemon_restart_default

# --- SIGKILL mid-batch, then recovery
pid=$(daemon_pid)
cpuctl --timeout $CPUCTL_TIMEOUT offline --strategy per-cpu "$M" >/tmp/affinity-crash.out 2>&1 &
caller=$!
wait_for_first_offline || afail "no CPU went offline"
kill -KILL "$pid"
wait "$caller" 2>/dev/null
left=0
[ -s /run/cpuhpd/batch.journal ] && left=1
note "killed with offline={$(rd $SYS/offline)}, journal left: $left, task on $(task_cpus)"
rm -f $PIDFILE
i=0; while bus_has_owner && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
daemon_start $CONF || afail "cpuhpd did not start after the kill"
if [ $left = 1 ]; then
    assert_all_online "after recovery"
    check_back "after recovery"
    grep "recovery:" $DAEMON_LOG | tail -n 3 | sed 's/^/  | /'
else
    # The batch ended before the kill: a plain online gives back (restore_affinity).
    note "the batch had ended before the kill; recovery had nothing to do"
    cc online "$M"
    assert_rc 0 "online $M"
    assert_all_online "after online $M"
    check_back "after the online (ledger kept across the restart)"
fi
cleanup
exit 0
