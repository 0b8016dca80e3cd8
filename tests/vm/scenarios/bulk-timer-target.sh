#!/bin/sh
# bulk-timer-target: no timer goes to a CPU that a batch has taken down. hrt_target
# (kernel/test-modules/hrt_target.c) ticks a pinned timer on an idle CPU (home) every
# 100 us; each tick starts an unpinned timer, which goes to the CPU
# get_nohz_timer_target() picks, and notes whether that CPU was active and its hrtimer
# base online. A batch takes every other hotpluggable CPU down and up, ROUNDS times
# (cpuhpd.timer_rounds, default 10): the sched domains still span its CPUs until its
# end. Red on both series before "Place no timer on an inactive CPU" (6.12: timers on
# offline bases and the enqueue_hrtimer() WARNING; 6.1: on inactive CPUs).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
MOD=/lib/cpuhpd-modules/hrt_target.ko
[ -f $MOD ] || skip "no hrt_target module in the initramfs"
assert_all_online "start"
H=$(hotpluggable)
[ $(count $H) -ge 4 ] || skip "needs 4 hotpluggable CPUs"
HOME=0
contains "$H" $HOME && skip "cpu$HOME, where the timers tick, is hotpluggable here"
ME=$(last $H)
BATCH=$(compress $(minus "$H" "$ME"))
ROUNDS=${TIMER_ROUNDS:-10}
taskset -p -c $ME $$ >/dev/null || fail "cannot move the script to cpu$ME"
P=/sys/module/hrt_target/parameters
trap "rmmod hrt_target 2>/dev/null" EXIT
insmod $MOD home=$HOME period_us=100 || fail "insmod $MOD failed"
note "timers ticking on cpu$HOME; batch {$BATCH} x $ROUNDS from cpu$ME"
i=0
while [ $i -lt $ROUNDS ]; do
    i=$((i + 1))
    kwrite_ok $SYS/offline "$BATCH" "round $i: offline $BATCH"
    kwrite_ok $SYS/online "$BATCH" "round $i: online $BATCH"
done
res="starts $(rd $P/starts) remote $(rd $P/remote) inactive_cpu $(rd $P/inactive_cpu) offline_base $(rd $P/offline_base) last_offline_cpu $(rd $P/last_offline_cpu)"
echo "  | $res"
[ "$(rd $P/remote)" -gt 0 ] || fail "no timer went to another CPU: cpu$HOME was never idle, nothing tested ($res)"
[ "$(rd $P/offline_base)" = 0 ] || fail "$(rd $P/offline_base) timer(s) went to an offline hrtimer base ($res)"
[ "$(rd $P/inactive_cpu)" = 0 ] || fail "$(rd $P/inactive_cpu) timer(s) went to an inactive CPU ($res)"
assert_all_online "end"
exit 0
