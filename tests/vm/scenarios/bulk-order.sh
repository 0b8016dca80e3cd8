#!/bin/sh
# bulk-order: a CPU's KOBJ_ONLINE uevent arrives only once cpusets know the CPU, as
# for a per-CPU write (cpu_up_down_serialize_trainwrecks()). A netlink listener
# (uevent-count -c) acts like a udev rule or an orchestrator: on each KOBJ_ONLINE for
# cpuN it at once reads the root cgroup's cpuset.cpus.effective (N must be there),
# writes N into a child cpuset's cpuset.cpus and reads the child's effective CPUs
# back (they must be N). Every CPU of a batch of all hotpluggable CPUs (15 on smt16)
# must pass, through a bare write to cpu/online and through cpuctl's bulk strategy.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v uevent-count >/dev/null || skip "uevent-count not in the initramfs (no static gcc at build time)"
need_cpuset_v2
assert_all_online "start"
H=$(hotpluggable)
HL=$(compress $H)
N=$(count $H)
PROBE=$CG/cpuhpd-order
grep -qw cpuset $CG/cgroup.subtree_control || echo +cpuset >$CG/cgroup.subtree_control ||
    fail "cannot enable +cpuset in the root cgroup"
mkdir -p $PROBE || fail "cannot create $PROBE"

# probe HOW: all of H offline, then online through HOW with the listener acting on each
# KOBJ_ONLINE; asserts N uevents and no CPU missing from cpusets when its uevent came.
probe() {
    local how=$1 pid i=0
    kwrite $SYS/offline "$HL"; assert_eq "$KW" ok "write $HL > offline"
    assert_offline_exactly "$H" "before the probe"
    rm -f /tmp/uo.ready /tmp/uo.out
    uevent-count -t 300 -n $N -r /tmp/uo.ready -c $PROBE >/tmp/uo.out 2>/tmp/uo.err &
    pid=$!
    while [ ! -e /tmp/uo.ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    [ -e /tmp/uo.ready ] || fail "uevent-count did not start"
    case $how in
    direct) kwrite $SYS/online "$HL"; assert_eq "$KW" ok "write $HL > online" ;;
    cpuctl) cc --json online --strategy bulk "$HL"; assert_rc 0 "cpuctl online --strategy bulk $HL"
            assert_strategy bulk "cpuctl online $HL" ;;
    esac
    # -n N: the listener ends by itself after the N-th uevent (or after 300 s).
    wait $pid
    sed 's/^/  | /' /tmp/uo.out
    grep -q ENOBUFS /tmp/uo.err && fail "$how: the listener lost messages (ENOBUFS)"
    assert_eq "$(head -n1 /tmp/uo.out)" "offline=0 online=$N" "$how: KOBJ_ONLINE uevents"
    assert_eq "$(sed -n 's/^cpuset-bad=//p' /tmp/uo.out)" 0 \
        "$how: CPUs missing from cpuset.cpus.effective or not assignable when their uevent came"
    assert_all_online "$how: after the batch"
}

probe direct
if has_cap bulk; then probe cpuctl; else note "cpuhpd does not list bulk ($(caps)): cpuctl case not run"; fi
rmdir $PROBE
exit 0
