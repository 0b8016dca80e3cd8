#!/bin/sh
# startcmp (ad hoc, not committed): cpuctl's whole call, one line per call.
. /cpuhpd-tests/lib.sh
c=$(last $(hotpluggable))
i=0
while [ $i -lt 25 ]; do
    t0=$(now_ms); cat /proc/loadavg >/dev/null; t1=$(now_ms)
    cpuctl --version >/dev/null; t2=$(now_ms)
    cpuctl online "$c" >/dev/null; t3=$(now_ms)
    cpuctl --json status >/dev/null; t4=$(now_ms)
    note "STARTCMP cat=$((t1 - t0)) version=$((t2 - t1)) online=$((t3 - t2)) status=$((t4 - t3))"
    i=$((i + 1))
done
exit 0
