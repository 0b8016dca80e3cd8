#!/bin/sh
# bulk-selftest: the kernel's own tools/testing/selftests/cpu-hotplug/cpu-on-off-test.sh
# (copied from Debian's linux-source-6.1 by mkinitramfs.sh) passes on the patched
# kernel: -a takes every hotpluggable CPU offline and back online, one at a time,
# through the per-CPU online files the series must keep working. Run with busybox sh
# and UID=0 (the script checks $UID, which busybox does not set).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
ST=/cpuhpd-tests/selftest/cpu-on-off-test.sh
[ -f $ST ] || skip "cpu-on-off-test.sh not in the initramfs (no linux-source-6.1 at build time)"
assert_all_online "start"
echo "+ (cd $(dirname $ST) && UID=0 sh ./cpu-on-off-test.sh -a)"
t0=$(now_ms)
(cd $(dirname $ST) && UID=0 sh ./cpu-on-off-test.sh -a) >/tmp/selftest.log 2>&1
rc=$?
t1=$(now_ms)
sed 's/^/  | /' /tmp/selftest.log | tail -n 30
note "cpu-on-off-test.sh -a: exit $rc in $((t1 - t0)) ms"
[ $rc -eq 0 ] || fail "cpu-on-off-test.sh -a exited $rc"
grep -q 'unexpected' /tmp/selftest.log && fail "cpu-on-off-test.sh -a: $(grep -m1 unexpected /tmp/selftest.log)"
assert_all_online "after the selftest"
exit 0
