#!/bin/sh
# bulk-spread (a measurement, run by hand: not in "bulk"): do the tasks of CPUs going
# offline herd onto one CPU, through a batch more than one cpuN/online write at a time?
# A batch deactivates all its CPUs first and rebuilds the sched domains only at its end;
# a wake-up whose CPU is inactive goes to select_fallback_rq(), the first allowed CPU
# of the node. wake-spread (tests/vm/tools/wake-spread.c) runs SPREAD_PER_CPU (default
# 2) sleepers, 1 ms naps, on each CPU of the last package; the package goes down as one
# batch and as a per-CPU loop, SPREAD_ROUNDS (default 3) times each, alternating, and
# back up after each. Printed per round: the wake-ups that landed outside the package
# while it went down (how many, on how many CPUs, the share of the busiest), and where
# the sleepers are 0, 10, 100 and 1000 ms after the last write (the most on one CPU).
# Asserted: every sleeper is off the package once the write returned, and some woke
# elsewhere while it went down (else nothing was measured).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v wake-spread >/dev/null || skip "wake-spread (tests/vm/tools/wake-spread.c) is not in the initramfs"
assert_all_online "start"
last_package_or_skip
[ $(count $P) -ge 2 ] || skip "needs 2 CPUs in the last package"
LIST=$(compress $P)
PER=${SPREAD_PER_CPU:-2}
ROUNDS=${SPREAD_ROUNDS:-3}
down() { # path
    local c
    if [ $1 = bulk ]; then kwrite_ok $SYS/offline "$LIST" "offline $LIST"; return; fi
    for c in $P; do echo 0 >$SYS/cpu$c/online || fail "cpu$c/online = 0 failed"; done
}
note "last package {$LIST}, $PER sleepers per CPU, $ROUNDS rounds per path"
TABLE=""
i=0
while [ $i -lt $ROUNDS ]; do
    i=$((i + 1))
    for path in loop bulk; do
        start_ready /tmp/spread.ready /tmp/spread.out wake-spread "$(echo $P | tr ' ' ',')" $PER /tmp/spread.ready ||
            fail "wake-spread did not start: $(cat /tmp/spread.out)"
        down $path
        rm -f /tmp/spread.ready
        wait $BG_PID; rc=$?
        out=$(cat /tmp/spread.out)
        [ $rc = 0 ] || fail "$path round $i: wake-spread exited with $rc: $out"
        echo "$out" | sed "s/^/  | $path $i: /"
        during=$(echo "$out" | grep during)
        [ "$(kv_field left_wakes "$during")" -gt 0 ] || fail "$path round $i: no sleeper woke off the package while it went down"
        at0=$(echo "$out" | grep "after_ms 0 ")
        [ "$(kv_field on_listed "$at0")" = 0 ] ||
            fail "$path round $i: $(kv_field on_listed "$at0") sleeper(s) still on the offline package after the write"
        row="$path $i wakes $(kv_field left_wakes "$during") on $(kv_field cpus_used "$during") cpus, top $(kv_field top_wakes "$during") (cpu$(kv_field top_cpu "$during")); most on one cpu after 0/10/100/1000 ms:"
        for ms in 0 10 100 1000; do row="$row $(kv_field max_on_one "$(echo "$out" | grep "after_ms $ms ")")"; done
        TABLE="$TABLE
  $row"
        kwrite_ok $SYS/online "$LIST" "online $LIST"
    done
done
echo "  summary ($(count $P) CPUs x $PER sleepers = $(( $(count $P) * PER )) threads):$TABLE"
assert_all_online "end"
exit 0
