#!/bin/sh
# bench (guest side of scripts/bench.sh): every hotplug method on the same workloads in
# this one guest, for each cgroup configuration, with kprobe counts per batch, a
# per-phase trace pass and a sched-domain rebuild timing pass. Busybox sh.
#
# Kernel command line (scripts/bench.sh sets them; the environment variables BENCH_REPS,
# BENCH_CONFIGS, BENCH_WORKLOADS, BENCH_METHODS, BENCH_PHASE, BENCH_REBUILD_REPS give
# defaults, for the demo, which runs this script too):
#   cpuhpd.bench_reps=N          timed repetitions per cell (default 5)
#   cpuhpd.bench_configs=LIST    cg0,part,cgN,cgNtM (default cg0,part,cg2000): no extra
#                                cgroups; a cpuset partition (cgroup v2, empty) covering the
#                                last package; N cgroups with the cpu controller; those and M
#                                sleeping tasks spread over them
#   cpuhpd.bench_workloads=LIST  all,pkg,smt (default all three; smt needs SMT)
#   cpuhpd.bench_methods=LIST    default every method that applies (see METHODS below)
#   cpuhpd.bench_phase=0|1       the cpuhp tracepoint pass (default 1)
#   cpuhpd.bench_rebuild_reps=N  rebuilds timed per configuration (default 5; 0 = none)
#
# Output: machine-readable console lines, one per fact (scripts/bench.sh collects them):
#   BENCH-INFO,key,value
#   BENCH-SAMPLE,config,workload,method,action,rep,ncpus,ms,status,rebuilds,sync_rcu,
#                sync_rcu_exp,stop_machine,stop_machine_cpuslocked
#       status ok, or the error: exit (method failed) / state (wrong CPUs online after it)
#   BENCH-STATE,step,name                 (cpu/hotplug/states)
#   BENCH-PHASE,config,workload,method,action,step,callback,incl_ns,excl_ns,calls
#   BENCH-PHASEWALL,config,workload,method,action,ncpus,ms,rebuild_ns,rebuilds,states_ns
#   BENCH-REBUILD,config,online_cpus,cgroups,ns
#   BENCH-DAEMONPHASE,config,workload,method,action,rep,phase,us
#       cpuctl methods: where the daemon's batch went (cpuctl --json "phases"), one line each
#   BENCH-CLIENT,config,what,rep,ms,queued_us
#       cpuctl methods: what a cpuctl call costs without a batch, timed like a sample:
#       exec (cpuctl --version: the process, its libraries, the argument parser) and noop
#       (cpuctl --json online CPU for an online CPU: that, the bus, the daemon's
#       authorization and admission; queued_us is the daemon's part from receipt to answer)
# A sample with a wrong state is an error, not a sample: the CPUs are restored and the
# run goes on; the scenario fails at the end if any run erred.
. /cpuhpd-tests/lib.sh

