#!/usr/bin/env bash
# The main job: builds cpuhpd and cpuctl, boots a 16-CPU QEMU guest (2 packages x 4 cores
# x 2 threads, TCG) on Debian's stock kernel, starts cpuhpd on the guest's system bus,
# prints `cpuctl topology` and `cpuctl status`, and times `cpuctl offline all` /
# `cpuctl online all` beside a plain per-CPU shell loop in the same guest.
# The host's CPUs are never touched. Installs what it needs with apt-get.
#
#   scripts/demo.sh [--reps N] [--kernel PATH]     (see tests/vm/demo.sh --help)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build}
export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" cpuhpd cpuctl
exec "$here/tests/vm/demo.sh" --cpuhpd "$build/daemon/cpuhpd" --cpuctl "$build/client/cpuctl" \
    --build-dir "$build" "$@"
