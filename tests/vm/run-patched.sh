#!/usr/bin/env bash
# run-guest.sh on the companion-patched kernel: gets the image from patched-kernel.sh
# at run time (ctest cannot know the hash-named path at configure time; the
# kernel-build fixture has normally built it already, so this is a cache hit).
#
#   tests/vm/run-patched.sh [--lockdep] RUN-GUEST-ARGS...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
flavour=()
if [ "${1:-}" = --lockdep ]; then flavour=(--lockdep); shift; fi
kernel="$("$here/patched-kernel.sh" "${flavour[@]}" | tail -n1)" ||
    { echo "run-patched: no patched kernel" >&2; exit 1; }
exec "$here/run-guest.sh" --kernel "$kernel" "$@"
