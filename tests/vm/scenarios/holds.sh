#!/bin/sh
# holds: on a real kernel, an orchestrator holds the last package offline while its work runs
# (`cpuctl offline package:P -- SCRIPT`). Meanwhile another client's `cpuctl online
# package:P` is refused (org.cpuhpd1.Error.Held, naming the holder and why) and changes
# nothing, and `cpuctl holds` lists the hold; when the script exits (status 3) the package
# is back online and cpuctl exits 3. Then a holder killed with SIGKILL mid-hold: the hold
# ends with its fd and the package comes back, while the command it ran lives on.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
last_package_or_skip

# The orchestrator's work: look at the machine and at what another client may do.
{
    echo "cat $SYS/offline >/tmp/holds.offline"
    echo "cpuctl --timeout $CPUCTL_TIMEOUT online package:$PK >/tmp/holds.online.out 2>/tmp/holds.online.err"
    echo 'echo $? >/tmp/holds.online.rc'
    echo "cat $SYS/offline >/tmp/holds.offline.after"
    echo "cpuctl --timeout $CPUCTL_TIMEOUT holds >/tmp/holds.list 2>&1"
    echo "exit 3"
} >/tmp/holds-work.sh
cc offline package:$PK --who orchestrator --why "live update" -- sh /tmp/holds-work.sh
assert_rc 3 "cpuctl offline package:$PK -- work (the work's status)"
echo "  while held: offline=$(cat /tmp/holds.offline)"
assert_eq "$(expand "$(cat /tmp/holds.offline)")" "$P" "offline CPUs while held"
echo "  another client's online package:$PK:"
sed 's/^/  ! /' /tmp/holds.online.err
assert_eq "$(cat /tmp/holds.online.rc)" 1 "another client's online package:$PK: exit code"
grep -q "org.cpuhpd1.Error.Held" /tmp/holds.online.err || fail "the refusal is not Held"
grep -q "by orchestrator (live update), offline since" /tmp/holds.online.err ||
    fail "the refusal does not name the holder and why"
assert_eq "$(cat /tmp/holds.offline.after)" "$(cat /tmp/holds.offline)" "offline CPUs after the refused online"
sed 's/^/  | /' /tmp/holds.list
grep -q "orchestrator.*live update" /tmp/holds.list || fail "cpuctl holds does not list the hold"
grep -q "released; restored" $ERR || fail "cpuctl did not report the restore"
assert_all_online "after the work ended"
grep "hold [0-9]* by orchestrator" $DAEMON_LOG | sed 's/^/  | /'

# A holder killed with SIGKILL.
rm -f /tmp/holds.pid
echo "+ cpuctl offline package:$PK -- sh -c 'echo \$\$ >/tmp/holds.pid; exec sleep 600' &"
cpuctl --timeout $CPUCTL_TIMEOUT offline package:$PK -- sh -c 'echo $$ >/tmp/holds.pid; exec sleep 600' \
    >/tmp/holds.kill.out 2>&1 &
holder=$!
i=0; while [ ! -s /tmp/holds.pid ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s /tmp/holds.pid ] || fail "the held command never started: $(cat /tmp/holds.kill.out)"
assert_offline_exactly "$P" "while the killed holder's command runs"
kill -KILL $holder
t0=$(now_ms)
i=0; while [ -n "$(cat $SYS/offline)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
note "package $PK back $(($(now_ms) - t0)) ms after SIGKILL"
assert_all_online "after the holder was killed"
command=$(cat /tmp/holds.pid)
kill -0 "$command" 2>/dev/null || fail "the command died with its holder (it should not inherit the hold)"
kill "$command"
grep -q "ended: its file descriptor was closed; restoring" $DAEMON_LOG ||
    fail "the daemon log does not say the hold ended with its fd"
