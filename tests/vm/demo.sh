#!/usr/bin/env bash
# Boots a 16-vCPU guest (smt16: 2 sockets x 4 cores x 2 threads) in which cpuhpd runs,
# prints `cpuctl topology` and `cpuctl status`, then takes every AP offline and online
# with a plain per-CPU shell loop, chcpu, cpuctl per-cpu and (where the kernel has the
# bulk interface) cpuctl bulk and the bare bulk write, in the same guest, and prints a
# side-by-side table with the kprobe counts per batch. One guest at a time on the machine
# (run-guest.sh holds ${CPUHPD_CACHE:-/var/cache/cpuhpd}/qemu.lock).
#
#   tests/vm/demo.sh [--reps N] [--kernel PATH] [--cpuhpd PATH] [--cpuctl PATH]
#                    [--topology smt16|numa8]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
reps=3
args=()
topology=smt16
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --topology) topology="$2"; shift 2 ;;
    --kernel|--cpuhpd|--cpuctl|--build-dir|--timeout) args+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument $1" >&2; exit 2 ;;
    esac
done
# run-guest.sh waits for any other guest on the machine (it holds the QEMU lock).
exec "$here/run-guest.sh" --topology "$topology" --scenarios demo --show \
    --append "cpuhpd.demo_reps=$reps" "${args[@]}"
