#!/bin/sh
# verify-unit.sh UNIT: `systemd-analyze verify` on the unit; exit 77 (skipped) without it.
unit=$1
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze is not installed" >&2
    exit 77
fi
out=$(systemd-analyze verify "$unit" 2>&1)
rc=$?
[ -n "$out" ] && printf '%s\n' "$out"
# Any output is a finding (unknown settings are only warnings, with exit 0).
if [ $rc -ne 0 ] || [ -n "$out" ]; then
    exit 1
fi
exit 0
