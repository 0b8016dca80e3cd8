#!/bin/sh
# bulk-rtpush: a CPU that an offline batch has deactivated but not yet taken down
# ("pending") keeps its RT push, as an active CPU does. rt-push (tests/vm/tools/rt-push.c)
# spins an RT task L (SCHED_FIFO 10, any CPU) on X, with an RT task H (FIFO 20) pinned
# to X and asleep, and an RT hog (FIFO 30) on Y. The batch {Y,X} takes Y down first (an
# SMT sibling, or a lower CPU); Y's hotplug thread waits behind the hog for the 50 ms a
# second that RT throttling (6.1) or the fair server (6.12) leave it, so for most of a
# second no CPU of the batch runs stop_machine() (after which every CPU pulls RT tasks).
# Once X is inactive (sched_setaffinity() to {X} refused), H wakes on X and preempts L.
# The switch to H pushes L to a CPU running something of lower priority before H runs
# (a balance callback of the switch), so the CPU of L that H reads first must not be X.
# Red on v3 before balance_push moved to each CPU's own teardown (with balance_push set on
# every CPU of the batch from its start, queue_balance_callback() drops the push): L stayed
# queued behind H for H's whole 500 ms, 2 of 2 runs on each kernel. Green after it. (Its
# first version started L before H was SCHED_FIFO: on 6.1, with no fair server, H then
# waited behind the spinning L for RT throttling, until after the batch, and never
# preempted L on X.)
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v rt-push >/dev/null || skip "rt-push (tests/vm/tools/rt-push.c) is not in the initramfs"
assert_all_online "start"
H=$(hotpluggable)
[ $(count $H) -ge 4 ] || skip "needs 4 hotpluggable CPUs"
S=$(smt_secondaries)
P=$(minus "$H" "$S")
X=$(last $P)
Y=$(first $(inter "$H" "$S")); [ -n "$Y" ] || Y=$(first $H)
BATCH="$Y,$X"
note "batch {$BATCH}: cpu$Y (RT hog) down first, then cpu$X (L, H)"
start_ready /tmp/rtpush.ready /tmp/rtpush.out rt-push $X $Y /tmp/rtpush.ready ||
    fail "rt-push did not start L on cpu$X: $(cat /tmp/rtpush.out)"
kwrite $SYS/offline "$BATCH"
wait $BG_PID; rc=$?
out=$(cat /tmp/rtpush.out)
echo "  | $out"
[ "$KW" = ok ] || fail "offline $BATCH: $KW"
[ $rc = 0 ] || fail "rt-push exited with $rc: $out"
case "$out" in *"l_on_cpu_at_wake 1"*) ;; *) fail "L was not on cpu$X when H woke: $out" ;; esac
case "$out" in
*"l_pushed_at_preemption 1"*) echo "  ok: L was pushed off the pending cpu$X when H preempted it there" ;;
*) fail "L stayed on the pending cpu$X behind H (pinned there, higher priority) instead of being pushed: $out" ;;
esac
kwrite_ok $SYS/online "$BATCH" "online $BATCH"
assert_all_online "end"
exit 0
