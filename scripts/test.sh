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
# The vm-bulk label builds the companion-patched kernels, 6.1 and 6.12, both with lockdep
# (cached by hash in $CPUHPD_CACHE, 6-10 minutes each on 2 idle cores the first time)
# and runs the guest suite on them. On a run of everything (no arguments) the two
# kernels build in the background at nice 19 from the start, in the CPU time the build,
# the unit tests and the stock guest suites leave idle; the kernel-build-* tests then
# find the image, or wait for the build that is making it (kernel/build.sh's lock).
# Its log: <build>/kernel-prebuild.log. CPUHPD_PREBUILD_KERNELS=0 turns it off.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build-test}
export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

"$here/scripts/install-deps.sh"
mkdir -p "$build"

if [ $# -eq 0 ] && [ "${CPUHPD_PREBUILD_KERNELS:-1}" = 1 ]; then
    # In this script's process group and session: a kill of the group reaches it, and
    # nice works against the other jobs (a session of its own is an autogroup of its
    # own, which the scheduler shares fairly with this one whatever the nice value).
    nice -n 19 bash -c '
        for args in "--base 6.12 --lockdep" "--base 6.1 --lockdep"; do
            echo "== kernel/build.sh $args: start $(date +%T)"
            "$0/kernel/build.sh" $args || echo "== kernel/build.sh $args: FAILED (the test builds it again)"
        done' "$here" >"$build/kernel-prebuild.log" 2>&1 &
    prebuild_pid=$!
    process_tree() { # PID: it and its descendants, parents first
        local child
        echo "$1"
        for child in $(ps -o pid= --ppid "$1"); do process_tree "$child"; done
    }
    # It ends with this script (a failed test, an interrupt): the loop first, so that it
    # starts no other build, then what runs under it (make passes TERM on to its jobs).
    trap 'kill $(process_tree $prebuild_pid) 2>/dev/null || true' EXIT
    trap 'exit 130' INT TERM
fi

# Every compile below goes through ccache, its cache beside the kernel cache: a run after
# an earlier one compiles only what changed (the sanitized build, the guests' cpuctl, the
# fuzz build and vm-systemd's package: CMake takes the launcher from the environment for a
# new build directory). BASEDIR and NOHASHDIR let a clone in another directory hit the same
# entries; the price is that a hit's debug info names the directory of the clone that
# compiled it first (file names and lines stay right).
export CCACHE_DIR=${CCACHE_DIR:-$CPUHPD_CACHE/ccache}
export CCACHE_BASEDIR=$here CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
ccache --zero-stats >/dev/null

# -O1 -g1 rather than RelWithDebInfo's -O2 -g: the sanitized build compiles in about
# half the time (the compiler's back end, not parsing, is most of it), ASan's own
# advice is -O1, and -g1's line tables are what the sanitizers' stack traces need.
# The launcher is given by -D too: CMake reads the environment's only when it first
# configures a directory, and $build may have been configured without it.
guest_client=$build/guest-client
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCPUHPD_SANITIZE=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DCPUHPD_GUEST_CPUCTL="$guest_client/client/cpuctl" >/dev/null
ninja -C "$build"
"$here/scripts/check-format.sh" "$build"

# The QEMU guests run a Release cpuctl (tests/vm/CMakeLists.txt, CPUHPD_GUEST_CPUCTL: an
# ASan cpuctl costs about 0.6 s more per call there) beside the sanitized daemon. Built
# only when the tests selected boot a guest.
selected=$(ctest --test-dir "$build" -N "$@")
if grep -qE 'Test +#[0-9]+: (vm-|bench-smoke)' <<<"$selected"; then
    cmake -S "$here" -B "$guest_client" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$guest_client" cpuctl
fi
ccache --print-stats | awk -F'\t' '$1 ~ /^(direct|preprocessed)_cache_hit$/ { hits += $2 }
    $1 == "cache_miss" { misses = $2 } END { print "ccache: " hits " hits, " misses " misses" }'

# The daemon's leak check and UBSan must fail the tests, never just print.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest --output-on-failure --timeout 1800 "$@"
