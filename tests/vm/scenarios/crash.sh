#!/bin/sh
# crash: cpuhpd killed with SIGKILL in the middle of `cpuctl offline all` (per-CPU writes,
# so that there is a middle), then started again: the batch journal's recovery brings every
# CPU back online and rcu_expedited back to its old value before the name is taken, and
# `cpuctl status` tells what it found and did.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
RE=/sys/kernel/rcu_expedited
[ -w $RE ] || skip "no writable $RE"
H=$(hotpluggable)
n=$(count $H)
[ $n -ge 4 ] || skip "needs 4 hotpluggable CPUs, have $n"
orig=$(cat $RE)
echo 0 >$RE

echo "+ cpuctl offline --strategy per-cpu all &"
cpuctl --timeout $CPUCTL_TIMEOUT offline --strategy per-cpu all >/tmp/crash.out 2>&1 &
caller=$!
# Kill once some but not all CPUs are offline (a CPU takes 100-300 ms under TCG).
i=0
while [ $i -lt 1500 ]; do
    off=$(expand "$(rd $SYS/offline)")
    [ -n "$off" ] && break
    sleep 0.02; i=$((i + 1))
done
[ -n "$off" ] || fail "no CPU went offline within 30 s"
expedited=$(cat $RE)
kill -KILL "$(daemon_pid)"
wait "$caller" 2>/dev/null
sleep 0.2 # the kernel finishes the write in flight; the process is gone after it
found=$(expand "$(rd $SYS/offline)")
note "killed with offline={$(compress $found)}, rcu_expedited=$expedited"
[ "$expedited" = 1 ] || fail "rcu_expedited was '$expedited' during the batch, expected 1"
[ "$(count $found)" -lt "$n" ] || fail "the batch had finished before the kill: nothing to recover"
[ "$(cat $RE)" = 1 ] || fail "rcu_expedited is '$(cat $RE)' after the kill, expected the batch's 1"
[ -s /run/cpuhpd/batch.journal ] || fail "no batch journal in /run/cpuhpd after the kill"
rm -f $PIDFILE
i=0; while bus_has_owner && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

daemon_start $CONF || fail "cpuhpd did not start after the kill"
assert_all_online "after recovery"
assert_eq "$(cat $RE)" 0 "rcu_expedited after recovery"
[ ! -e /run/cpuhpd/batch.journal ] || fail "the journal is still there after recovery"
grep -q "recovery: batch [0-9]* (offline .* via per-cpu) was interrupted" $DAEMON_LOG ||
    fail "no recovery line in the daemon log"
grep "recovery:" $DAEMON_LOG | tail -n 1 | sed 's/^/  | /'
cpuctl --timeout 60 --json status >/tmp/crash.status 2>&1
assert_eq "$(jq -r .last_recovery.outcome /tmp/crash.status)" recovered "cpuctl status: last recovery"
cpuctl --timeout 60 status | grep "last recovery:" | sed 's/^/  | /'
echo $orig >$RE
exit 0
