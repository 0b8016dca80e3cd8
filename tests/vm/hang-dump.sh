#!/usr/bin/env bash
# Where is each vCPU of a stuck guest? Asks QEMU's monitor for every vCPU's registers
# and names the kernel function each RIP is in (from a System.map, when there is one).
# run-guest.sh calls it when the console shows an RCU stall or a lockup, and shortly
# before its timeout kills a hung guest, so that a hang leaves evidence behind.
#
#   tests/vm/hang-dump.sh MONITOR-SOCKET [SYSTEM-MAP]
#
# Prints one line per vCPU: "CPU#N RIP <address> <symbol+offset> (halted)".
# Needs socat; exits 1 when the monitor does not answer.
set -euo pipefail
monitor="$1"
map="${2:-}"
command -v socat >/dev/null || { echo "hang-dump: no socat" >&2; exit 1; }
[ -S "$monitor" ] || { echo "hang-dump: no monitor socket $monitor" >&2; exit 1; }

# The monitor drops a connection whose input ended, output and all: keep it open a while.
regs=$({ printf 'info registers -a\n'; sleep 4; } | timeout 20 socat - "UNIX-CONNECT:$monitor" |
    tr -d '\r') ||
    { echo "hang-dump: the monitor did not answer" >&2; exit 1; }

# Kernel text lives at 0xffffffff8xxxxxxx: comparing the low 32 bits is exact in awk's
# doubles (the full 64-bit value is not).
echo "$regs" | awk -v map="$map" '
function hex32(h,    i, v) {
    h = tolower(h); v = 0
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v
}
BEGIN {
    n = 0
    if (map != "")
        while ((getline line < map) > 0) {
            split(line, f, " ")
            if (f[2] !~ /^[tTwW]$/ || substr(f[1], 1, 8) != "ffffffff") continue
            # section markers share their address with the first function
            if (f[3] ~ /^__.*_(start|end)$/ || f[3] ~ /^_[se]text$/) continue
            addr[n] = hex32(substr(f[1], 9)); name[n] = f[3]; n++
        }
}
/^CPU#[0-9]+/ { cpu = $1 }
/RIP=/ {
    halted = ($0 ~ /HLT=1/) ? " (halted)" : ""
    match($0, /RIP=[0-9a-f]+/); rip = substr($0, RSTART + 4, RLENGTH - 4)
    sym = ""
    if (n > 0 && substr(rip, 1, 8) == "ffffffff") {
        r = hex32(substr(rip, 9)); best = -1
        for (i = 0; i < n; i++) if (addr[i] <= r && (best < 0 || addr[i] > addr[best])) best = i
        if (best >= 0) sym = sprintf("%s+0x%x", name[best], r - addr[best])
    }
    printf "%s RIP %s %s%s\n", cpu, rip, sym, halted
}'
