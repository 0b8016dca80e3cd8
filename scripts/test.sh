#!/usr/bin/env bash
# Runs every test: unit, integration (private dbus-daemon) and the QEMU guest suites
# (Debian's stock kernel, and the companion-patched kernel). Builds with AddressSanitizer
# and UndefinedBehaviorSanitizer. Installs what it needs with apt-get.
#
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only one ctest label (unit, integration, fuzz, '^vm$',
#                                   vm-bulk, bench-smoke: scripts/bench.sh --quick,
#                                   browser: the Cockpit page in headless Chromium)
#
# The fuzz label builds the libFuzzer targets with clang (tests/fuzz/run.sh) and runs each
# for 60 s under ASan and UBSan.
#
# The vm-bulk label builds the companion-patched kernel and its lockdep flavour
# (cached by hash in $CPUHPD_CACHE, 8-10 minutes each on 2 cores the first time)
# and runs the guest suite on them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build-test}
export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPUHPD_SANITIZE=ON >/dev/null
ninja -C "$build"
"$here/scripts/check-format.sh" "$build"

# The daemon's leak check and UBSan must fail the tests, never just print.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest --output-on-failure --timeout 1800 "$@"
