#!/bin/sh
# bulk-counts: evidence of the saving. kprobe events (tracefs kprobe_profile hit
# counts) around one batch of N CPUs taken offline and brought back:
#   partition_sched_domains_locked   one per sched-domain rebuild
#   synchronize_rcu                  grace periods waited for (an expedited one too:
#                                    synchronize_rcu() then calls the next one)
#   synchronize_rcu_expedited        expedited grace periods
#   stop_machine_cpuslocked          stop_machine() runs (takedown_cpu())
# by these methods:
#   cpuctl-bulk     cpuctl offline|online --strategy bulk MASK (one write of MASK)
#   direct          echo MASK > cpu/offline|online (the kernel alone)
#   loop            echo 0|1 > cpuN/online for each CPU (kernel order)
#   loop-exp        the same loop inside /sys/kernel/rcu_expedited=1
#   cpuctl-per-cpu  cpuctl offline|online --strategy per-cpu MASK
# for N = the last package (8 on smt16) and N = every hotpluggable CPU (15 on smt16),
# with K = 0 and 2000 extra cpu cgroups (cpuhpd.bulk_cgroups), REPS repetitions
# (cpuhpd.bulk_reps, default 3, interleaved). Asserts counts only: every bulk batch
# (cpuctl-bulk, direct) does exactly 1 rebuild and, going offline, at most 3
# synchronize_rcu(); every loop does N rebuilds. Wall times (median, min, max, ratios
# to the loops) are printed, never asserted.
# Output: "  # COUNT ..." and "  # TIME ..." lines (run-guest.sh repeats them).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
need_binaries
has_cap bulk || skip "cpuhpd does not list bulk in its Capabilities ($(caps))"
PROBES="partition_sched_domains_locked synchronize_rcu synchronize_rcu_expedited stop_machine_cpuslocked"
kprobes_setup $PROBES || skip "no kprobe events (tracefs $TRACEFS/kprobe_events not writable)"
assert_all_online "start"
# 6.12's cpu_up_mask() starts a pass of CPUs in parallel unless the platform refused
# parallel start-up at boot (x86 says so in the log; "enabled" is only a debug message).
if dmesg | grep -qi 'Parallel CPU startup disabled'; then note "parallel CPU start-up: disabled at boot"
else note "parallel CPU start-up: not disabled at boot ($(uname -r))"; fi
REPS=${BULK_REPS:-3}
CGROUPS=$(echo "${BULK_CGROUPS:-0,2000}" | tr ',' ' ')
H=$(hotpluggable)
PK=$(last $(packages))
SETS="$(compress $(cpus_of_pkg $PK))"
[ "$(compress $H)" != "$SETS" ] && SETS="$SETS $(compress $H)"
METHODS="cpuctl-bulk direct loop loop-exp cpuctl-per-cpu"
R=/tmp/counts; rm -rf $R; mkdir -p $R
CG=/sys/fs/cgroup
CGP=$CG/cpuhpd-counts

# cgroups K: exactly K cpu cgroups under $CGP (cgroup v2, cpu controller)
cgroups() {
    local k=$1 have
    [ $k = 0 ] && { [ -d $CGP ] && rmdir $CGP/g* $CGP 2>/dev/null; return 0; }
    grep -qw cpu $CG/cgroup.controllers 2>/dev/null || skip "no cpu controller in cgroup v2"
    grep -qw cpu $CG/cgroup.subtree_control || echo +cpu >$CG/cgroup.subtree_control ||
        fail "cannot enable +cpu in the root cgroup"
    mkdir -p $CGP; grep -qw cpu $CGP/cgroup.subtree_control || echo +cpu >$CGP/cgroup.subtree_control
    have=$(ls -d $CGP/g* 2>/dev/null | wc -l)
    # One mkdir for them all: with a fork+exec per cgroup the scenario took 115 s on the
    # lockdep 6.12 guest, 89 s with one.
    if [ $have -lt $k ]; then
        (cd $CGP && awk -v a=$((have + 1)) -v k=$k 'BEGIN { for (i = a; i <= k; i++) print "g" i }' |
            xargs mkdir) || fail "mkdir cgroups g$((have + 1))-g$k"
    fi
    assert_eq "$(ls -d $CGP/g* | wc -l)" $k "cpu cgroups under $CGP"
}

