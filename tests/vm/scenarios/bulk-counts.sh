#!/bin/sh
# bulk-counts: evidence of the saving. kprobe events (tracefs kprobe_profile hit
# counts) on partition_sched_domains_locked (one per sched-domain rebuild) and
# synchronize_rcu, around one batch of N CPUs taken offline and brought back by:
#   cpuctl-bulk     cpuctl offline|online --strategy bulk MASK (one write of MASK)
#   direct          echo MASK > cpu/offline|online
#   loop            echo 0|1 > cpuN/online for each CPU (kernel order)
#   cpuctl-per-cpu  cpuctl offline|online --strategy per-cpu MASK
# for N = the last package (8 on smt16) and N = every hotpluggable CPU (15 on smt16),
# REPS repetitions (default 3, interleaved). Asserts: every bulk batch (cpuctl-bulk,
# direct) does exactly 1 rebuild, the loop does N. synchronize_rcu counts and wall
# times (medians, ratios to the loop) are printed, never asserted.
# Output: "  # COUNT ..." and "  # TIME ..." lines (run-guest.sh repeats them).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
need_binaries
has_cap bulk || skip "cpuhpd does not list bulk in its Capabilities ($(caps))"
kprobes_setup partition_sched_domains_locked synchronize_rcu ||
    skip "no kprobe events (tracefs $TRACEFS/kprobe_events not writable)"
assert_all_online "start"
REPS=${BULK_REPS:-3}
H=$(hotpluggable)
PK=$(last $(packages))
SETS="$(compress $(cpus_of_pkg $PK))"
[ "$(compress $H)" != "$SETS" ] && SETS="$SETS $(compress $H)"
METHODS="cpuctl-bulk direct loop cpuctl-per-cpu"
R=/tmp/counts; rm -rf $R; mkdir -p $R

snap() { echo "$(kprobe_hits partition_sched_domains_locked) $(kprobe_hits synchronize_rcu)"; }
# do_batch METHOD ACTION MASK -> DT (ms), PD, RCU for the batch; checks the result
do_batch() {
    local m=$1 act=$2 mask=$3 cpus b a t0 t1 c v rc=0
    cpus=$(expand "$mask")
    b=$(snap)
    t0=$(now_ms)
    case $m in
    cpuctl-bulk) cpuctl --timeout $CPUCTL_TIMEOUT --json $act --strategy bulk "$mask" >$OUT 2>$ERR; rc=$? ;;
    cpuctl-per-cpu) cpuctl --timeout $CPUCTL_TIMEOUT --json $act --strategy per-cpu "$mask" >$OUT 2>$ERR; rc=$? ;;
    direct) (echo "$mask" >$SYS/$act) 2>$ERR; rc=$? ;;
    loop) v=0; [ $act = online ] && v=1
          for c in $(kernel_order $act "$cpus"); do echo $v >$SYS/cpu$c/online || rc=1; done ;;
    esac
    t1=$(now_ms)
    a=$(snap)
    DT=$((t1 - t0))
    set -- $b $a
    PD=$(($3 - $1)); RCU=$(($4 - $2))
    [ $rc = 0 ] || fail "$m $act $mask: exit $rc $(cat $ERR)"
    case $m in cpuctl-*)
        json_load $OUT
        assert_strategy "${m#cpuctl-}" "$m $act $mask" >/dev/null ;;
    esac
    if [ $act = offline ]; then assert_offline_exactly "$cpus" "$m offline $mask" >/dev/null
    else assert_all_online "$m online $mask" >/dev/null; fi
    echo "$PD $RCU $DT" >>$R/$(count $cpus).$m.$act
    note "COUNT-RUN N=$(count $cpus) $m $act: rebuilds=$PD synchronize_rcu=$RCU ${DT} ms"
}

rep=1
while [ $rep -le $REPS ]; do
    for mask in $SETS; do
        for m in $METHODS; do
            do_batch $m offline "$mask"
            do_batch $m online "$mask"
        done
    done
    rep=$((rep + 1))
done

# column K of a results file, comma-joined; the median of column K
col() { awk -v k=$2 '{ printf "%s%s", (NR > 1 ? "," : ""), $k } END { print "" }' $1; }
median() { awk -v k=$2 '{ print $k }' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

note "COUNT per batch, one value per repetition (kprobe hits: partition_sched_domains_locked = sched-domain rebuilds; synchronize_rcu)"
note "$(printf 'COUNT %3s  %-15s %-8s %-12s %-14s' N method action rebuilds synchronize_rcu)"
bad=""
for mask in $SETS; do
    n=$(count $(expand "$mask"))
    for m in $METHODS; do
        for act in offline online; do
            f=$R/$n.$m.$act
            note "$(printf 'COUNT %3s  %-15s %-8s %-12s %-14s' $n $m $act "$(col $f 1)" "$(col $f 2)")"
            for pd in $(awk '{ print $1 }' $f); do
                case $m in
                cpuctl-bulk|direct) [ $pd = 1 ] || bad="$bad $m/$act/N=$n:rebuilds=$pd(want 1)" ;;
                loop) [ $pd = $n ] || bad="$bad $m/$act/N=$n:rebuilds=$pd(want $n)" ;;
                esac
            done
        done
    done
done
note "TIME wall ms per batch, median of $REPS (ratio = method / loop; informational, TCG timings are noisy)"
note "$(printf 'TIME %3s  %-15s %10s %7s %10s %7s' N method offline ratio online ratio)"
for mask in $SETS; do
    n=$(count $(expand "$mask"))
    loff=$(median $R/$n.loop.offline 3); lon=$(median $R/$n.loop.online 3)
    for m in $METHODS; do
        off=$(median $R/$n.$m.offline 3); on=$(median $R/$n.$m.online 3)
        note "$(awk -v n=$n -v m=$m -v a=$off -v b=$on -v la=$loff -v lb=$lon 'BEGIN {
            printf "TIME %3s  %-15s %10d %7.2f %10d %7.2f", n, m, a, (la > 0 ? a / la : 0), b, (lb > 0 ? b / lb : 0) }')"
    done
done
[ -z "$bad" ] || fail "rebuild counts:$bad"
echo "  ok: every bulk batch did 1 sched-domain rebuild, every per-CPU loop N"
exit 0
