#!/bin/sh
# rcu: /sys/kernel/rcu_expedited holds its old value after every batch - a good one
# and a failed one (injected with cpuN/hotplug/fail) - for old values 0 and 1.
. /cpuhpd-tests/lib.sh
need_rcu_scenario 2
orig=$ORIG_RE
n=$N
x=$(nth $((n - 2)) $H); y=$(last $H)
state=$(sed -n 's/^ *\([0-9]*\): sched:active$/\1/p' $SYS/hotplug/states 2>/dev/null | head -n1)

for old in 0 1 0; do
    echo "-- rcu_expedited=$old"
    echo $old >$RE
    cc --json offline "$x,$y"
    assert_rc 0 "offline $x,$y"
    assert_eq "$(cat $RE)" $old "rcu_expedited after an offline batch"
    cc --json online "$x,$y"
    assert_rc 0 "online $x,$y"
    assert_eq "$(cat $RE)" $old "rcu_expedited after an online batch"
    assert_all_online "rcu_expedited=$old"
    if [ -n "$state" ] && [ -e $SYS/cpu$y/hotplug/fail ]; then
        # fail whichever CPU the daemon takes last
        cc --json plan offline "$x,$y"
        v=$(last $J_ORDER); [ -n "$v" ] || v=$y
        echo $state >$SYS/cpu$v/hotplug/fail
        cc --json offline "$x,$y"
        echo -1 >$SYS/cpu$v/hotplug/fail
        assert_rc 1 "offline $x,$y with cpu$v failing"
        assert_eq "$(cat $RE)" $old "rcu_expedited after a failed batch"
        assert_all_online "failed batch rolled back"
    else
        note "no failure injection available: failed-batch case not run"
    fi
done
echo $orig >$RE
exit 0
