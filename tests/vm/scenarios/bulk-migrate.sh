#!/bin/sh
# bulk-migrate: the checks of LTP's cpuhotplug02-04 (LTP is not in Debian), each through
# one batch write instead of one cpuN/online write. The batch B is the last package.
# (02) A CPU-bound task pinned to X, a CPU of B, lives on after the offline batch and
#      runs on a CPU outside B (twice).
# (03) With B offline, 2 spinning tasks per online CPU are started; after the online
#      batch every CPU of B must run one of them (the scheduler places tasks on newly
#      onlined CPUs), seen within 30 s (/proc/PID/stat's processor field, polled).
# (04) The last CPU: after every CPU with an online file went down in one batch, a
#      write of the CPU left is refused and changes nothing.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
H=$(hotpluggable)
B=$(cpus_of_pkg $(last $(packages)))
[ -z "$(minus "$B" "$H")" ] || skip "the last package has CPUs without an online file"
BL=$(compress $B)
X=$(last $B)
PIDS=""
cleanup() { [ -n "$PIDS" ] && kill $PIDS 2>/dev/null; for p in $PIDS; do wait $p 2>/dev/null; done; PIDS=""; }
trap cleanup EXIT
# on_cpu PID: the CPU the task last ran on (field 39 of /proc/PID/stat), no fork
on_cpu() { local l; read -r l </proc/$1/stat 2>/dev/null || return; set -- $l; shift 38; echo "$1"; }

# (02)
for round in 1 2; do
    taskset -c $X sh -c 'while :; do :; done' &
    T=$!
    PIDS="$PIDS $T"
    i=0
    until [ "$(on_cpu $T)" = "$X" ] || [ $i -ge 100 ]; do usleep 50000; i=$((i + 1)); done
    assert_eq "$(on_cpu $T)" "$X" "(02.$round) the spinner runs on cpu$X before the batch"
    kwrite $SYS/offline "$BL"; assert_eq "$KW" ok "(02.$round) write $BL > offline"
    kill -0 $T 2>/dev/null || fail "(02.$round) the task pinned to cpu$X died with the batch"
    c=$(on_cpu $T)
    contains " $B " "$c" && fail "(02.$round) the task pinned to cpu$X still shows cpu$c of the offline batch"
    echo "  ok: (02.$round) the task pinned to cpu$X lives on, on cpu$c"
    kwrite $SYS/online "$BL"; assert_eq "$KW" ok "(02.$round) write $BL > online"
    cleanup
done

# (03)
kwrite $SYS/offline "$BL"; assert_eq "$KW" ok "(03) write $BL > offline"
n=$(( $(count $(kernel_online)) * 2 ))
i=0
while [ $i -lt $n ]; do sh -c 'while :; do :; done' & PIDS="$PIDS $!"; i=$((i + 1)); done
kwrite $SYS/online "$BL"; assert_eq "$KW" ok "(03) write $BL > online"
t0=$(now_ms)
seen=""
while :; do
    for p in $PIDS; do c=$(on_cpu $p); contains "$B" "$c" && ! contains "$seen" "$c" && seen="$seen $c"; done
    [ -z "$(minus "$B" "$seen")" ] && break
    [ $(( $(now_ms) - t0 )) -ge 30000 ] && break
    usleep 100000
done
left=$(minus "$B" "$seen")
[ -z "$left" ] || fail "(03) no spinner ran on cpu(s) {$(compress $left)} of the batch 30 s after it came online ($n spinners)"
echo "  ok: (03) every CPU of {$BL} ran one of the $n spinners $(( $(now_ms) - t0 )) ms after the online batch"
cleanup

# (04)
kwrite $SYS/offline "$(compress $H)"; assert_eq "$KW" ok "(04) write $(compress $H) > offline"
rest=$(kernel_online)
[ $(count $rest) = 1 ] || fail "(04) after the batch {$(compress $rest)} are online, expected one CPU"
kwrite $SYS/offline "$rest"
[ "$KW" = ok ] && fail "(04) the last CPU, cpu$rest, was taken offline"
echo "  ok: (04) the last CPU's write refused ($KW)"
assert_eq "$(compress $(kernel_online))" "$rest" "(04) online after the refusal"
kwrite $SYS/online "$(compress $H)"; assert_eq "$KW" ok "(04) write $(compress $H) > online"
assert_all_online "end"
exit 0
