#!/bin/busybox sh
# /init of the kernel smoke-test initramfs (see kernel/smoke-test.sh).
# Runs in a 16-vCPU guest (2 sockets x 4 cores x 2 threads). Prints
# "SMOKE PASS <what>" / "SMOKE FAIL <what>" lines and "SMOKE DONE <fails>",
# then powers the guest off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp

C=/sys/devices/system/cpu
fails=0
pass() { echo "SMOKE PASS $*"; }
fail() { echo "SMOKE FAIL $*"; fails=$((fails + 1)); }
expect_eq() { # what got want
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2' want '$3'"; fi
}
# write FILE VALUE: prints "ok" or the error text of the failed write
write() {
	err=$( (echo "$2" >"$1") 2>&1 ) && { echo ok; return; }
	case "$err" in
	*"not permitted"*) echo EPERM ;;
	*"busy"*) echo EBUSY ;;
	*"Invalid argument"*) echo EINVAL ;;
	*"temporarily unavailable"*) echo EAGAIN ;;
	*) echo "other: $err" ;;
	esac
}
# cpu_states FIRST LAST: the cpuN/online values, as a string
cpu_states() {
	s=
	i=$1
	while [ "$i" -le "$2" ]; do
		if [ -f $C/cpu$i/online ]; then s="$s$(cat $C/cpu$i/online)"; else s="${s}-"; fi
		i=$((i + 1))
	done
	echo "$s"
}

echo "SMOKE kernel $(uname -r), $(nproc) online, online=$(cat $C/online)," \
	"smt=$(cat $C/smt/control 2>/dev/null)"
expect_eq "16 CPUs online at boot" "$(cat $C/online)" "0-15"
expect_eq "offline file mode" "$(stat -c %a $C/offline)" "644"
expect_eq "online file mode" "$(stat -c %a $C/online)" "644"

# Uevents: record ACTION/DEVPATH of every uevent from now on.
uevent sh -c 'echo "$ACTION $DEVPATH" >>/tmp/uevents' &
uevent_pid=$!
sleep 1

# Count sched-domain rebuilds and synchronous grace periods with kprobes.
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null
kp=0
if [ -w $T/kprobe_events ]; then
	for f in partition_sched_domains_locked rebuild_sched_domains_locked synchronize_rcu; do
		echo "p:cpuhpd_$f $f" >>$T/kprobe_events && kp=1
	done
	echo 1 >$T/events/kprobes/enable
fi
hits() { awk -v e="cpuhpd_$1" '$1 == e { print $2 }' $T/kprobe_profile; }
snap() { echo "$(hits partition_sched_domains_locked) $(hits synchronize_rcu)"; }
delta() { # before after -> "pd=N rcu=M"
	set -- $1 $2
	echo "partition_sched_domains=$(($3 - $1)) synchronize_rcu=$(($4 - $2))"
}

# 1. batch offline 8-15
before=$(snap)
t0=$(date +%s)
expect_eq "write 8-15 > offline" "$(write $C/offline 8-15)" ok
t1=$(date +%s)
[ $kp = 1 ] && echo "SMOKE COUNT batch offline 8-15: $(delta "$before" "$(snap)") ($((t1 - t0)) s)"
expect_eq "online after batch offline" "$(cat $C/online)" "0-7"
expect_eq "offline after batch offline" "$(cat $C/offline)" "8-15"
expect_eq "cpu1..15/online after batch offline" "$(cpu_states 1 15)" "111111100000000"

# 2. batch online 8-15
before=$(snap)
t0=$(date +%s)
expect_eq "write 8-15 > online" "$(write $C/online 8-15)" ok
t1=$(date +%s)
[ $kp = 1 ] && echo "SMOKE COUNT batch online 8-15: $(delta "$before" "$(snap)") ($((t1 - t0)) s)"
expect_eq "online after batch online" "$(cat $C/online)" "0-15"
expect_eq "offline after batch online" "$(cat $C/offline)" ""
expect_eq "cpu1..15/online after batch online" "$(cpu_states 1 15)" "111111111111111"

# 3. the same CPUs one by one, for comparison of the counts
before=$(snap)
t0=$(date +%s)
for i in 8 9 10 11 12 13 14 15; do echo 0 >$C/cpu$i/online; done
t1=$(date +%s)
[ $kp = 1 ] && echo "SMOKE COUNT per-CPU offline 8-15: $(delta "$before" "$(snap)") ($((t1 - t0)) s)"
before=$(snap)
t0=$(date +%s)
for i in 8 9 10 11 12 13 14 15; do echo 1 >$C/cpu$i/online; done
t1=$(date +%s)
[ $kp = 1 ] && echo "SMOKE COUNT per-CPU online 8-15: $(delta "$before" "$(snap)") ($((t1 - t0)) s)"
expect_eq "online after per-CPU loop" "$(cat $C/online)" "0-15"

