#!/bin/sh
# bulk-cachectl: an online batch sets up the cache controls (x86 MTRRs and PAT) of its
# CPUs in one stop_machine() rendezvous, not one per CPU. A CPU that comes up on its own
# runs stop_machine_from_inactive_cpu() (6.12: cache_ap_online(), 6.1: mtrr_ap_init());
# inside a batch its CPUs skip that and the batch ends with one cache_aps_init() (6.12)
# or mtrr_aps_init() (6.1), as thaw_secondary_cpus() does on resume. Counted with kprobe
# hits for: the per-CPU loop (one rendezvous per CPU: the probe sees them), a bulk write
# of every hotpluggable CPU, smt/control on, and a batch that fails part way; after each
# batch one CPU brought up alone must rendezvous again (the batch left nothing deferred).
# Skips on a kernel without the rendezvous (no CONFIG_MTRR, or a CPU without MTRRs).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
AP=stop_machine_from_inactive_cpu
END=cache_aps_init
grep -q " $END\$" /proc/kallsyms 2>/dev/null || END=mtrr_aps_init
kprobes_setup $AP $END || skip "no kprobe events on $AP and $END"
assert_all_online "start"
H=$(hotpluggable)
L=$(compress $H)
N=$(count $H)
C=$(last $H)
hits() { echo "$(kprobe_hits $AP) $(kprobe_hits $END)"; }
# counted CMD...: runs CMD (its exit status), sets A and E to the rendezvous it made per
# CPU and at the end
counted() {
    local b rc
    b=$(hits)
    "$@"
    rc=$?
    set -- $b $(hits)
    A=$(($3 - $1)) E=$(($4 - $2))
    return $rc
}
put() { echo "$1" >"$2"; }
loop_online() { local c; for c in $H; do put 1 $SYS/cpu$c/online || fail "echo 1 > cpu$c/online"; done; }
loop_offline() { local c; for c in $(kernel_order offline "$H"); do put 0 $SYS/cpu$c/online || fail "echo 0 > cpu$c/online"; done; }
# up_alone WHAT: cpu$C, offline, brought up by itself makes its own rendezvous
up_alone() {
    counted put 1 $SYS/cpu$C/online || fail "$1: echo 1 > cpu$C/online"
    assert_eq "$A" 1 "$1: rendezvous of cpu$C brought up alone"
}
alone() { put 0 $SYS/cpu$C/online || fail "$1: echo 0 > cpu$C/online"; up_alone "$1"; }

loop_offline
counted loop_online
assert_all_online "after the loop"
[ "$A" = 0 ] && skip "no per-CPU cache-control rendezvous on this kernel ($AP: 0 hits for $N CPUs; $(uname -r), no CONFIG_MTRR?)"
assert_eq "$A" "$N" "per-CPU loop: one $AP per CPU"

loop_offline
counted put $L $SYS/online || true
assert_all_online "after the bulk online of $L"
note "bulk online of $L: $AP $A, $END $E"
assert_eq "$A" 0 "bulk online of $L: $AP"
assert_eq "$E" 1 "bulk online of $L: $END"
alone "after the bulk online"

if [ "$(smt_control)" = on ]; then
    echo off >$SYS/smt/control || fail "smt/control off"
    counted put on $SYS/smt/control || true
    assert_eq "$(smt_control)" on "smt/control"
    assert_all_online "after smt/control on"
    note "smt/control on: $AP $A, $END $E"
    assert_eq "$A" 0 "smt/control on: $AP"
    assert_eq "$E" 1 "smt/control on: $END"
    alone "after smt/control on"
else
    note "smt/control is $(smt_control): its batch not counted"
fi

# A batch that fails at its last CPU: the CPUs before it came up and had their cache
# controls set up at the end, and nothing stays deferred.
FS=$(hotplug_state_num sched:active)
if [ -e $SYS/cpu$C/hotplug/fail ] && [ -n "$FS" ]; then
    loop_offline
    echo $FS >$SYS/cpu$C/hotplug/fail || fail "cannot inject a failure at sched:active of cpu$C"
    counted put $L $SYS/online 2>/dev/null && fail "bulk online of $L with cpu$C failing succeeded"
    echo -1 >$SYS/cpu$C/hotplug/fail
    cpu_is_online $C && fail "cpu$C came online despite the injected failure"
    note "failed bulk online of $L: $AP $A, $END $E"
    assert_eq "$A" 0 "failed bulk online: $AP"
    assert_eq "$E" 1 "failed bulk online: $END"
    up_alone "after the failed batch"
else
    note "no hotplug/fail or no sched:active state: the failed batch is not counted"
fi
assert_all_online "end"