REPS=${BENCH_REPS:-5} CONFIGS=${BENCH_CONFIGS:-cg0,part,cg2000} WORKLOADS=${BENCH_WORKLOADS:-all,pkg,smt}
METHODS_ASKED=${BENCH_METHODS:-} PHASE=${BENCH_PHASE:-1} RB_REPS=${BENCH_REBUILD_REPS:-5}
for arg in $(cat /proc/cmdline); do
    case "$arg" in
    cpuhpd.bench_reps=*) REPS=${arg#*=} ;;
    cpuhpd.bench_configs=*) CONFIGS=${arg#*=} ;;
    cpuhpd.bench_workloads=*) WORKLOADS=${arg#*=} ;;
    cpuhpd.bench_methods=*) METHODS_ASKED=${arg#*=} ;;
    cpuhpd.bench_phase=*) PHASE=${arg#*=} ;;
    cpuhpd.bench_rebuild_reps=*) RB_REPS=${arg#*=} ;;
    esac
done

info() { echo "BENCH-INFO,$1,$2"; }
CG=/sys/fs/cgroup
NCPU=$(count $PRESENT)
info kernel "$(uname -r)"
info vcpus $NCPU
info smt_control "$(smt_control)"
info bulk_interface "$(kernel_has_bulk && echo yes || echo no)"
info reps $REPS
info configs $CONFIGS
has_chcpu=0; command -v chcpu >/dev/null && has_chcpu=1
info chcpu $has_chcpu
info cpuctl "$(have_binaries && echo yes || echo no)"

# ---------------------------------------------------------------- workloads
# Sets as "0 1 2" and the kernel's cpulist form; the online file expected after each way.
ALLAPS=$(minus "$(hotpluggable)" "")
PK=$(last $(packages))
PKG_CPUS=$(minus "$(cpus_of_pkg $PK)" "$(protected_cpus)")
SMT_CPUS=$(smt_secondaries)
ONLINE_ALL=$(compress $PRESENT)
wl_cpus() { case $1 in all) echo $ALLAPS ;; pkg) echo $PKG_CPUS ;; smt) echo $SMT_CPUS ;; esac; }
# The sets are fixed for the run: each workload's cpulist, the loop's write order each way
# (kernel_order) and the online file expected after each batch, computed once here rather
# than with several awk runs before every batch.
for wl in all pkg smt; do
    cpus=$(wl_cpus $wl)
    eval "CPUS_$wl=\$cpus LIST_$wl=\$(compress \$cpus) WANT_offline_$wl=\$(compress \$(minus \"\$PRESENT\" \"\$cpus\"))"
    eval "ORDER_offline_$wl=\$(kernel_order offline \"\$cpus\") ORDER_online_$wl=\$(kernel_order online \"\$cpus\")"
    eval "WANT_online_$wl=\$ONLINE_ALL"
done
# wl_load WORKLOAD ACTION: sets the caller's (local) cpus, list, order and want from the
# table above.
wl_load() { eval "cpus=\$CPUS_$1 list=\$LIST_$1 order=\$ORDER_${2}_$1 want=\$WANT_${2}_$1"; }
info workload_all "$(compress $ALLAPS)"
info workload_pkg "$(compress $PKG_CPUS)"
info workload_smt "$(compress $SMT_CPUS)"

# ---------------------------------------------------------------- kprobe counters
KP="partition_sched_domains_locked synchronize_rcu synchronize_rcu_expedited stop_machine stop_machine_cpuslocked"
KP_OK=""
[ -e $TRACEFS/kprobe_events ] || mount -t tracefs tracefs $TRACEFS 2>/dev/null
for f in $KP; do
    if echo "p:cpuhpd_$f $f" >>$TRACEFS/kprobe_events 2>/dev/null; then KP_OK="$KP_OK $f"
    else info kprobe_refused $f; fi
done
[ -n "$KP_OK" ] && echo 1 >$TRACEFS/events/kprobes/enable
# A kretprobe pair times each rebuild (trace pass only).
RB_TRACE=0
if echo "p:cpuhpd_rb_in partition_sched_domains_locked" >>$TRACEFS/kprobe_events 2>/dev/null &&
    echo "r:cpuhpd_rb_out partition_sched_domains_locked" >>$TRACEFS/kprobe_events 2>/dev/null; then
    RB_TRACE=1
fi
# rb_events 0|1: the kretprobe pair off or on.
rb_events() {
    echo $1 >$TRACEFS/events/kprobes/cpuhpd_rb_in/enable
    echo $1 >$TRACEFS/events/kprobes/cpuhpd_rb_out/enable
}
[ $RB_TRACE = 1 ] && rb_events 0
info kprobes "$(echo $KP_OK | tr ' ' ';')"
info rebuild_timer $RB_TRACE
HAS_CPUHP_EVENTS=0; [ -d $TRACEFS/events/cpuhp ] && HAS_CPUHP_EVENTS=1
sed -n 's/^ *\([0-9]*\): \(.*\)$/BENCH-STATE,\1,\2/p' $SYS/hotplug/states
info cpuhp_tracepoints $HAS_CPUHP_EVENTS
# Room for every cpuhp event of a batch (the control CPU logs each CPU's BP states).
kb=$((131072 / NCPU)); [ $kb -lt 1408 ] && kb=1408
echo $kb >$TRACEFS/buffer_size_kb 2>/dev/null
if grep -qw mono $TRACEFS/trace_clock 2>/dev/null; then echo mono >$TRACEFS/trace_clock
else echo global >$TRACEFS/trace_clock 2>/dev/null; fi
# snap [BEFORE]: one awk reads every hit counter (kprobe_profile: name hits misses) and
# prints them space-separated; given BEFORE (an earlier snap), prints instead the growth
# since then, comma-separated (NA where either reading is NA).
snap() {
    awk -v want="$KP" -v before="$1" 'BEGIN { n = split(want, w, " "); split(before, b, " ") }
        { h[$1] = $2 } END { o = ""; for (i = 1; i <= n; i++) { k = "cpuhpd_" w[i]; v = (k in h) ? h[k] : "NA"
            if (before != "") v = (v == "NA" || b[i] == "NA") ? "NA" : v - b[i]
            o = o (i > 1 ? (before != "" ? "," : " ") : "") v } print o }' \
        $TRACEFS/kprobe_profile
}
# awk: ts() is a trace line's timestamp in seconds (the field ending in ':' after the flags).
TS_AWK='function ts(   i) { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) return substr($i, 1, length($i) - 1) + 0; return -1 }'
# The clock around a batch is lib.sh's tick (fork-free; 10 ms steps, batches take 100s of ms).