# 4. refusals, nothing may change
expect_eq "write 0 > offline" "$(write $C/offline 0)" EPERM
expect_eq "write 0-15 > offline" "$(write $C/offline 0-15)" EBUSY
expect_eq "write garbage > offline" "$(write $C/offline 'x-y')" EINVAL
expect_eq "write garbage > online" "$(write $C/online 'foo')" EINVAL
expect_eq "write 16 (not present) > offline" "$(write $C/offline 16)" EINVAL
expect_eq "write 63 (not present) > online" "$(write $C/online 63)" EINVAL
expect_eq "write 999 (out of range) > offline" "$(write $C/offline 999)" EINVAL
expect_eq "write 1,16 > offline" "$(write $C/offline 1,16)" EINVAL
expect_eq "online after refusals" "$(cat $C/online)" "0-15"
expect_eq "write 1-3 > online (already online)" "$(write $C/online 1-3)" ok

# 5. idempotence: already-offline CPUs are skipped
expect_eq "write 14-15 > offline" "$(write $C/offline 14-15)" ok
expect_eq "write 12-15 > offline (14-15 already)" "$(write $C/offline 12-15)" ok
expect_eq "online after partial overlap" "$(cat $C/online)" "0-11"
expect_eq "write 12-15 > online" "$(write $C/online 12-15)" ok

# 6. mid-batch failure via cpuN/hotplug/fail: siblings go first (9, 11,
# 13, 15 on this topology), so failing cpu13 leaves 9 and 11 offline.
st=$(awk -F': ' '$2 == "sched:active" { print $1 }' $C/hotplug/states)
if [ -n "$st" ] && [ -w $C/cpu13/hotplug/fail ]; then
	echo "$st" >$C/cpu13/hotplug/fail
	expect_eq "write 8-15 > offline, cpu13 fails" "$(write $C/offline 8-15)" EAGAIN
	expect_eq "online after mid-batch failure" "$(cat $C/online)" "0-8,10,12-15"
	expect_eq "cpu8..15/online after failure" "$(cpu_states 8 15)" "10101111"
	expect_eq "write 8-15 > online after failure" "$(write $C/online 8-15)" ok
	expect_eq "online after recovery" "$(cat $C/online)" "0-15"
else
	fail "no sched:active state or cpu13/hotplug/fail"
fi

# 7. uevents of the batch
sleep 1
n_off=$(grep -c '^offline /devices/system/cpu/cpu' /tmp/uevents)
n_on=$(grep -c '^online /devices/system/cpu/cpu' /tmp/uevents)
# 8 (batch) + 8 (loop) + 2 + 2 + 2 (failure) offline, and as many online
expect_eq "offline uevents" "$n_off" 22
expect_eq "online uevents" "$n_on" 22
kill $uevent_pid 2>/dev/null

# 8. not bootable: SMT siblings while SMT is off -> EPERM, nothing changed
if [ -w $C/smt/control ]; then
	echo off >$C/smt/control
	expect_eq "online with smt off" "$(cat $C/online)" "0,2,4,6,8,10,12,14"
	expect_eq "write 8-9 > online with smt off" "$(write $C/online 8-9)" EPERM
	expect_eq "online after EPERM" "$(cat $C/online)" "0,2,4,6,8,10,12,14"
	expect_eq "write 8 > offline with smt off" "$(write $C/offline 8)" ok
	expect_eq "write 8 > online with smt off" "$(write $C/online 8)" ok
	echo on >$C/smt/control
	expect_eq "online with smt on" "$(cat $C/online)" "0-15"
fi

# 9. the kernel's own selftest, if it was put into the initramfs
if [ -x /selftest/cpu-on-off-test.sh ]; then
	echo "SMOKE selftest cpu-on-off-test.sh -a start"
	if (cd /selftest && UID=0 sh ./cpu-on-off-test.sh -a) >/tmp/selftest.log 2>&1; then
		pass "selftest cpu-on-off-test.sh -a"
	else
		fail "selftest cpu-on-off-test.sh -a"
	fi
	sed 's/^/SMOKE selftest: /' /tmp/selftest.log | tail -20
	expect_eq "online after selftest" "$(cat $C/online)" "0-15"
fi

dmesg | grep -E "cpu_(down|up)_mask|WARNING|BUG|lockdep|circular|possible recursive" |
	sed 's/^/SMOKE dmesg: /'
echo "SMOKE DONE $fails"
poweroff -f
