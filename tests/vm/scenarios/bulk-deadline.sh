#!/bin/sh
# bulk-deadline: SCHED_DEADLINE admission for a batch going offline. DL_TASKS (8) tasks,
# each reserving 8 ms every 10 ms (0.8 CPU) with util-linux chrt, asleep (a deadline
# task may not fork): the reservations count, not what they run. Deadline admission leaves each CPU
# 0.95 of its time (sched_rt_runtime_us / sched_rt_period_us; on 6.12 the per-CPU fair
# server takes 0.05 of it). A batch that would leave the reservations more than the
# remaining CPUs can hold is refused with EBUSY and changes nothing, as one batch: the
# per-CPU path would take CPUs down one by one until the first refusal. A batch the
# remaining CPUs can hold goes through, and the tasks keep running.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
CHRT=/usr/bin/chrt-util-linux
[ -x $CHRT ] || skip "util-linux chrt (SCHED_DEADLINE) not in the initramfs"
assert_all_online "start"
H=$(hotpluggable)
N=$(count $PRESENT)
[ $N -ge 16 ] || skip "needs 16 CPUs"
TASKS=${DL_TASKS:-8}
rt_runtime=$(cat /proc/sys/kernel/sched_rt_runtime_us)
rt_period=$(cat /proc/sys/kernel/sched_rt_period_us)
note "$TASKS deadline tasks of 8/10 ms = $((TASKS * 8 / 10)).$((TASKS * 8 % 10)) CPUs; rt runtime/period $rt_runtime/$rt_period"
PIDS=""
cleanup() { [ -n "$PIDS" ] && kill $PIDS 2>/dev/null; for p in $PIDS; do wait $p 2>/dev/null; done; PIDS=""; }
i=0
while [ $i -lt $TASKS ]; do
    $CHRT -d -T 8000000 -D 10000000 -P 10000000 0 sleep 1000 2>>/tmp/chrt.err &
    PIDS="$PIDS $!"
    i=$((i + 1))
done
usleep 300000
for p in $PIDS; do
    kill -0 $p 2>/dev/null || { sed 's/^/  | /' /tmp/chrt.err; cleanup; fail "deadline task $p did not start"; }
    pol=$(awk '/^policy/ { print $3 }' /proc/$p/sched 2>/dev/null)
    [ "$pol" = 6 ] || { cleanup; fail "task $p has policy '$pol', not SCHED_DEADLINE (6)"; }
done
echo "  ok: $TASKS SCHED_DEADLINE tasks admitted on $N CPUs"

# too much: keep 6 CPUs (0.95 x 6 = 5.7 < 6.4 reserved)
TOO=$(compress $(last_n 10 $H))
before=$(rd $SYS/online)
kwrite $SYS/offline "$TOO"
[ "$KW" = EBUSY ] || { cleanup; fail "offline $TOO with $TASKS deadline tasks of 0.8: $KW, expected EBUSY"; }
assert_eq "$(rd $SYS/online)" "$before" "online after the refused batch {$TOO}"
for c in $(expand "$TOO"); do cpu_is_online $c || { cleanup; fail "cpu$c went offline in the refused batch"; }; done
echo "  ok: the batch {$TOO} was refused with EBUSY and changed nothing"

# enough: keep 8 CPUs (0.95 x 8 = 7.6 >= 6.4)
FIT=$(compress $(last_n 8 $H))
kwrite $SYS/offline "$FIT"
[ "$KW" = ok ] || { cleanup; fail "offline $FIT with $TASKS deadline tasks of 0.8: $KW, expected ok"; }
for p in $PIDS; do kill -0 $p 2>/dev/null || { cleanup; fail "deadline task $p died in the batch"; }; done
echo "  ok: the batch {$FIT} went through; the $TASKS deadline tasks live on"
kwrite $SYS/online "$FIT"; [ "$KW" = ok ] || { cleanup; fail "online $FIT: $KW"; }
cleanup
assert_all_online "end"
exit 0
