#!/bin/sh
# bulk-attach: moving a task into a cpuset whose CPUs a batch is taking down must not
# trip cpuset_attach_task()'s WARN_ON_ONCE(set_cpus_allowed_ptr()). Two cgroup v2
# cpusets: A on the last package's CPUs, B on the rest. A task is moved A -> B -> A ...
# as fast as the shell can write cgroup.procs while batches take the package down and
# bring it back (ATTACH_ROUNDS, default 12). Then the kernel log must hold no WARNING,
# the task must be alive with an affinity inside the CPUs online, and every CPU online.
# Series v3 without the cpuset change: during an offline batch the package's CPUs are
# online but inactive and A's effective CPUs still name them (the batch does one cpuset
# update at its end), so guarantee_online_cpus() gave set_cpus_allowed_ptr() a mask with
# no active CPU and it failed with EINVAL.
# ATTACH_PATH=loop takes the package down and up one cpuN/online write at a time instead,
# so that the same race runs on a kernel without the series (the stock baseline).
. /cpuhpd-tests/lib.sh
[ "${ATTACH_PATH:-bulk}" = loop ] || need_bulk_kernel
assert_all_online "start"
need_cpuset_v2
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
ROUNDS=${ATTACH_ROUNDS:-12}
PK=$(last $(packages))
B=$(cpus_of_pkg $PK)
BL=$(compress $B)
REST=$(compress $(minus "$PRESENT" "$B"))
PAT="$KERNEL_SPLAT|Call Trace"
pre=$(splat_count "$PAT")
note "cpuset A {$BL} (package $PK), B {$REST}; $ROUNDS offline/online batches of {$BL}"

cpuset_pair attach-a "$BL" attach-b "$REST" || fail "cannot make cpusets attach-a {$BL} and attach-b {$REST}"

# ATTACH_TASK=spin: a loop that never forks, to tell a fault of the moved task from one of
# its short-lived children (each usleep is a child that exits while the batch runs)
case "${ATTACH_TASK:-fork}" in
spin) sh -c 'while :; do :; done' & ;;
*) sh -c 'while :; do usleep 1000; done' & ;;
esac
T=$!
MOVER=""
cleanup() {
    [ -n "$MOVER" ] && kill $MOVER 2>/dev/null; wait $MOVER 2>/dev/null; MOVER=""
    kill $T 2>/dev/null; wait $T 2>/dev/null
    cgroup_remove $CG/attach-a $CG/attach-b
}
# the mover: A, B, A, ... until killed; a refused move (EBUSY/ENOSPC) is only counted
sh -c "n=0; while :; do echo $T >$CG/attach-a/cgroup.procs 2>/dev/null; echo $T >$CG/attach-b/cgroup.procs 2>/dev/null; n=\$((n + 1)); echo \$n >/tmp/attach-moves; done" &
MOVER=$!
usleep 200000
r=1
while [ $r -le $ROUNDS ]; do
    if [ "${ATTACH_PATH:-bulk}" = loop ]; then
        for c in $B; do
            kwrite $SYS/cpu$c/online 0 >/dev/null; [ "$KW" = ok ] || { cleanup; fail "round $r: cpu$c/online = 0: $KW"; }
        done
        for c in $B; do
            kwrite $SYS/cpu$c/online 1 >/dev/null; [ "$KW" = ok ] || { cleanup; fail "round $r: cpu$c/online = 1: $KW"; }
        done
        echo "+ round $r: {$BL} down and up one CPU at a time"
        r=$((r + 1))
        continue
    fi
    kwrite $SYS/offline "$BL"; [ "$KW" = ok ] || { cleanup; fail "round $r: write $BL > offline: $KW"; }
    kwrite $SYS/online "$BL"; [ "$KW" = ok ] || { cleanup; fail "round $r: write $BL > online: $KW"; }
    r=$((r + 1))
done
moves=$(cat /tmp/attach-moves 2>/dev/null)
kill -0 $T 2>/dev/null || { cleanup; fail "the moved task $T died"; }
a=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$T/status)
# a cpuset left behind (A on the package) would make the next scenario's partition on it
# invalid ("not exclusive"): seen in CI when rmdir raced the task's last usleep child
cleanup || fail "$CGROUP_ERR"
post=$(splat_count "$PAT")
[ "$post" -ge "$pre" ] || fail "the kernel log lost lines (splat lines $pre before, $post after): it wrapped, so this check is blind; boot with a larger log_buf_len"
if [ "$post" != "$pre" ]; then
    splat_show $((pre + 1)) "$PAT"
    fail "the kernel log has $((post - pre)) new splat lines after $ROUNDS batches racing $moves cpuset moves"
fi
echo "  ok: $ROUNDS batches of {$BL} each way raced ${moves:-?} cpuset moves A<->B: no WARNING; the task's last affinity {$a}"
assert_all_online "end"
exit 0