snap() { local f; for f in $PROBES; do printf '%s ' "$(kprobe_hits $f)"; done; }
# do_batch K METHOD ACTION MASK: one batch; records rebuilds, synchronize_rcu,
# synchronize_rcu_expedited, stop_machine, ms in $R/K.N.METHOD.ACTION
do_batch() {
    local k=$1 m=$2 act=$3 mask=$4 cpus b a t0 t1 c v rc=0 old
    cpus=$(expand "$mask")
    b=$(snap)
    t0=$(now_ms)
    case $m in
    cpuctl-bulk) cpuctl --timeout $CPUCTL_TIMEOUT --json $act --strategy bulk "$mask" >$OUT 2>$ERR; rc=$? ;;
    cpuctl-per-cpu) cpuctl --timeout $CPUCTL_TIMEOUT --json $act --strategy per-cpu "$mask" >$OUT 2>$ERR; rc=$? ;;
    direct) (echo "$mask" >$SYS/$act) 2>$ERR; rc=$? ;;
    loop|loop-exp)
        v=0; [ $act = online ] && v=1
        old=$(rd /sys/kernel/rcu_expedited)
        [ $m = loop-exp ] && echo 1 >/sys/kernel/rcu_expedited
        for c in $(kernel_order $act "$cpus"); do echo $v >$SYS/cpu$c/online || rc=1; done
        [ $m = loop-exp ] && echo "$old" >/sys/kernel/rcu_expedited ;;
    esac
    t1=$(now_ms)
    a=$(snap)
    set -- $b $a
    echo "$(($5 - $1)) $(($6 - $2)) $(($7 - $3)) $(($8 - $4)) $((t1 - t0))" >>$R/$k.$(count $cpus).$m.$act
    [ $rc = 0 ] || fail "$m $act $mask: exit $rc $(cat $ERR)"
    case $m in cpuctl-*)
        json_load $OUT
        assert_strategy "${m#cpuctl-}" "$m $act $mask" >/dev/null ;;
    esac
    if [ $act = offline ]; then assert_offline_exactly "$cpus" "$m offline $mask" >/dev/null
    else assert_all_online "$m online $mask" >/dev/null; fi
    note "COUNT-RUN K=$k N=$(count $cpus) $m $act: $(tail -n1 $R/$k.$(count $cpus).$m.$act)"
}

for k in $CGROUPS; do
    cgroups $k
    rep=1
    while [ $rep -le $REPS ]; do
        for mask in $SETS; do
            for m in $METHODS; do
                do_batch $k $m offline "$mask"
                do_batch $k $m online "$mask"
            done
        done
        rep=$((rep + 1))
    done
done
cgroups 0

# column J of a results file, comma-joined; median / min / max of column J
col() { awk -v k=$2 '{ printf "%s%s", (NR > 1 ? "," : ""), $k } END { print "" }' $1; }
stat3() { awk -v k=$2 '{ print $k }' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'; }

note "COUNT per batch, one value per repetition (kprobe hits; K = extra cpu cgroups)"
note "$(printf 'COUNT %4s %3s  %-15s %-8s %-10s %-16s %-16s %-12s' K N method action rebuilds synchronize_rcu sync_rcu_exped stop_machine)"
bad=""
for k in $CGROUPS; do
    for mask in $SETS; do
        n=$(count $(expand "$mask"))
        for m in $METHODS; do
            for act in offline online; do
                f=$R/$k.$n.$m.$act
                note "$(printf 'COUNT %4s %3s  %-15s %-8s %-10s %-16s %-16s %-12s' $k $n $m $act \
                    "$(col $f 1)" "$(col $f 2)" "$(col $f 3)" "$(col $f 4)")"
                while read -r pd gp ex sm ms; do
                    case $m in
                    cpuctl-bulk|direct)
                        [ $pd = 1 ] || bad="$bad $m/$act/K=$k/N=$n:rebuilds=$pd(want 1)"
                        [ $act = online ] || [ $gp -le 3 ] ||
                            bad="$bad $m/$act/K=$k/N=$n:synchronize_rcu=$gp(want <=3)" ;;
                    loop|loop-exp) [ $pd = $n ] || bad="$bad $m/$act/K=$k/N=$n:rebuilds=$pd(want $n)" ;;
                    esac
                done <$f
            done
        done
    done
done
note "TIME wall ms per batch: median [min-max] of $REPS; ratios = median / median of the loop (lp) and of the loop inside rcu_expedited=1 (le), off, on and both (off+on); informational, TCG timings are noisy"
note "$(printf 'TIME %4s %3s  %-15s %-20s %-20s %6s %6s %6s %6s %7s %7s' K N method offline online 'off/lp' 'on/lp' 'off/le' 'on/le' 'both/lp' 'both/le')"
for k in $CGROUPS; do
    for mask in $SETS; do
        n=$(count $(expand "$mask"))
        set -- $(stat3 $R/$k.$n.loop.offline 5) $(stat3 $R/$k.$n.loop.online 5) \
            $(stat3 $R/$k.$n.loop-exp.offline 5) $(stat3 $R/$k.$n.loop-exp.online 5)
        loff=$1 lon=$4 eoff=$7 eon=${10}
        for m in $METHODS; do
            set -- $(stat3 $R/$k.$n.$m.offline 5) $(stat3 $R/$k.$n.$m.online 5)
            note "$(awk -v k=$k -v n=$n -v m=$m -v a="$1 [$2-$3]" -v b="$4 [$5-$6]" -v off=$1 -v on=$4 \
                -v la=$loff -v lb=$lon -v ea=$eoff -v eb=$eon 'BEGIN {
                printf "TIME %4s %3s  %-15s %-20s %-20s %6.2f %6.2f %6.2f %6.2f %7.2f %7.2f", k, n, m, a, b,
                    (la > 0 ? off / la : 0), (lb > 0 ? on / lb : 0), (ea > 0 ? off / ea : 0), (eb > 0 ? on / eb : 0),
                    (la + lb > 0 ? (off + on) / (la + lb) : 0), (ea + eb > 0 ? (off + on) / (ea + eb) : 0) }')"
        done
    done
done
[ -z "$bad" ] || fail "counts:$bad"
echo "  ok: every bulk batch did 1 sched-domain rebuild and at most 3 synchronize_rcu() going offline; every per-CPU loop N rebuilds"
exit 0