# ---------------------------------------------------------------- methods
# run_method METHOD ACTION LIST "ORDER": one batch; RC = 0 when the method said it worked.
# ORDER is the loop's write order (kernel_order, computed before the clock starts: the
# loop itself forks nothing).
run_method() {
    local m=$1 act=$2 list=$3 order=$4 c v=0 rc=0 old
    [ $act = online ] && v=1
    case $m in
    loop) for c in $order; do echo $v >$SYS/cpu$c/online || rc=1; done ;;
    loop-exp)
        read -r old </sys/kernel/rcu_expedited; echo 1 >/sys/kernel/rcu_expedited
        for c in $order; do echo $v >$SYS/cpu$c/online || rc=1; done
        echo $old >/sys/kernel/rcu_expedited ;;
    chcpu) if [ $act = offline ]; then chcpu -d $list >/tmp/bench.out 2>&1 || rc=1
           else chcpu -e $list >/tmp/bench.out 2>&1 || rc=1; fi ;;
    smt-control) if [ $act = offline ]; then echo off >$SYS/smt/control || rc=1
                 else echo on >$SYS/smt/control || rc=1; fi ;;
    cpuctl-per-cpu|cpuctl-smt|cpuctl-bulk)
        cpuctl --timeout $CPUCTL_TIMEOUT --json $act --strategy ${m#cpuctl-} $list >/tmp/bench.out 2>&1 || rc=1 ;;
    direct) echo $list >$SYS/$act || rc=1 ;;
    esac
    RC=$rc
}
# Does METHOD apply to WORKLOAD on this kernel?
applies() {
    case $1 in
    chcpu) [ $has_chcpu = 1 ] ;;
    smt-control|cpuctl-smt) [ $2 = smt ] && [ "$(smt_control)" = on ] && { [ $1 = smt-control ] || have_binaries; } ;;
    cpuctl-per-cpu) have_binaries ;;
    cpuctl-bulk) have_binaries && kernel_has_bulk && has_cap bulk ;;
    direct) kernel_has_bulk ;;
    *) return 0 ;;
    esac
}
ALL_METHODS="loop loop-exp chcpu smt-control cpuctl-per-cpu cpuctl-smt cpuctl-bulk direct"
METHODS=$(echo ${METHODS_ASKED:-$ALL_METHODS} | tr ',' ' ')
info methods "$(echo $METHODS | tr ' ' ';')"

