#!/bin/sh
# topo-memory: package:N still resolves after package N went offline (its topology/
# directories are gone), also across a daemon restart (cpuhpd killed and started again).
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
P=$(protected_cpus)
pk=""
for p in $(packages); do [ -z "$(inter "$(cpus_of_pkg $p)" "$P")" ] && pk=$p; done
[ -n "$pk" ] || skip "every package holds a protected CPU"
PC=$(cpus_of_pkg $pk)
note "package $pk = {$(compress $PC)}"

cc --json offline package:$pk
assert_rc 0 "offline package:$pk"
assert_offline_exactly "$PC" "offline package:$pk"
[ ! -e $SYS/cpu$(first $PC)/topology/physical_package_id ] &&
    note "cpu$(first $PC)/topology is gone while offline (as expected)"
# the daemon still knows the offline CPUs' package
cc --json topology
assert_rc 0 "topology while package $pk is offline"
got=$(gojq -r "[.cpus[] | select(.package == $pk) | .cpu] | .[]" <$OUT | norm)
assert_eq "$got" "$PC" "topology: CPUs of package $pk while offline"
got=$(gojq -r "[.cpus[] | select(.package == $pk and .online == false) | .cpu] | .[]" <$OUT | norm)
assert_eq "$got" "$PC" "topology: offline CPUs of package $pk"
cc --json online package:$pk
assert_rc 0 "online package:$pk (remembered topology)"
assert_json_changed "$PC" "online package:$pk"
assert_all_online "online package:$pk"

# again, with a daemon restart while the package is offline
cc --json offline package:$pk
assert_rc 0 "offline package:$pk (2)"
assert_offline_exactly "$PC" "offline package:$pk (2)"
old=$(daemon_pid)
echo "+ kill cpuhpd ($old) and start it again"
daemon_stop
daemon_start || fail "cpuhpd did not restart"
[ "$(daemon_pid)" != "$old" ] || fail "daemon pid unchanged"
cc --json online package:$pk
assert_rc 0 "online package:$pk after a daemon restart"
assert_json_changed "$PC" "online package:$pk after restart"
assert_all_online "online package:$pk after restart"

# and with SIGKILL (no clean shutdown) while offline
cc --json offline package:$pk
assert_rc 0 "offline package:$pk (3)"
old=$(daemon_pid)
echo "+ kill -KILL cpuhpd ($old)"
kill -KILL $old; sleep 0.5
i=0; while bus_has_owner && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
rm -f $PIDFILE
daemon_start || fail "cpuhpd did not start after SIGKILL"
cc --json online package:$pk
assert_rc 0 "online package:$pk after SIGKILL + restart"
assert_all_online "online package:$pk after SIGKILL"
exit 0
