#!/usr/bin/env bash
# The main job: builds cpuhpd and cpuctl, boots a 16-CPU QEMU guest (2 packages x 4 cores
# x 2 threads, TCG) on the companion-patched kernel (kernel/: writable cpu/offline and
# cpu/online, one batch per write), starts cpuhpd on the guest's system bus, prints
# `cpuctl topology` and `cpuctl status`, then takes every AP offline and back online with
# each method in the same guest and ends with a side-by-side table: the per-CPU shell
# loop, chcpu, cpuctl per-cpu and bulk, and the bare bulk write, medians and ratios to
# the loop, with the counts per batch (sched-domain rebuilds, synchronize_rcu,
# stop_machine) beside the times.
# The host's CPUs are never touched. Installs what it needs with apt-get.
#
#   scripts/demo.sh [--stock] [--reps N] [--kernel PATH]
#
#   --stock        Debian's stock 6.1 kernel instead (no bulk interface: cpuctl falls
#                  back to smt/control or per-CPU writes)
#   --kernel PATH  any kernel image (no build)
# The patched kernel is built once (kernel/build.sh through tests/vm/patched-kernel.sh,
# 11-13 min on 2 cores) and cached by hash in ${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build}
export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

stock=0
kernel=""
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --stock) stock=1; shift ;;
    --kernel) kernel="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" cpuhpd cpuctl

# patched_kernel: the image path, building it first if needed with a progress line
# every 20 s (the build's own output goes to a log).
patched_kernel() {
    local log="$build/patched-kernel.log" pid start elapsed
    if image="$("$here/kernel/build.sh" --print-path 2>/dev/null)"; then
        echo "demo: patched kernel $image (cached)" >&2
        echo "$image"
        return 0
    fi
    echo "demo: building the patched kernel once (11-13 min on 2 cores; log $log)" >&2
    start=$(date +%s)
    "$here/tests/vm/patched-kernel.sh" >"$log.out" 2>"$log" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 20
        elapsed=$(( $(date +%s) - start ))
        printf 'demo: building the patched kernel: %d min %02d s, %s\n' $((elapsed / 60)) $((elapsed % 60)) \
            "$(tail -n1 "$log" 2>/dev/null | cut -c1-80)" >&2
    done
    wait "$pid" || { echo "demo: the kernel build failed (see $log); scripts/demo.sh --stock runs without it" >&2; return 1; }
    tail -n1 "$log.out"
}

if [ -z "$kernel" ] && [ "$stock" = 0 ]; then
    kernel="$(patched_kernel)"
fi
kargs=()
[ -n "$kernel" ] && kargs=(--kernel "$kernel")
exec "$here/tests/vm/demo.sh" --cpuhpd "$build/daemon/cpuhpd" --cpuctl "$build/client/cpuctl" \
    --build-dir "$build" "${kargs[@]}" "${args[@]}"
