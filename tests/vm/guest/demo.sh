#!/bin/sh
# demo (guest side): cpuctl topology/status, then every AP offline and back online,
# timed, with cpuctl (one request each way) beside a plain per-CPU shell loop.
# Repetitions: cpuhpd.demo_reps=N on the kernel command line (default 3).
. /cpuhpd-tests/lib.sh
need_binaries
reps=3
for arg in $(cat /proc/cmdline); do case "$arg" in cpuhpd.demo_reps=*) reps=${arg#*=} ;; esac; done
H=$(hotpluggable)
echo
echo "################ cpuctl topology"
cpuctl topology
echo "################ cpuctl status"
cpuctl status
ALLMASK=all
echo "################ $(count $H) APs: {$(compress $H)}, rcu_expedited=$(cat /sys/kernel/rcu_expedited), $reps repetitions"

t() { local t0 t1; t0=$(now_ms); "$@" >/tmp/demo.out 2>&1; RC=$?; t1=$(now_ms); DT=$((t1 - t0)); }
loop_off() { for c in $H; do echo 0 >$SYS/cpu$c/online; done; }
loop_on() { for c in $H; do echo 1 >$SYS/cpu$c/online; done; }
median() { echo "$*" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { printf '%d.%03d s' $(($1 / 1000)) $(($1 % 1000)); }

LOFF="" LON="" COFF="" CON=""
r=1
while [ $r -le $reps ]; do
    t loop_off; lo=$DT; [ "$(kernel_online)" = "$(minus "$(present)" "$H")" ] || echo "!! loop offline left $(cat $SYS/online) online"
    t loop_on; ln=$DT; [ "$(kernel_online)" = "$(present)" ] || echo "!! loop online left $(cat $SYS/online) online"
    t cpuctl --json offline $ALLMASK; co=$DT; crc1=$RC; strat=$(jq -r .strategy </tmp/demo.out 2>/dev/null)
    [ "$(kernel_online)" = "$(minus "$(present)" "$H")" ] || echo "!! cpuctl offline all (rc $crc1) left $(cat $SYS/online) online"
    t cpuctl --json online $ALLMASK; cn=$DT; crc2=$RC
    [ "$(kernel_online)" = "$(present)" ] || { echo "!! cpuctl online all (rc $crc2) left $(cat $SYS/online) online"; restore_all_online; }
    printf 'rep %d:  shell loop  offline %s  online %s   |  cpuctl (%s)  offline %s (rc %s)  online %s (rc %s)\n' \
        $r "$(ms $lo)" "$(ms $ln)" "$strat" "$(ms $co)" $crc1 "$(ms $cn)" $crc2
    LOFF="$LOFF $lo" LON="$LON $ln" COFF="$COFF $co" CON="$CON $cn"
    r=$((r + 1))
done
mlo=$(median $LOFF) mln=$(median $LON) mco=$(median $COFF) mcn=$(median $CON)
echo "################ medians over $reps runs ($(count $H) CPUs, TCG guest: ratios matter, not absolute times)"
printf '  %-28s %12s %12s\n' "" offline online
printf '  %-28s %12s %12s\n' "per-CPU shell loop" "$(ms $mlo)" "$(ms $mln)"
printf '  %-28s %12s %12s\n' "cpuctl offline/online $ALLMASK" "$(ms $mco)" "$(ms $mcn)"
[ $mlo -gt 0 ] && [ $mln -gt 0 ] &&
    printf '  %-28s %11d%% %11d%%\n' "cpuctl / loop" $((mco * 100 / mlo)) $((mcn * 100 / mln))
echo "################ cpuctl status (end)"
cpuctl status
assert_all_online "demo end"
exit 0
