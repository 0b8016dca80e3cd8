#!/usr/bin/env bash
# bash-test.sh COMPLETION_FILE: sources the bash completion of cpuctl in this
# non-interactive bash and drives _cpuctl through COMP_WORDS/COMP_CWORD as bash would,
# over a fake sysfs tree (2 packages, dies 0, nodes 0 and 1, CPUs 0-3), no terminal.
set -uo pipefail
source "$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$tmp/devices/system/cpu
for c in 0 1 2 3; do
    mkdir -p "$cpu/cpu$c/topology"
    echo $((c / 2)) >"$cpu/cpu$c/topology/physical_package_id"
    echo 0 >"$cpu/cpu$c/topology/die_id"
done
rm -r "$cpu/cpu3/topology"  # offline: the kernel removes topology/
mkdir -p "$tmp/devices/system/node/node0" "$tmp/devices/system/node/node1" "$cpu/cpufreq"
export _CPUCTL_SYSFS=$tmp
COMP_WORDBREAKS=$' \t\n"\'><=;|&(:'
failures=0

# check "WORDS..." EXPECTED: the command line split as bash splits it (":" separate),
# the cursor on the last word; EXPECTED is the sorted replies joined by spaces.
check() {
    read -r -a COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _cpuctl
    local got
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
    if [[ $got != "$2" ]]; then
        echo "FAIL '$1': got '$got', expected '$2'"
        failures=$((failures + 1))
    fi
}

check "cpuctl " "cancel holds offline online plan profile release smt status topology watch"
check "cpuctl o" "offline online"
check "cpuctl --json s" "smt status"
check "cpuctl --timeout " ""
check "cpuctl --timeout 5 t" "topology"
check "cpuctl --v" "--version"
check "cpuctl offline " "all core:0 core:1 core:2 core:3 die:0 node:0 node:1 package:0 package:1 smt"
check "cpuctl offline pa" "package:0 package:1"
check "cpuctl offline package :" "0 1"
check "cpuctl offline package : 1" "1"
check "cpuctl online node :" "0 1"
check "cpuctl online core : 3" "3"
check "cpuctl offline 4,6,7 --b" "--best-effort --bus-address"
check "cpuctl offline --strategy " "auto bulk per-cpu smt"
check "cpuctl offline --strategy p" "per-cpu"
check "cpuctl offline --d" "--dry-run"
check "cpuctl offline 4-7 --r" "--refuse-pinned"
check "cpuctl offline --refuse-pinned " "all core:0 core:1 core:2 core:3 die:0 node:0 node:1 package:0 package:1 smt"
check "cpuctl online 4-7 --r" ""
check "cpuctl plan offline all --r" "--refuse-pinned"
check "cpuctl smt off --r" "--refuse-pinned"
check "cpuctl plan " "offline online"
check "cpuctl plan offline a" "all"
check "cpuctl plan offline --d" ""
check "cpuctl smt " "off on"
check "cpuctl smt on " ""
check "cpuctl cancel --n" "--no-wait"
check "cpuctl offline 4-7 --w" "--who --why"
check "cpuctl offline 4-7 --no-r" "--no-restore"
check "cpuctl offline 4-7 --who " ""
check "cpuctl online 4-7 -- dbus-sen" "dbus-send"
check "cpuctl smt --no" ""
check "cpuctl status --j" "--json"
check "cpuctl topology --m" "--map"
check "cpuctl status --map --n" "--no-color"
check "cpuctl holds --m" ""
check "cpuctl profile " "apply list revert show"
check "cpuctl profile apply lean --d" "--dry-run"
check "cpuctl profile revert --s" "--strategy"
check "cpuctl profile apply lean --r" "--refuse-pinned"
check "cpuctl profile apply --refuse-pinned --d" "--dry-run"
check "cpuctl profile revert --r" ""
check "cpuctl profile show lean --r" ""
# With ':' not a word break bash passes "package:" whole; the replies are whole words.
COMP_WORDBREAKS=$' \t\n"\'><=;|&('
check "cpuctl offline package:" "package:0 package:1"

if ((failures)); then
    echo "$failures completion check(s) failed"
    exit 1
fi
echo "bash completion: every check passed"
