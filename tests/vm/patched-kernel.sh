#!/usr/bin/env bash
# Prints the path of the companion-patched test kernel (kernel/build.sh), building it
# first if it is not in the cache yet (9-10 min on 2 idle cores, longer beside other
# work; cached by the hash of the patches, fragments and build.sh in
# ${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel/).
#
#   tests/vm/patched-kernel.sh [--base 6.1|6.12] [--lockdep]
#
# The path is the last (only) line on stdout; the build's progress goes to stderr.
# CPUHPD_BULK_KERNEL / CPUHPD_BULK_KERNEL_LOCKDEP (6.1) and CPUHPD_BULK_KERNEL_6_12 /
# CPUHPD_BULK_KERNEL_6_12_LOCKDEP name an image to use instead (no build), e.g. a
# kernel built by hand from the same series.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
args=()
base=6.1
lockdep=0
while [ $# -gt 0 ]; do
    case "$1" in
    --base) base="${2:-}"; shift ;;
    --lockdep) lockdep=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "patched-kernel: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
args+=(--base "$base")
[ "$lockdep" = 1 ] && args+=(--lockdep)
var=CPUHPD_BULK_KERNEL
[ "$base" = 6.1 ] || var="${var}_${base//./_}"
[ "$lockdep" = 1 ] && var="${var}_LOCKDEP"
override="${!var:-}"
if [ -n "$override" ]; then
    [ -r "$override" ] || { echo "patched-kernel: $override not readable" >&2; exit 1; }
    echo "$override"
    exit 0
fi
build="$repo/kernel/build.sh"
[ -x "$build" ] || { echo "patched-kernel: $build missing" >&2; exit 1; }
start=$(date +%s)
# build.sh prints the image path as its last stdout line; its other output is stderr.
out="$("$build" "${args[@]}")" || { echo "patched-kernel: kernel/build.sh ${args[*]} failed" >&2; exit 1; }
image="$(printf '%s\n' "$out" | tail -n1)"
[ -r "$image" ] || { echo "patched-kernel: kernel/build.sh printed '$image', not a readable file" >&2; exit 1; }
echo "patched-kernel: $image ($(( $(date +%s) - start )) s)" >&2
echo "$image"
