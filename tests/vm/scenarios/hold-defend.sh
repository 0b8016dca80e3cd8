#!/bin/sh
# hold-defend: on a real kernel, `cpuctl offline C -- COMMAND` holds CPU C offline while a
# udev-like writer writes 1 to its online file, three times: each time the kernel brings it
# online, the daemon sees the uevent, puts it back offline, logs who held it and what
# changed, and emits HoldViolated (seen with dbus-monitor). Then cpuhpd is killed with
# SIGKILL and started again (hold_grace_s: 3) under the running command: cpuctl re-attaches
# on its own when org.cpuhpd1 comes back, the hold outlives the grace period, C stays
# offline, and when the command ends the hold is released and C comes back.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
set -- $(hotpluggable)
[ $# -ge 1 ] || skip "no hotpluggable CPU"
c=$(last "$@")
daemon_restart_with "hold_grace_s: 3"

mon=""
if command -v dbus-monitor >/dev/null 2>&1; then
    dbus-monitor --system "type='signal',interface='org.cpuhpd1.Manager',member='HoldViolated'" \
        >/tmp/hd.mon 2>&1 &
    mon=$!
fi

rm -f /tmp/hd.pid /tmp/hd.stop
echo "+ cpuctl offline $c --who defend-test -- sh -c '... until /tmp/hd.stop' &"
cpuctl --timeout $CPUCTL_TIMEOUT offline $c --who defend-test --why "guest test" -- \
    sh -c 'echo $$ >/tmp/hd.pid; while [ ! -e /tmp/hd.stop ]; do sleep 0.1; done; exit 0' \
    >/tmp/hd.out 2>&1 &
holder=$!
i=0; while [ ! -s /tmp/hd.pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s /tmp/hd.pid ] || fail "the held command never started: $(cat /tmp/hd.out)"
assert_offline_exactly "$c" "while held"

# The outside writer: 1 into cpuC/online, then wait (bounded) until it is offline again.
n=0
while [ $n -lt 3 ]; do
    n=$((n + 1))
    t0=$(now_ms)
    echo 1 >$SYS/cpu$c/online || fail "the outside write $n of 1 to cpu$c/online failed"
    echo "  outside write $n: cpu$c/online=$(rd $SYS/cpu$c/online) after the write"
    i=0; while cpu_is_online $c && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    cpu_is_online $c && fail "cpu$c was not put back offline within 10 s of outside write $n"
    note "outside write $n: cpu$c put back offline $(($(now_ms) - t0)) ms after it"
done
grep -q "came online without cpuhpd" $DAEMON_LOG || fail "the daemon did not log the violation"
grep "without cpuhpd" $DAEMON_LOG | sed 's/^/  | /'
if [ -n "$mon" ]; then
    i=0; while [ "$(grep -c 'member=HoldViolated' /tmp/hd.mon)" -lt 3 ] && [ $i -lt 50 ]; do
        sleep 0.1; i=$((i + 1))
    done
    kill $mon 2>/dev/null
    seen=$(grep -c 'member=HoldViolated' /tmp/hd.mon)
    grep -A8 'member=HoldViolated' /tmp/hd.mon | tail -n 9 | sed 's/^/  | /'
    assert_eq "$seen" 3 "HoldViolated signals seen"
    grep -q "string \"restore\"" /tmp/hd.mon || fail "HoldViolated does not say restore"
else
    note "no dbus-monitor in the guest: HoldViolated not checked here (the log is)"
fi

# The daemon killed and started again under the running command.
pid=$(daemon_pid)
echo "+ kill -KILL $pid (cpuhpd), then start it again"
kill -KILL "$pid"
rm -f $PIDFILE
i=0; while bus_has_owner && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
daemon_start "$(daemon_conf)" || fail "cpuhpd did not start after the kill"
grep -q "kept across the restart" $DAEMON_LOG || fail "the restarted daemon did not keep the hold"
i=0; while ! grep -q "re-attached" /tmp/hd.out && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "re-attached" /tmp/hd.out || fail "cpuctl did not re-attach: $(cat /tmp/hd.out)"
sed 's/^/  | /' /tmp/hd.out
# Past the grace period (3 s): still held, the command still runs.
sleep 4
assert_offline_exactly "$c" "4 s after the restart (grace period 3 s)"
kill -0 "$(cat /tmp/hd.pid)" 2>/dev/null || fail "the command died across the restart"
cpuctl --timeout $CPUCTL_TIMEOUT holds 2>&1 | sed 's/^/  | /'
cpuctl --timeout $CPUCTL_TIMEOUT holds 2>&1 | grep -q defend-test || fail "cpuctl holds does not list the hold"
grep -q "did not re-attach" $DAEMON_LOG && fail "the daemon ended the re-attached hold"

touch /tmp/hd.stop
wait $holder
RC=$?
assert_rc 0 "cpuctl offline $c -- COMMAND (the command's status)"
grep -q "released; restored" /tmp/hd.out || fail "cpuctl did not report the restore: $(cat /tmp/hd.out)"
assert_all_online "after the command ended"
daemon_restart_default
exit 0
