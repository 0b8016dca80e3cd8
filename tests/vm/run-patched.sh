#!/usr/bin/env bash
# run-guest.sh on the companion-patched kernel: gets the image from patched-kernel.sh
# at run time (ctest cannot know the hash-named path at configure time; the
# kernel-build fixture has normally built it already, so this is a cache hit).
#
#   tests/vm/run-patched.sh [--base 6.1|6.12] [--lockdep] RUN-GUEST-ARGS...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
flavour=()
while :; do
    case "${1:-}" in
    --base) flavour+=(--base "${2:-}"); shift 2 ;;
    --lockdep) flavour+=(--lockdep); shift ;;
    *) break ;;
    esac
done
kernel="$("$here/patched-kernel.sh" "${flavour[@]}" | tail -n1)" ||
    { echo "run-patched: no patched kernel" >&2; exit 1; }
exec "$here/run-guest.sh" --kernel "$kernel" "$@"
