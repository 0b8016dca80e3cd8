#!/bin/sh
# crash: cpuhpd killed with SIGKILL in the middle of `cpuctl offline all` (per-CPU writes,
# so that there is a middle), then started again: the batch journal's recovery brings every
# CPU back online and rcu_expedited back to its old value before the name is taken, and
# `cpuctl status` tells what it found and did.
. /cpuhpd-tests/lib.sh
need_rcu_scenario 4
orig=$ORIG_RE
echo 0 >$RE

pid=$(daemon_pid)
echo "+ cpuctl offline --strategy per-cpu all &"
cpuctl --timeout $CPUCTL_TIMEOUT offline --strategy per-cpu all >/tmp/crash.out 2>&1 &
caller=$!
# Kill as soon as a CPU is offline.
wait_for_first_offline || fail "no CPU went offline"
kill -KILL "$pid"
expedited=$(cat $RE)
journal_left=0
[ -s /run/cpuhpd/batch.journal ] && journal_left=1
wait "$caller" 2>/dev/null
found=$(expand "$(rd $SYS/offline)")
note "killed with offline={$(compress $found)}, rcu_expedited=$expedited, journal left: $journal_left"
[ $journal_left = 1 ] || fail "the batch had ended before the kill (no journal): nothing to recover"
[ "$expedited" = 1 ] || fail "rcu_expedited was '$expedited' after the kill, expected the batch's 1"
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
assert_eq "$(gojq -r .last_recovery.outcome /tmp/crash.status)" recovered "cpuctl status: last recovery"
cpuctl --timeout 60 status | grep "last recovery:" | sed 's/^/  | /'
echo $orig >$RE
exit 0
