#!/bin/sh
# demo (guest side): cpuctl topology/status, then every AP offline and back online,
# timed, side by side: a plain per-CPU shell loop, chcpu, cpuctl per-cpu and (on the
# patched kernel) cpuctl bulk and the bare bulk write, with counts per batch.
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
echo "################ $(count $H) APs: {$(compress $H)}: every AP offline, then online, $reps repetitions"
echo "################ (the benchmark's guest script, tests/vm/guest/bench.sh; kprobe counts per batch)"
# The methods the demo compares; the bulk ones only where the kernel has the interface.
BENCH_REPS=$reps BENCH_CONFIGS=cg0 BENCH_WORKLOADS=all BENCH_PHASE=0 BENCH_REBUILD_REPS=0 \
    BENCH_METHODS=loop,chcpu,cpuctl-per-cpu,cpuctl-bulk,direct \
    sh /cpuhpd-tests/bench.sh >/tmp/demo.bench 2>&1
brc=$?
grep -E '^(BENCH-ERROR|ASSERT)' /tmp/demo.bench
grep -q '^BENCH-INFO,bulk_interface,yes' /tmp/demo.bench ||
    echo "(this kernel has no bulk interface: cpuctl uses per-CPU writes; scripts/demo.sh without --stock boots the patched kernel)"
echo "################ medians over $reps runs, $(count $H) CPUs (TCG guest: ratios and counts matter, not absolute times)"
awk -F, '
    $1 == "BENCH-SAMPLE" && $9 == "ok" { k = $4 SUBSEP $5; n[k]++; ms[k, n[k]] = $8
        rb[k] = $10; rcu[k] = $11; sm[k] = $14; if (!($4 in seen)) { seen[$4] = 1; order[++nm] = $4 } }
    function med(k,   i, j, t, c, a) { c = n[k]; for (i = 1; i <= c; i++) a[i] = ms[k, i]
        for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[int((c + 1) / 2)] }
    END {
        name["loop"] = "per-CPU shell loop"; name["chcpu"] = "chcpu -d / -e"
        name["cpuctl-per-cpu"] = "cpuctl --strategy per-cpu"; name["cpuctl-bulk"] = "cpuctl --strategy bulk"
        name["direct"] = "echo LIST > cpu/offline|online"; name["loop-exp"] = "loop, rcu_expedited=1"
        lo = med("loop" SUBSEP "offline"); ln = med("loop" SUBSEP "online")
        printf "  %-32s %9s %6s %9s %6s   %-9s %-9s %s\n", "", "offline", "ratio", "online", "ratio", "rebuilds", "sync_rcu", "stop_machine"
        printf "  %-32s %9s %6s %9s %6s   %-9s %-9s %s\n", "", "", "", "", "", "off/on", "off/on", "off"
        for (i = 1; i <= nm; i++) { m = order[i]; f = m SUBSEP "offline"; o = m SUBSEP "online"
            a = med(f); b = med(o)
            printf "  %-32s %7.2f s %6.2f %7.2f s %6.2f   %-9s %-9s %s\n", name[m], a / 1000, (lo ? a / lo : 0), b / 1000, (ln ? b / ln : 0), rb[f] "/" rb[o], rcu[f] "/" rcu[o], sm[f] }
        print "  (counts: kprobe hits in the last repetition: partition_sched_domains_locked = sched-domain rebuilds,"
        print "   synchronize_rcu, stop_machine_cpuslocked; ratio = method / loop)" }' /tmp/demo.bench
echo "################ cpuctl status (end)"
cpuctl status
assert_all_online "demo end"
[ $brc = 0 ] || fail "a method failed or left the wrong CPUs online (BENCH-ERROR above)"
exit 0