ERRORS=0
# sample CONFIG WORKLOAD METHOD ACTION REP: one timed, counted, checked batch.
sample() {
    local cfg=$1 wl=$2 m=$3 act=$4 rep=$5 cpus list order want b d t0 st got queued
    wl_load $wl $act
    b=$(snap)
    tick; t0=$T
    run_method $m $act "$list" "$order"
    tick
    d=$(snap "$b")
    st=ok
    read -r got <$SYS/online
    [ $RC = 0 ] || st=exit
    [ "$got" = "$want" ] || st=state
    case "$m:$st" in cpuctl-*:ok) grep -q "\"strategy\":\"${m#cpuctl-}\"" /tmp/bench.out || st=strategy ;; esac
    if [ $st != ok ]; then
        ERRORS=$((ERRORS + 1))
        echo "BENCH-ERROR,$cfg,$wl,$m,$act,$rep: $st (online=$got, expected $want) $(head -c 300 /tmp/bench.out 2>/dev/null | tr '\n' ' ')"
        restore_all_online
    fi
    echo "BENCH-SAMPLE,$cfg,$wl,$m,$act,$rep,$(count $cpus),$((T - t0)),$st,$d"
    case "$m:$st" in
        cpuctl-*:ok)
            sed -n 's/.*"phases":{\([^}]*\)}.*/\1/p' /tmp/bench.out | tr ',' '\n' |
                sed -n "s/^\"\([a-z]*\)\":\([0-9]*\)\$/BENCH-DAEMONPHASE,$cfg,$wl,$m,$act,$rep,\1,\2/p"
            # Before the batch (receipt to batch start: admission, queue, coalescing window).
            queued=$(queued_us_of /tmp/bench.out)
            [ -z "$queued" ] || echo "BENCH-DAEMONPHASE,$cfg,$wl,$m,$act,$rep,queued,$queued" ;;
    esac
}

# queued_us_of FILE: the daemon's receipt-to-answer time in a cpuctl --json result.
queued_us_of() { sed -n 's/.*"queued_us":\([0-9]*\).*/\1/p' "$1"; }

# ---------------------------------------------------------------- client cost
# client_pass CONFIG: REPS timed cpuctl calls that change nothing (BENCH-CLIENT above).
client_pass() {
    local cfg=$1 rep=1 t0 cpu
    case " $METHODS " in *" cpuctl-"*) have_binaries || return 0 ;; *) return 0 ;; esac
    cpu=$(first $ALLAPS)
    [ -n "$cpu" ] || return 0
    while [ $rep -le $REPS ]; do
        tick; t0=$T
        cpuctl --version >/dev/null 2>&1
        tick
        echo "BENCH-CLIENT,$cfg,exec,$rep,$((T - t0)),"
        tick; t0=$T
        cpuctl --timeout $CPUCTL_TIMEOUT --json online $cpu >/tmp/bench.out 2>&1
        tick
        echo "BENCH-CLIENT,$cfg,noop,$rep,$((T - t0)),$(queued_us_of /tmp/bench.out)"
        rep=$((rep + 1))
    done
}

# ---------------------------------------------------------------- trace pass
# phase CONFIG WORKLOAD METHOD ACTION: the batch with cpuhp_enter/exit (and the rebuild
# kretprobes) traced; prints per-state sums (ns) and the traced batch's wall time.
phase() {
    local cfg=$1 wl=$2 m=$3 act=$4 cpus list order want got
    wl_load $wl $act
    echo 0 >$TRACEFS/tracing_on
    : >$TRACEFS/trace
    echo 1 >$TRACEFS/events/cpuhp/enable
    [ $RB_TRACE = 1 ] && rb_events 1
    echo 1 >$TRACEFS/tracing_on
    tick; t0=$T
    run_method $m $act "$list" "$order"
    tick
    # The cpuset work that rebuilds after the last CPU may still be queued: let it run.
    sleep 1
    echo 0 >$TRACEFS/tracing_on
    echo 0 >$TRACEFS/events/cpuhp/enable
    [ $RB_TRACE = 1 ] && rb_events 0
    [ $RC = 0 ] || echo "BENCH-ERROR,$cfg,$wl,$m,$act,phase: exit"
    # Timestamps: the field ending in ':' after the flags; enter/exit pair per (cpu, step).
    # States nest (the control CPU's takedown_cpu waits while the AP runs its dying
    # states; cpuhp_kick_ap_work and bringup_cpu wait for the AP's thread): a state's
    # exclusive time is its own minus that of the states directly inside it (same CPU).
    # "top" sums the outermost states: the batch's time inside the hotplug state machine.
    awk -v pfx="BENCH-PHASE,$cfg,$wl,$m,$act" -v wall="$((T - t0))" -v n="$(count $cpus)" "$TS_AWK"'
        function field(k,   i) { for (i = 1; i < NF; i++) if ($i == k) return $(i + 1) + 0; return -1 }
        /cpuhp_(multi_)?enter:/ { t = ts(); c = field("cpu:"); s = field("step:")
            nm = $NF; gsub(/[()]/, "", nm); name[s] = nm; start[c "," s] = t; next }
        /cpuhp_exit:/ { t = ts(); c = field("cpu:"); s = field("step:")
            if ((c "," s) in start) { k = ++ni[c]; S[c, k] = start[c "," s]; E[c, k] = t; ST[c, k] = s
                hp[c] = 1; delete start[c "," s] }
            next }
        /cpuhpd_rb_in:/ { rbs[$1] = ts(); next }
        /cpuhpd_rb_out:/ { if ($1 in rbs) { rb += ts() - rbs[$1]; nrb++; delete rbs[$1] } next }
        END {
            for (c in hp) {
                for (k = 1; k <= ni[c]; k++) child[k] = 0
                for (k = 1; k <= ni[c]; k++) {
                    d = E[c, k] - S[c, k]; par = 0; best = -1
                    for (j = 1; j <= ni[c]; j++) {
                        if (j == k || S[c, j] > S[c, k] || E[c, j] < E[c, k]) continue
                        dj = E[c, j] - S[c, j]
                        if (dj < d || (dj == d && j > k)) continue
                        if (best < 0 || dj < best) { best = dj; par = j }
                    }
                    if (par) child[par] += d; else top += d
                    dur[k] = d
                }
                for (k = 1; k <= ni[c]; k++) {
                    s = ST[c, k]; incl[s] += dur[k]; excl[s] += dur[k] - child[k]; calls[s]++
                }
            }
            for (s in incl) printf "%s,%d,%s,%.0f,%.0f,%d\n", pfx, s, name[s], incl[s] * 1e9, excl[s] * 1e9, calls[s]
            printf "BENCH-PHASEWALL,%s,%d,%d,%.0f,%d,%.0f\n", substr(pfx, 13), n, wall, rb * 1e9, nrb, top * 1e9 }' \
        $TRACEFS/trace
    : >$TRACEFS/trace
    read -r got <$SYS/online
    if [ $act = online ] && [ "$got" != "$ONLINE_ALL" ]; then restore_all_online; fi
}

