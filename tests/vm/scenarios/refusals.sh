#!/bin/sh
# refusals: requests cpuhpd must refuse before touching anything - cpu0 (no online
# file), a protected CPU, a CPU that is not present, too few left online
# (min_online), malformed masks. Each: cpuctl exit 2 and the kernel's online mask
# unchanged (per CPU and /sys/devices/system/cpu/online).
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
H=$(hotpluggable)
n=$(count $H)
[ $n -ge 3 ] || skip "needs 3 hotpluggable CPUs, have $n"
a=$(nth 0 $H); b=$(nth 1 $H); z=$(last $H)

refused() { # desc, cpuctl args...
    local desc="$1"; shift
    local before; before=$(cat $SYS/online)
    cc --json "$@"
    assert_rc 2 "$desc"
    assert_eq "$(cat $SYS/online)" "$before" "$desc: $SYS/online unchanged"
    assert_all_online "$desc"
}

# cpu0: no online file on x86 -> NotHotpluggable (or ProtectedCpu, it is protected too)
has_online_file 0 && note "cpu0 has an online file here" || note "cpu0 has no online file"
refused "offline cpu0" offline 0
refused "offline cpu0 with others" offline "0,$z"

# a CPU without an online file that is NOT protected: restart with protected_cpus ""
if ! has_online_file 0; then
    daemon_restart_with 'protected_cpus: ""'
    refused "offline cpu0 (not hotpluggable, unprotected)" offline "0,$a"
    daemon_restart_default
fi

# a protected CPU: restart cpuhpd with protected_cpus "0,<b>"
daemon_restart_with "protected_cpus: \"0,$b\""
refused "offline protected cpu$b" offline $b
refused "offline protected cpu$b among others" offline "$a-$z"
# A selector leaves the protected CPU out instead (docs/interface.md, since be7190c):
# core:$b is the rest of cpu$b's core; cpu$b stays online.
want=$(minus "$(union "$(siblings_of $b) $z")" "$b")
cc --json offline "core:$b" $z
assert_rc 0 "offline core:$b $z (selector leaves protected cpu$b out)"
assert_offline_exactly "$want" "offline core:$b $z"
cc --json online "$(compress $want)"
assert_rc 0 "online $(compress $want)"
assert_all_online "after core:$b"
daemon_restart_default

# not present: beyond the possible CPUs, and possible-but-not-present if any
MAXP=$(last $(possible))
refused "offline cpu$((MAXP + 1)) (not possible)" offline $((MAXP + 1))
refused "offline $a,$((MAXP + 1))" offline "$a,$((MAXP + 1))"
refused "offline cpu 4096" offline 4096
np=$(minus "$(possible)" "$(present)")
if [ -n "$np" ]; then
    refused "offline cpu$(first $np) (possible, not present)" offline $(first $np)
else
    note "possible = present ($(cat $SYS/possible)): no possible-but-absent CPU to try"
fi
refused "online cpu$((MAXP + 1)) (not possible)" online $((MAXP + 1))
refused "package:99" offline package:99
refused "node:99" offline node:99

# min_online: with min_online = online count - 1, taking two CPUs offline is refused
on=$(count $(kernel_online))
daemon_restart_with "min_online: $((on - 1))"
refused "min_online=$((on - 1)): offline 2 CPUs" offline "$a,$z"
refused "min_online=$((on - 1)): offline all" offline all
daemon_restart_default
# and with the default min_online (1) offline all leaves the protected CPU: allowed
# (covered by the allaps scenario); min_online = every CPU refuses even one
daemon_restart_with "min_online: $on"
refused "min_online=$on: offline 1 CPU" offline $z
daemon_restart_default

# malformed masks
for m in abc "$a-" "$z-$a" "0xzz" "0x" "package:" "package:x" "core:" "node:-1" \
         "$a-$z:3/2" "-1" "smt:1" "1.5"; do
    refused "malformed mask '$m'" offline "$m"
done
refused "malformed mask among good ones" offline $a "bogus" $z
refused "online malformed" online "$a-"
# no mask at all is a usage error
refused "offline without a mask" offline
refused "unknown --strategy" offline --strategy warp $a
exit 0
