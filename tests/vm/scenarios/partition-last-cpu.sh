#!/bin/sh
# partition-last-cpu: a cgroup v2 cpuset partition on the last package, with a task in
# it, taken down one `cpuN/online` write at a time (the per-CPU path), then brought back
# one at a time. Every write must succeed, the last CPU's included: the partition goes
# "root invalid" and its task falls back to the parent's CPUs, then the partition is a
# valid "root" on all its CPUs again. Red on the 6.12 series without its patches 12-13:
# the last CPU got EBUSY (its own fair server counted against the CPUs left), and with
# only the fair-server fix, bringing the CPUs back warned of overlapping partitions
# (cpuset.c:888, the kernel-log check of init). Runs on the patched kernels (6.1 has no
# fair servers and must pass as it is).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
need_cpuset_v2
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
B=$(cpus_of_pkg $(last $(packages)))
BL=$(compress $B)
REST=$(minus "$PRESENT" "$B")
partition_make p "$BL" || fail "$PARTITION_ERR"
sh -c 'while :; do sleep 1; done' & T=$!
cleanup() { kill $T 2>/dev/null; wait $T 2>/dev/null; partition_remove p; }
trap cleanup EXIT
task_cpus() { expand "$(taskset -pc $T 2>/dev/null | sed 's/.*: //')"; }
echo $T >$CG/p/cgroup.procs || fail "cannot move task $T into the partition"
assert_eq "$(rd $CG/p/cpuset.cpus.partition)" root "partition p {$BL}"

for c in $B; do
    kwrite_ok $SYS/cpu$c/online 0 "cpu$c/online = 0 of the partition {$BL}"
done
state=$(rd $CG/p/cpuset.cpus.partition)
note "every CPU of p offline: partition '$state'"
case "$state" in "root invalid"*) echo "  ok: partition invalid with no CPU online" ;;
*) fail "partition with every CPU offline: '$state', expected 'root invalid (...)'" ;; esac
aff=$(task_cpus)
[ -n "$aff" ] || fail "cannot read task $T's affinity"
[ -z "$(minus "$aff" "$REST")" ] || fail "task $T's affinity {$(compress $aff)} is not within the parent's CPUs {$(compress $REST)}"
echo "  ok: task $T runs on {$(compress $aff)}, within the parent's CPUs"

for c in $B; do
    kwrite_ok $SYS/cpu$c/online 1 "cpu$c/online = 1"
done
assert_eq "$(rd $CG/p/cpuset.cpus.partition)" root "partition p with its CPUs back"
assert_eq "$(rd $CG/p/cpuset.cpus.effective)" "$BL" "partition p's effective CPUs"
aff=$(task_cpus)
assert_eq "$(compress $aff)" "$BL" "task $T's affinity, back in the partition"
cleanup; trap - EXIT
assert_all_online end
exit 0
