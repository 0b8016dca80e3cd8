#!/usr/bin/env bash
# Runs every test: unit, integration (private dbus-daemon) and the QEMU guest suites
# (Debian's stock kernel, and the companion-patched kernel). Builds with AddressSanitizer
# and UndefinedBehaviorSanitizer. Installs what it needs with apt-get.
#
#   scripts/test.sh                 everything but the vm-bulk label (see below)
#   scripts/test.sh -L unit         only one ctest label (unit, integration, '^vm$', vm-bulk)
#
# The vm-bulk label (the patched kernel's builds, the guest suite on it, the lockdep
# stress) is left out of the default run: on 2026-11-30 the vm-bulk-smt16 guest hit an
# RCU stall in the `failure` scenario once out of four runs, cause not yet known. Run
# it with `scripts/test.sh -L vm-bulk`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build-test}
export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPUHPD_SANITIZE=ON >/dev/null
ninja -C "$build"
"$here/scripts/check-format.sh"

# The daemon's leak check and UBSan must fail the tests, never just print.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
if [ $# -eq 0 ]; then
  set -- -LE vm-bulk
fi
ctest --output-on-failure --timeout 1800 "$@"
