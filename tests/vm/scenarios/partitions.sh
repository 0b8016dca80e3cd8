#!/bin/sh
# partitions: on a real kernel (cgroup v2), a cpuset partition over the last CPU of the other
# packages and the whole last package stays a valid partition through `cpuctl profile apply`
# of that package: cpuhpd shrinks it to the CPU left in one write before the package goes,
# and `cpuctl profile revert` gives the package back to it in one write. Taking every CPU of
# the partition offline is refused (EmptyPartition) and changes nothing.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
last_package_or_skip
# A cgroup2 mount of its own, given to the daemon as cgroup_root (the guest mounts none).
CG=/run/cpuhpd-cgroup
mkdir -p $CG
mount -t cgroup2 cgroup2 $CG 2>/tmp/mount.err || skip "cannot mount cgroup2 on $CG: $(cat /tmp/mount.err)"
grep -qw cpuset $CG/cgroup.controllers || skip "no cpuset controller in $CG/cgroup.controllers"
echo +cpuset >$CG/cgroup.subtree_control || skip "cannot enable cpuset in $CG/cgroup.subtree_control"
EXTRA=$(last $(minus "$PRESENT" "$P"))
ALL=$(compress $EXTRA $P)
mkdir -p $CG/rt
echo "$ALL" >$CG/rt/cpuset.cpus || fail "cannot set $CG/rt/cpuset.cpus to $ALL"
echo root >$CG/rt/cpuset.cpus.partition
KIND=$(cat $CG/rt/cpuset.cpus.partition)
[ "$KIND" = root ] || skip "the kernel did not make $CG/rt a partition: $KIND"
note "partition /rt: cpus $(cat $CG/rt/cpuset.cpus), effective $(cat $CG/rt/cpuset.cpus.effective)"
cleanup() { echo member >$CG/rt/cpuset.cpus.partition; cgroup_remove $CG/rt || note "$CGROUP_ERR"; umount $CG; }
assert_partition() { # cpus, context
    local cpus eff kind
    cpus=$(cat $CG/rt/cpuset.cpus); eff=$(cat $CG/rt/cpuset.cpus.effective)
    kind=$(cat $CG/rt/cpuset.cpus.partition)
    [ "$cpus" = "$1" ] && [ "$eff" = "$1" ] && [ "$kind" = root ] ||
        { cleanup; fail "$2: partition /rt is '$kind' with cpus '$cpus', effective '$eff'; expected root with $1"; }
    echo "  ok: $2: partition /rt is root with CPU $1"
}
daemon_restart_with "cgroup_root: $CG" "profiles: {evacuate: {offline: \"package:$PK\"}}"

cc plan offline package:$PK
assert_rc 0 "plan offline package:$PK"
grep -qx "partition /rt: CPU $ALL -> $EXTRA" $OUT || { cleanup; fail "the plan does not shrink /rt to $EXTRA"; }
assert_partition "$ALL" "after the plan (nothing changed)"

cc profile apply evacuate
assert_rc 0 "profile apply evacuate"
grep -qx "partition /rt: CPU $ALL -> $EXTRA" $OUT || { cleanup; fail "the result does not show /rt shrunk"; }
assert_offline_exactly "$P" "after profile apply evacuate"
assert_partition "$EXTRA" "after profile apply evacuate"
grep "partition\|cpuset" $DAEMON_LOG | tail -n 3 | sed 's/^/  | /'

cc profile revert
assert_rc 0 "profile revert"
grep -qx "partition /rt: CPU $EXTRA -> $ALL" $OUT || { cleanup; fail "the result does not show /rt restored"; }
assert_all_online "after profile revert"
assert_partition "$ALL" "after profile revert"

cc offline "$ALL"
assert_rc 1 "offline $ALL (every CPU of the partition)"
grep -q "EmptyPartition" $ERR || { cleanup; fail "no EmptyPartition refusal"; }
assert_all_online "after the refusal"
assert_partition "$ALL" "after the refusal"

cleanup
# A remote partition (kernel 6.7 on): its parent is a member that holds the CPUs in
# cpuset.cpus.exclusive. The daemon's walk skips the subtree of a member without exclusive
# CPUs, so this checks that it still reads below one with them.
mount -t cgroup2 cgroup2 $CG || fail "cannot mount cgroup2 on $CG again"
mkdir -p $CG/rm
if [ -e $CG/rm/cpuset.cpus.exclusive ]; then
    rcleanup() {
        echo member >$CG/rm/remote/cpuset.cpus.partition 2>/dev/null
        cgroup_remove $CG/rm/remote $CG/rm || note "$CGROUP_ERR"; umount $CG
    }
    mkdir -p $CG/rm/remote
    echo +cpuset >$CG/rm/cgroup.subtree_control &&
        echo "$ALL" >$CG/rm/cpuset.cpus && echo "$ALL" >$CG/rm/cpuset.cpus.exclusive &&
        echo "$ALL" >$CG/rm/remote/cpuset.cpus && echo "$ALL" >$CG/rm/remote/cpuset.cpus.exclusive &&
        echo root >$CG/rm/remote/cpuset.cpus.partition || { rcleanup; fail "cannot set up the remote partition /rm/remote on $ALL"; }
    KIND=$(cat $CG/rm/remote/cpuset.cpus.partition)
    [ "$KIND" = root ] || { rcleanup; fail "the kernel did not make /rm/remote a remote partition: $KIND"; }
    note "remote partition /rm/remote below the member /rm (exclusive $(cat $CG/rm/cpuset.cpus.exclusive))"
    cc plan offline package:$PK
    assert_rc 0 "plan offline package:$PK (remote partition)"
    grep -qx "partition /rm/remote: CPU $ALL -> $EXTRA" $OUT || { sed 's/^/  | /' $OUT; rcleanup; fail "the plan does not shrink the remote partition /rm/remote"; }
    echo "  ok: the plan shrinks the remote partition /rm/remote to $EXTRA"
    rcleanup
else
    note "no cpuset.cpus.exclusive (kernel before 6.7): no remote partition to check"
    rmdir $CG/rm 2>/dev/null; umount $CG
fi
daemon_restart_default
assert_all_online "end"