# ---------------------------------------------------------------- rebuild timing
# Toggles an empty cpuset partition (cgroup v2) on the last CPU: each toggle is one
# rebuild with every CPU online; the kretprobe pair times partition_sched_domains_locked.
rebuild_pass() {
    local cfg=$1 ngroups=$2 i=0 c
    [ $RB_TRACE = 1 ] && [ $RB_REPS -gt 0 ] || return 0
    grep -qw cpuset $CG/cgroup.controllers 2>/dev/null || { info rebuild_pass_skipped "no cpuset controller"; return 0; }
    echo +cpuset >$CG/cgroup.subtree_control 2>/dev/null
    mkdir -p $CG/cpuhpd-rb
    # A CPU outside the "part" configuration's partition (the last package).
    c=$(last $(cpus_of_pkg $(first $(packages))))
    echo $c >$CG/cpuhpd-rb/cpuset.cpus || { info rebuild_pass_skipped "cpuset.cpus"; return 0; }
    echo 0 >$TRACEFS/tracing_on; : >$TRACEFS/trace
    rb_events 1
    echo 1 >$TRACEFS/tracing_on
    while [ $i -lt $RB_REPS ]; do
        echo root >$CG/cpuhpd-rb/cpuset.cpus.partition
        echo member >$CG/cpuhpd-rb/cpuset.cpus.partition
        i=$((i + 1))
    done
    echo 0 >$TRACEFS/tracing_on
    rb_events 0
    awk -v pfx="BENCH-REBUILD,$cfg,$NCPU,$ngroups" "$TS_AWK"'
        /cpuhpd_rb_in:/ { rbs[$1] = ts(); next }
        /cpuhpd_rb_out:/ { if ($1 in rbs) { printf "%s,%.0f\n", pfx, (ts() - rbs[$1]) * 1e9; delete rbs[$1] } }' $TRACEFS/trace
    : >$TRACEFS/trace
    rmdir $CG/cpuhpd-rb
}

