#!/bin/sh
# diag: not a test - prints what makes the guest slow: the cost of a fork+exec, the
# daemon's CPU use while idle (utime+stime over 5 s), a top snapshot. Not in "all".
. /cpuhpd-tests/lib.sh
time_runs() { # N LABEL CMD...: runs CMD N times, notes "N x LABEL: T ms"
    local n=$1 label=$2 t0 t1 i=0
    shift 2
    t0=$(now_ms)
    while [ $i -lt "$n" ]; do "$@" >/dev/null; i=$((i + 1)); done
    t1=$(now_ms)
    note "$n x $label: $((t1 - t0)) ms"
}
time_runs 20 "fork+exec cat" cat /proc/loadavg
time_runs 5 "gojq -n 1" gojq -n 1
# cpuctl's own start (issue 31 item 3): the process and its libraries, then the dynamic
# loader's share of it
time_runs 5 "cpuctl --version" cpuctl --version
(export LD_BIND_NOW=1; time_runs 5 "LD_BIND_NOW=1 cpuctl --version" cpuctl --version)
LD_DEBUG=statistics cpuctl --version 2>&1 | sed -n 's/^ *[0-9]*: *//p' | while read -r line; do note "ld.so: $line"; done
if daemon_alive; then
    p=$(daemon_pid)
    a=$(awk '{print $14 + $15}' /proc/$p/stat); sleep 5; b=$(awk '{print $14 + $15}' /proc/$p/stat)
    note "cpuhpd (pid $p) used $((b - a)) ticks of CPU in 5 s idle (CLK_TCK=100 -> $((b - a)) % of one CPU x 5)"
    ls /proc/$p/task | while read t; do note "  thread $t $(cat /proc/$p/task/$t/comm) $(awk '{print "utime="$14" stime="$15}' /proc/$p/task/$t/stat)"; done
    t0=$(now_ms); cpuctl --json status >/dev/null; t1=$(now_ms); note "cpuctl status: $((t1 - t0)) ms"
    # a whole call that changes nothing: cpuctl's start, the bus and the daemon's admission
    time_runs 5 "cpuctl online $(last $(hotpluggable)) (online already)" cpuctl online "$(last $(hotpluggable))"
fi
rawcycle() { # label
    local t0 t1 t2 c=$(last $(hotpluggable))
    t0=$(now_ms); echo 0 >$SYS/cpu$c/online; t1=$(now_ms); echo 1 >$SYS/cpu$c/online; t2=$(now_ms)
    note "$1: raw offline cpu$c $((t1 - t0)) ms, online $((t2 - t1)) ms"
}
rawcycle "daemon running"; rawcycle "daemon running"
if daemon_alive; then
    daemon_stop; rawcycle "daemon stopped"; rawcycle "daemon stopped"; daemon_start
fi
t0=$(now_ms); x=$(hotpluggable); t1=$(now_ms); note "hotpluggable(): $((t1 - t0)) ms"
t0=$(now_ms); x=$(packages); t1=$(now_ms); note "packages(): $((t1 - t0)) ms"
t0=$(now_ms); x=$(smt_secondaries); t1=$(now_ms); note "smt_secondaries(): $((t1 - t0)) ms"
t0=$(now_ms); assert_all_online "x" >/dev/null; t1=$(now_ms); note "assert_all_online: $((t1 - t0)) ms"
top -b -n 1 | head -n 15
cat /proc/loadavg
exit 0
