#!/usr/bin/env bash
# zsh-test.sh COMPLETION_FILE: the zsh completion parses (zsh -n), and its selector list
# over a fake sysfs tree has this tree's numbers. compsys needs a terminal, so _describe
# and _arguments are stubbed: _describe prints the candidates it was given.
# Exits 77 (skipped) when zsh is not installed.
set -uo pipefail
file=$1
if ! command -v zsh >/dev/null 2>&1; then
    echo "SKIP: zsh is not installed"
    exit 77
fi
zsh -n "$file" || { echo "FAIL: zsh -n $file"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$tmp/devices/system/cpu
for c in 0 1 2; do
    mkdir -p "$cpu/cpu$c/topology"
    echo $((c / 2)) >"$cpu/cpu$c/topology/physical_package_id"
    echo 0 >"$cpu/cpu$c/topology/die_id"
done
mkdir -p "$tmp/devices/system/node/node0"
got=$(_CPUCTL_SYSFS=$tmp zsh -f -c '
  _arguments() { return 1 }
  _describe() { local -a c; c=("${(@P)${@[-1]}}"); local x; for x in "${c[@]}"; do x=${x//\\:/@}; x=${x%%:*}; print -r -- ${x//@/:}; done }
  source "$1"
  _cpuctl_selectors' zsh "$file" | sort | tr '\n' ' ')
want="all core:0 core:1 core:2 die:0 node:0 package:0 package:1 smt "
if [[ $got != "$want" ]]; then
    echo "FAIL: selectors '$got', expected '$want'"
    exit 1
fi
# The options each command offers: _arguments stubbed to set the state and print its specs,
# `words` as compsys leaves it after '*:: :->args' (the command first).
offers() {
    zsh -f -c '
      _arguments() { if [[ $1 == -C ]]; then state=args; return 0; fi; print -r -- "$@" }
      source "$1"
      words=(${=2})
      _cpuctl' zsh "$file" "$1" | grep -q -- "$2"
}
for w in "offline 4-7" "plan offline" "smt off" "profile apply lean"; do
    offers "$w" '--refuse-pinned\[' || { echo "FAIL: '$w' does not offer --refuse-pinned"; exit 1; }
done
for w in "online 4-7" "profile revert" "cancel"; do
    offers "$w" '--refuse-pinned' && { echo "FAIL: '$w' offers --refuse-pinned"; exit 1; }
done
offers "offline 4-7" '--dry-run\[' || { echo "FAIL: 'offline' does not offer --dry-run"; exit 1; }
echo "zsh completion: parses, selectors $got"
