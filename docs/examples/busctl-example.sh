#!/bin/sh
# busctl-example.sh [MASK]: takes MASK (default 4,6,7) offline in best-effort mode, then
# back online, with busctl(1), and reads the Online property before and after.
# The bus: $CPUHPD_BUS_ADDRESS when set (a private bus), else the system bus, where
# Offline/Online need root.
#
# --timeout: busctl waits 25 s for a reply by default; a batch of hundreds of CPUs takes
# minutes, so give it an hour (the daemon replies when the caller's batch is done).
set -eu
mask=${1:-4,6,7}
if [ -n "${CPUHPD_BUS_ADDRESS:-}" ]; then
    bus="--address=$CPUHPD_BUS_ADDRESS"
else
    bus=--system
fi
manager="org.cpuhpd1 /org/cpuhpd1 org.cpuhpd1.Manager"

busctl "$bus" get-property $manager Online
# Options a{sv}: 2 entries, "mode" s "best-effort" and "strategy" s "per-cpu".
busctl "$bus" --timeout=1h call $manager Offline 'sa{sv}' "$mask" \
    2 mode s best-effort strategy s per-cpu
busctl "$bus" get-property $manager Online
# The same with the reply as JSON, and no options.
busctl "$bus" --timeout=1h --json=short call $manager Online 'sa{sv}' "$mask" 0
busctl "$bus" get-property $manager Online
