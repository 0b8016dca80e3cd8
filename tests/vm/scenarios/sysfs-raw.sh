#!/bin/sh
# sysfs-raw: harness self-check without cpuhpd. Takes the last hotpluggable CPU
# offline with a plain sysfs write, checks the kernel's view, brings it back.
. /cpuhpd-tests/lib.sh
assert_all_online "start"
# what the topology-derived helpers see (every other scenario builds on them)
note "present={$(compress $(present))} hotpluggable={$(compress $(hotpluggable))} protected={$(compress $(protected_cpus))}"
for p in $(packages); do note "package $p: {$(compress $(cpus_of_pkg $p))}"; done
for n in $(nodes); do note "node $n: {$(compress $(cpus_of_node $n))}"; done
note "smt/control=$(smt_control) secondaries={$(compress $(smt_secondaries))} core of cpu$(last $(present)): {$(compress $(siblings_of $(last $(present))))}"
H=$(hotpluggable)
[ -n "$H" ] || fail "no hotpluggable CPU in the guest"
X=$(last $H)
echo "+ echo 0 > $SYS/cpu$X/online"
echo 0 >$SYS/cpu$X/online || fail "offlining cpu$X failed"
assert_offline_exactly "$X" "raw offline cpu$X"
echo "+ echo 1 > $SYS/cpu$X/online"
echo 1 >$SYS/cpu$X/online || fail "onlining cpu$X failed"
assert_all_online "raw online cpu$X"
# cpu0 has no online file on x86 (unless cpu0_hotplug)
has_online_file 0 && note "cpu0 has an online file on this kernel" || note "cpu0 has no online file"
exit 0
