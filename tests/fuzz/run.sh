#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (in build-fuzz/), then runs each for a bounded time from its
# seed corpus (tests/fuzz/seeds/NAME). Fails on any finding: a crash, a sanitizer report, a
# leak, an input slower than 10 s or an out-of-memory.
#
#   tests/fuzz/run.sh [--seconds N] [--build-dir DIR]     N seconds per target (default 60)
#
# Findings are kept as DIR/fuzz-artifacts/NAME-crash-* (replay: DIR/tests/fuzz/fuzz_NAME FILE).
# The corpus grown by a run stays in DIR/fuzz-corpus/NAME and seeds the next run.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seconds=60
build=${CPUHPD_FUZZ_BUILD_DIR:-$here/build-fuzz}
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --build-dir) build=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case $seconds in ''|*[!0-9]*) echo "run.sh: --seconds needs a whole number" >&2; exit 2 ;; esac

CC=clang CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCPUHPD_FUZZ=ON -DCPUHPD_SANITIZE=ON -DCPUHPD_TESTS=OFF >/dev/null
ninja -C "$build" >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target per core at a time: libFuzzer runs on one core, and each target has its own
# time budget, so running them side by side shortens the whole run without shortening any.
fuzz_one() { # NAME: runs one target; its log and exit status are read afterwards
    local name=$1 corpus=$build/fuzz-corpus/$1 artifacts=$build/fuzz-artifacts rc=0
    mkdir -p "$corpus" "$artifacts"
    echo "fuzz: $name for ${seconds}s" >&2
    # The first corpus directory receives new inputs; the seeds in the tree are only read.
    "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
        "$corpus" "$here/tests/fuzz/seeds/$name" >"$build/fuzz-$name.log" 2>&1 || rc=$?
    echo $rc >"$build/fuzz-$name.rc"
}
targets=(cpulist selector config topology_cache options bus_messages)
for name in "${targets[@]}"; do rm -f "$build/fuzz-$name.rc"; done
jobs=$(nproc)
for name in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    fuzz_one "$name" &
done
wait

failed=()
summary=""
for name in "${targets[@]}"; do
    log=$build/fuzz-$name.log
    if [ "$(cat "$build/fuzz-$name.rc" 2>/dev/null)" = 0 ]; then
        result=ok
    else
        result=FAILED
        failed+=("$name")
        tail -n 40 "$log" >&2
    fi
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    summary+=$(printf '%-15s %-6s %10s execs %8s exec/s  cov %s' "$name" "$result" \
        "${execs:-?}" "${rate:-?}" "${cov:-?}")$'\n'
done
printf '%s' "$summary"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: findings in: ${failed[*]} (see $build/fuzz-artifacts and $build/fuzz-*.log)" >&2
    exit 1
fi
