#!/bin/sh
# bulk-dlpush: no SCHED_DEADLINE task is pushed onto a CPU that an offline batch has
# deactivated but not yet taken down ("pending"), as none is onto a CPU the per-CPU path
# takes down (it leaves the root domain's cpudl free set one grace period after
# cpu_active_mask). dl-push (tests/vm/tools/dl-push.c) runs deadline task A spinning on
# S and deadline task B, allowed on S and X, waking every 2 ms on X. The batch takes
# every SMT secondary down and then X (the kernel's order: secondaries first), so X is
# pending while they go. A wake-up of B then cannot stay on X (inactive) and falls back
# to S behind A, whose deadline is earlier; it must not be pushed back to the pending X.
# Needs DEADLINE admission off for the run (sched_rt_runtime_us = -1, restored after):
# with it on, a deadline task's affinity must span its root domain.
# Red on the series before "Push and pull nothing to an inactive CPU" (6.1 8/8, 6.12
# 10/10): find_later_rq() took X from the cpudl free set, which a batch CPU leaves only
# at its own teardown. Green after it.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v dl-push >/dev/null || skip "dl-push (tests/vm/tools/dl-push.c) is not in the initramfs"
assert_all_online "start"
H=$(hotpluggable)
S2=$(inter "$H" "$(smt_secondaries)")
P=$(minus "$H" "$S2")
[ $(count $P) -ge 2 ] || skip "needs 2 hotpluggable SMT primaries"
[ -n "$S2" ] || skip "needs SMT secondaries to take down before X"
X=$(first $P)
SRC=$(last $P)
BATCH=$(compress $S2 $X)
RT=/proc/sys/kernel/sched_rt_runtime_us
rt_was=$(cat $RT)
echo -1 >$RT || skip "cannot turn DEADLINE admission off ($RT = -1)"
trap "echo $rt_was >$RT" EXIT
note "batch {$BATCH}: the secondaries, then cpu$X (B's CPU); A on cpu$SRC"
field() { kv_field "$1" "$out"; }
# One batch leaves cpu$X pending for as long as the secondaries take to go down: on a
# loaded TCG host that can be too short for 10 of B's wake-ups (CI once counted 8).
# Repeat the batch, up to 5 times, until 10 wake-ups during batches are counted.
wakes=0 on_x=0 round=0
while [ $wakes -lt 10 ] && [ $round -lt 5 ]; do
    round=$((round + 1))
    start_ready /tmp/dlpush.ready /tmp/dlpush.out dl-push $X $SRC /tmp/dlpush.ready ||
        fail "round $round: dl-push did not start: $(cat /tmp/dlpush.out)"
    kwrite $SYS/offline "$BATCH"
    rm -f /tmp/dlpush.ready
    wait $BG_PID; rc=$?
    out=$(cat /tmp/dlpush.out)
    echo "  | round $round: $out"
    [ "$KW" = ok ] || fail "round $round: offline $BATCH: $KW"
    [ $rc = 0 ] || fail "round $round: dl-push exited with $rc: $out"
    [ "$(field b_on_cpu_before)" -gt 0 ] ||
        fail "round $round: B never ran on cpu$X before the batch: the setup did not hold"
    wakes=$((wakes + $(field b_wakes_after)))
    on_x=$((on_x + $(field b_on_cpu_after)))
    kwrite_ok $SYS/online "$BATCH" "round $round: online $BATCH"
done
[ $wakes -ge 10 ] || fail "B woke only $wakes times during $round batches: too few to tell"
[ $on_x = 0 ] || fail "B woke $on_x of $wakes times on the pending cpu$X (pushed there from cpu$SRC)"
echo "  ok: none of B's $wakes wake-ups during $round batch(es) ran on the pending cpu$X"
assert_all_online "end"
exit 0
