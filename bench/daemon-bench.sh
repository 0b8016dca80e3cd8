#!/usr/bin/env bash
# The daemon's own figures on the host (no guest): runs build/bench/cpuhpd-bench, which
# starts a private dbus-daemon and the real cpuhpd on a fake 16-CPU sysfs tree (the
# integration harness) and plans an 8192-CPU mask in-process, and writes its CSV.
#
#   bench/daemon-bench.sh [--build DIR] [--out FILE.csv] [--quick] [--timeout SEC]
#
# Nothing touches the host's CPUs. Records the host load beside the figures: the
# latencies are wall-clock times on a shared machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${CPUHPD_BUILD_DIR:-$here/build}
out=""
args=()
timeout_s=900
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quick) args+=(--quick); shift ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "daemon-bench: unknown argument $1" >&2; exit 2 ;;
    esac
done
tool="$build/bench/cpuhpd-bench"
[ -x "$tool" ] || { echo "daemon-bench: $tool not built (ninja -C $build cpuhpd-bench)" >&2; exit 1; }
out=${out:-$build/bench/daemon.csv}
mkdir -p "$(dirname "$out")"
echo "daemon-bench: host load before $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load0=$(cut -d' ' -f1 /proc/loadavg)
timeout -k 10 "$timeout_s" "$tool" "${args[@]}" --out "$out.tmp" ||
    { echo "daemon-bench: cpuhpd-bench failed or timed out ($timeout_s s)" >&2; exit 1; }
load1=$(cut -d' ' -f1 /proc/loadavg)
echo "\"host load (1-min average) before / after\",$load0 / $load1,,," >>"$out.tmp"
mv "$out.tmp" "$out"
echo "daemon-bench: wrote $out" >&2