# ---------------------------------------------------------------- configurations
# setup_config NAME -> NGROUPS; teardown_config NAME
setup_config() {
    NGROUPS=0
    case $1 in
    cg0) ;;
    part)
        echo +cpuset >$CG/cgroup.subtree_control || return 1
        mkdir -p $CG/cpuhpd-part
        echo "$(compress $(cpus_of_pkg $PK))" >$CG/cpuhpd-part/cpuset.cpus || return 1
        echo root >$CG/cpuhpd-part/cpuset.cpus.partition || return 1
        info part_state "$(cat $CG/cpuhpd-part/cpuset.cpus.partition)"
        info part_cpus "$(cat $CG/cpuhpd-part/cpuset.cpus.effective)" ;;
    cg[0-9]*t[0-9]*)
        # N cpu cgroups and M sleeping tasks spread over them: what a busy host's daemon
        # walks (/proc, the cgroup tree) on every batch.
        setup_config "${1%t*}" || return 1
        local ntasks=${1##*t} i=1
        while [ $i -le "$ntasks" ]; do
            sleep 1000000 &
            echo $! >$CG/cpuhpd-bench/g$(((i - 1) % NGROUPS + 1))/cgroup.procs || return 1
            BENCH_TASKS="$BENCH_TASKS $!"
            i=$((i + 1))
        done
        info tasks_$1 "$(ls -d /proc/[0-9]*/task/[0-9]* | wc -l)" ;;
    cg[0-9]*)
        NGROUPS=${1#cg}
        echo +cpu >$CG/cgroup.subtree_control || return 1
        mkdir -p $CG/cpuhpd-bench
        echo +cpu >$CG/cpuhpd-bench/cgroup.subtree_control || return 1
        (cd $CG/cpuhpd-bench && awk -v n=$NGROUPS 'BEGIN { for (i = 1; i <= n; i++) print "g" i }' | xargs mkdir -p) ||
            return 1
        info cgroups_$1 "$(ls -d $CG/cpuhpd-bench/g* | wc -l)" ;;
    *) return 1 ;;
    esac
}
teardown_config() {
    case $1 in
    part) echo member >$CG/cpuhpd-part/cpuset.cpus.partition 2>/dev/null; rmdir $CG/cpuhpd-part ;;
    cg[0-9]*t[0-9]*)
        # shellcheck disable=SC2086 # a list of pids
        [ -z "$BENCH_TASKS" ] || { kill $BENCH_TASKS; wait $BENCH_TASKS 2>/dev/null; }
        BENCH_TASKS=""
        teardown_config "${1%t*}" ;;
    cg[0-9]*) [ -d $CG/cpuhpd-bench ] && (cd $CG/cpuhpd-bench && ls -d g* 2>/dev/null | xargs rmdir) &&
                  rmdir $CG/cpuhpd-bench ;;
    esac
    return 0
}

assert_all_online "start"
for cfg in $(echo $CONFIGS | tr ',' ' '); do
    echo "=== bench config $cfg (uptime $(cut -d' ' -f1 /proc/uptime))"
    setup_config $cfg || { echo "BENCH-ERROR,$cfg,setup failed"; ERRORS=$((ERRORS + 1)); teardown_config $cfg; continue; }
    rep=1
    while [ $rep -le $REPS ]; do
        for wl in $(echo $WORKLOADS | tr ',' ' '); do
            [ -n "$(wl_cpus $wl)" ] || continue
            for m in $METHODS; do
                applies $m $wl || continue
                sample $cfg $wl $m offline $rep
                sample $cfg $wl $m online $rep
            done
        done
        echo "=== $cfg rep $rep done (uptime $(cut -d' ' -f1 /proc/uptime))"
        rep=$((rep + 1))
    done
    client_pass $cfg
    if [ $PHASE = 1 ] && [ $HAS_CPUHP_EVENTS = 1 ]; then
        for wl in all smt; do
            case ",$WORKLOADS," in *",$wl,"*) ;; *) continue ;; esac
            [ -n "$(wl_cpus $wl)" ] || continue
            for m in loop loop-exp smt-control direct; do
                contains " $METHODS " $m && applies $m $wl || continue
                phase $cfg $wl $m offline
                phase $cfg $wl $m online
            done
        done
    fi
    rebuild_pass $cfg $NGROUPS
    teardown_config $cfg
done
echo "BENCH-DONE,errors=$ERRORS"
assert_all_online "end"
[ $ERRORS = 0 ] || fail "$ERRORS runs left the wrong CPUs online or failed (BENCH-ERROR lines)"
exit 0
