#!/bin/sh
# bulk-affinity: a batch going offline breaks no task's affinity to a CPU it does not take
# down. Tasks pinned with taskset, each waking every few ms (a usleep loop: the wake-ups
# while the batch runs are what matters), to K, the last CPU of the batch in the kernel's
# order, and to L, a CPU outside the batch. The batch stops before K: (1) a failure
# injected with cpuN/hotplug/fail (sched:active) on the second CPU of the order, (2) the
# writer killed with SIGKILL once the first CPU went offline. After each, K is online
# and both tasks must still have exactly their CPU in Cpus_allowed_list, and the kernel
# log must not say "no longer affine to cpuK". (3) A task pinned to a CPU that the batch
# does take down is treated as on the per-CPU path: it lives on, on an online CPU.
# Series v2 deactivated every CPU of the batch up front, so the task pinned to K was
# re-affined by select_fallback_rq() at its first wake-up and kept the wide mask.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
H=$(hotpluggable)
[ $(count $H) -ge 4 ] || skip "needs 4 hotpluggable CPUs"
L=$(last $H)
B=$(minus "$H" "$L")
BL=$(compress $B)
ORD=$(kernel_order offline "$B")
K=$(last $ORD)
F=$(nth 1 $ORD)
note "batch {$BL}, kernel order {$ORD}: task pinned to cpu$K (last of the batch) and to cpu$L (outside)"

PIDS=""
cleanup() { [ -n "$PIDS" ] && kill $PIDS 2>/dev/null; PIDS=""; }
# pinned_task CPU: a task pinned to CPU that wakes up every 2 ms; its pid in TASK.
pinned_task() {
    local i=0
    taskset -c "$1" sh -c 'while :; do usleep 2000; done' &
    TASK=$!
    PIDS="$PIDS $TASK"
    until grep -q "^Cpus_allowed_list:.$1\$" /proc/$TASK/status 2>/dev/null; do
        i=$((i + 1)); [ $i -le 50 ] || { cleanup; fail "task $TASK never got affinity $1"; }
        usleep 100000
    done
}
allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$1/status 2>/dev/null; }
affine_msgs() { dmesg | grep -c "no longer affine to cpu$1\$"; }
# check_kept CTX: K online, both tasks alive with exactly their CPU, no "no longer affine"
check_kept() {
    cpu_is_online $K || { cleanup; fail "$1: cpu$K went offline"; }
    for t in "$TK $K" "$TL $L"; do
        set -- $t
        kill -0 $1 2>/dev/null || { cleanup; fail "$CTX: task $1 (pinned to cpu$2) died"; }
        a=$(allowed $1)
        [ "$a" = "$2" ] || { cleanup; fail "$CTX: task $1 pinned to cpu$2 has Cpus_allowed_list $a"; }
    done
    n=$(affine_msgs $K)
    [ "$n" = "$MSGS" ] || { dmesg | grep "no longer affine to cpu$K\$" | tail -n 2 | sed 's/^/  dmesg: /'
        cleanup; fail "$CTX: the kernel broke the affinity to cpu$K ($((n - MSGS)) 'no longer affine')"; }
    echo "  ok: $CTX: cpu$K online; task $TK still on {$K}, task $TL still on {$L}"
}

pinned_task $K; TK=$TASK
pinned_task $L; TL=$TASK

# 1. the batch fails at its second CPU
st=$(hotplug_state_num sched:active)
[ -n "$st" ] || { cleanup; fail "no sched:active in $SYS/hotplug/states"; }
MSGS=$(affine_msgs $K)
echo $st >$SYS/cpu$F/hotplug/fail
kwrite $SYS/offline "$BL"
echo -1 >$SYS/cpu$F/hotplug/fail 2>/dev/null
[ "$KW" = EAGAIN ] || { cleanup; fail "write $BL > offline with cpu$F failing: $KW, expected EAGAIN"; }
dmesg | grep 'cpu_down_mask' | tail -n 1 | sed 's/^/  dmesg: /'
CTX="failed batch"; check_kept "$CTX"
kwrite $SYS/online "$BL"; [ "$KW" = ok ] || { cleanup; fail "write $BL > online: $KW"; }

# 2. the writer is killed once the first CPU went offline (see bulk-interrupt)
try=1
while :; do
    MSGS=$(affine_msgs $K)
    write_killed_after_first_change $SYS/offline "$BL" cpu_down_mask
    [ $STOPPED = 1 ] && cpu_is_online $K && break
    note "the batch reached cpu$K before the signal; trying again"
    kwrite $SYS/online "$BL"
    # a batch that reached K may have broken the affinity legitimately: pin again
    cleanup; pinned_task $K; TK=$TASK; pinned_task $L; TL=$TASK
    try=$((try + 1))
    [ $try -le 5 ] || { cleanup; fail "could not interrupt the batch before cpu$K in 5 tries"; }
done
CTX="killed batch"; check_kept "$CTX"
kwrite $SYS/online "$BL"; [ "$KW" = ok ] || { cleanup; fail "write $BL > online: $KW"; }
cleanup

# 3. tasks pinned to CPUs that the batch takes down: as on the per-CPU path, they are
# moved off (select_fallback_rq()) and live on. One wakes up every 2 ms pinned to the
# batch's first CPU; one spins, pinned to every CPU of the batch, so that it is pushed
# from one dying CPU of the batch to the next (a v3 draft hung here: __migrate_task()
# refused the inactive CPU that select_fallback_rq() chose).
D=$(first $ORD)
pinned_task $D; TD=$TASK
taskset -c "$BL" sh -c 'while :; do :; done' &
TS=$!; PIDS="$PIDS $TS"
i=0
until grep -q "^Cpus_allowed_list:.$BL\$" /proc/$TS/status 2>/dev/null; do
    i=$((i + 1)); [ $i -le 50 ] || { cleanup; fail "task $TS never got affinity $BL"; }
    usleep 100000
done
kwrite $SYS/offline "$BL"; [ "$KW" = ok ] || { cleanup; fail "write $BL > offline: $KW"; }
usleep 200000
for t in "$TD $D" "$TS $BL"; do
    set -- $t
    kill -0 $1 2>/dev/null || { cleanup; fail "task $1 pinned to cpu$2 died"; }
    on=$(awk '{ sub(/^.*\) /, ""); print $37 }' /proc/$1/stat)
    cpu_is_online $on || { cleanup; fail "task $1 (pinned to $2) is on offline cpu$on"; }
    echo "  ok: task $1 pinned to {$2} (taken down) lives on, on cpu$on, Cpus_allowed_list $(allowed $1)"
done
kwrite $SYS/online "$BL"; [ "$KW" = ok ] || { cleanup; fail "write $BL > online: $KW"; }
cleanup
assert_all_online "end"
exit 0
