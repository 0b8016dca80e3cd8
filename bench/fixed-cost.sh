#!/usr/bin/env bash
# What one cpuctl call costs outside the daemon's batch, on the host (issue 31 item 3):
# starts a private dbus-daemon and the real cpuhpd on a fake 24-CPU sysfs tree, then times
# RUNS no-op calls (`cpuctl --json online 1`, answered without a batch) and RUNS
# offline+online pairs of CPUs 1-23 (per-cpu: the fake tree's summary files are
# read-only), and prints the medians: cpuctl's wall time, the daemon's queued_us (receipt
# to batch start: admission, queue, coalescing window) and duration_us (the batch).
# --strace: one no-op and one offline call under strace (cpuctl and cpuhpd, one clock),
# broken down into exec+loading, bus connect, the call's round trip, the daemon's
# authorization round trip, admission, batch, reply, exit (bench/fixed_cost_strace.py).
#
#   bench/fixed-cost.sh [--build DIR] [--runs N] [--coalesce-ms MS] [--strace] [--out DIR]
#
# Nothing touches the host's CPUs.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build}
runs=21
coalesce_ms=0
trace=0
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --coalesce-ms) coalesce_ms="$2"; shift 2 ;;
    --strace) trace=1; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fixed-cost: unknown argument $1" >&2; exit 2 ;;
    esac
done
cpuhpd=$build/daemon/cpuhpd
cpuctl=$build/client/cpuctl
for b in "$cpuhpd" "$cpuctl"; do
    [ -x "$b" ] || { echo "fixed-cost: $b is not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
out=${out:-$tmp}
mkdir -p "$out"
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The fake tree: 24 CPUs, 2 packages x 6 cores x 2 threads (x86 numbering), cpu0 without
# an online file.
. "$here/scripts/fake-sysfs.sh"
sys=$tmp/sys
make_fake_sysfs "$sys" 24
printf 'coalesce_ms: %s\n' "$coalesce_ms" >"$tmp/cpuhpd.yaml"

sed -e "s|@SOCKET_PATH@|$tmp/bus|" -e "s|@SOURCE_DIR@|$here|" -e "s|@EXTRA_CONFIG@||" \
    "$here/tests/integration/bus/permissive.conf" >"$tmp/bus.conf"
bus=unix:path=$tmp/bus
/usr/bin/dbus-daemon --config-file="$tmp/bus.conf" --nofork >"$tmp/dbus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$tmp/bus" ] && break; sleep 0.1; done
mkdir -p "$tmp/state" "$tmp/cgroup" "$tmp/proc"
"$cpuhpd" --bus "$bus" --sysfs-root "$sys" --state-dir "$tmp/state" --config "$tmp/cpuhpd.yaml" \
    --cgroup-root "$tmp/cgroup" --log-level warning >"$tmp/cpuhpd.log" 2>&1 &
daemon_pid=$!
pids+=($daemon_pid)
for _ in $(seq 150); do
    "$cpuctl" --bus-address "$bus" --timeout 2 status >/dev/null 2>&1 && break
    sleep 0.1
done

# call FILE ARGS...: one cpuctl call; appends "wall_us queued_us duration_us" to FILE.
call() {
    local file=$1
    shift
    local t0=$EPOCHREALTIME
    "$cpuctl" --bus-address "$bus" --json "$@" >"$tmp/reply.json" 2>"$tmp/reply.err" ||
        { echo "fixed-cost: cpuctl $* failed: $(cat "$tmp/reply.err")" >&2; exit 1; }
    local t1=$EPOCHREALTIME
    local wall=$(((${t1/./} - ${t0/./})))
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], j.get("queued_us", "-"), j["duration_us"])' \
        "$tmp/reply.json" "$wall" >>"$file"
}
median() { # FILE COLUMN
    awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'
}
spread() { # FILE COLUMN: min-max
    awk -v c="$2" '{print $c}' "$1" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo "-" hi}'
}

: >"$out/noop.txt" >"$out/offline.txt" >"$out/online.txt" >"$out/tty.txt"
for _ in $(seq "$runs"); do
    call "$out/noop.txt" online 1
done
# The same no-op on a terminal (script(1)'s pty, which it costs too): cpuctl shows progress
# there, so it subscribes to the daemon's signals before the call.
if command -v script >/dev/null; then
    for _ in $(seq "$runs"); do
        t0=$EPOCHREALTIME
        script -qec "$cpuctl --bus-address $bus online 1" /dev/null >/dev/null
        t1=$EPOCHREALTIME
        echo "$((${t1/./} - ${t0/./})) - -" >>"$out/tty.txt"
    done
fi
for _ in $(seq "$runs"); do
    call "$out/offline.txt" offline 1-23 --strategy per-cpu
    call "$out/online.txt" online 1-23 --strategy per-cpu
done
echo "fixed-cost: $runs runs each, coalesce_ms $coalesce_ms, host load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %12s %14s %12s %14s\n' call "wall_us" "wall min-max" "queued_us" "duration_us"
for f in noop tty offline online; do
    [ -s "$out/$f.txt" ] || continue
    case $f in
    noop) label="online 1 (no-op)" ;;
    tty) label="online 1 (no-op, terminal)" ;;
    offline) label="offline 1-23 (per-cpu)" ;;
    online) label="online 1-23 (per-cpu)" ;;
    esac
    printf '%-28s %12s %14s %12s %14s\n' "$label" "$(median "$out/$f.txt" 1)" \
        "$(spread "$out/$f.txt" 1)" "$(median "$out/$f.txt" 2)" "$(median "$out/$f.txt" 3)"
done

if [ "$trace" = 1 ]; then
    command -v strace >/dev/null || { echo "fixed-cost: strace is not installed" >&2; exit 1; }
    for what in noop tty offline; do
        args=(--json online 1)
        [ "$what" = tty ] && args=(online 1)
        [ "$what" = offline ] && args=(--json offline 1-23 --strategy per-cpu)
        strace -f -ttt -qq -s 4096 -o "$out/strace-daemon-$what.txt" -p "$daemon_pid" &
        spid=$!
        sleep 1  # strace attached (it prints nothing to wait on)
        if [ "$what" = tty ]; then
            script -qec "strace -f -ttt -qq -s 4096 -o $out/strace-cpuctl-$what.txt \
                $cpuctl --bus-address $bus ${args[*]}" /dev/null >"$out/strace-reply-$what.txt"
        else
            strace -f -ttt -qq -s 4096 -o "$out/strace-cpuctl-$what.txt" \
                "$cpuctl" --bus-address "$bus" "${args[@]}" >"$out/strace-reply-$what.txt"
        fi
        sleep 0.5
        kill -INT "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
        echo "--- strace breakdown: cpuctl ${args[*]}$([ "$what" = tty ] && echo ' (on a terminal)')"
        python3 "$here/bench/fixed_cost_strace.py" "$out/strace-cpuctl-$what.txt" \
            "$out/strace-daemon-$what.txt"
        [ "$what" = offline ] && "$cpuctl" --bus-address "$bus" online 1-23 >/dev/null
    done
fi
