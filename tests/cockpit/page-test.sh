#!/usr/bin/env bash
# page-test.sh CPUHPD CPUCTL SOURCE_DIR OUT_DIR: the Cockpit page (cockpit/) in a real
# browser. A private dbus-daemon with the project's bus policy, the real cpuhpd on a fake
# 16-CPU sysfs tree (2 packages x 4 cores x 2 threads, per-CPU strategy), cockpit-ws
# --local-session=cockpit-bridge on a loopback port with that bus as the bridge's system bus
# and the page found through XDG_DATA_DIRS, and headless Chromium driven by chromedriver
# (page_test.py, Selenium) through Cockpit's shell (its menu lists the page, which runs in
# the shell's iframe): the map shows every CPU, an offline of two CPUs from the page
# changes the tree and the map, a hold taken with cpuctl appears with who and why and is
# released from the page, a profile is applied and reverted from the page. The screenshot
# is kept as OUT_DIR/cockpit-page.png. Everything listens on 127.0.0.1 or a Unix
# socket in a temporary directory; every wait is bounded; every process started here is
# stopped. Exit 77 (skipped) when a program it needs is missing, naming it.
set -uo pipefail
cpuhpd=$1 cpuctl=$2 src=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)

missing=()
need() { [ -x "$1" ] || missing+=("$1 ($2)"); }
need /usr/bin/dbus-daemon dbus-daemon
need /usr/bin/cockpit-bridge cockpit-bridge
need /usr/bin/chromium chromium
need /usr/bin/chromedriver chromium-driver
need /usr/bin/python3 python3
cockpit_ws=
for c in /usr/lib/cockpit/cockpit-ws /usr/libexec/cockpit-ws; do
    [ -x "$c" ] && cockpit_ws=$c && break
done
[ -n "$cockpit_ws" ] || missing+=("cockpit-ws (cockpit-ws)")
[ -f /usr/share/cockpit/base1/cockpit.js ] || [ -f /usr/share/cockpit/base1/cockpit.js.gz ] ||
    missing+=("/usr/share/cockpit/base1/cockpit.js (cockpit-bridge)")
[ -f /usr/share/cockpit/shell/manifest.json ] || missing+=("/usr/share/cockpit/shell (cockpit-system)")
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import selenium.webdriver' 2>/dev/null; then
    missing+=("python3 selenium (python3-selenium)")
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "SKIP: missing ${missing[*]}; scripts/install-deps.sh installs them"
    exit 77
fi
# The page's changes are the bridge's calls, as this user: without polkit on the private
# bus only uid 0 may change CPUs.
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (the page's changes go as this user, and only root may change CPUs without polkit)"
    exit 77
fi

tmp=$(mktemp -d /tmp/cpuhpd-cockpit-XXXXXX)
pids=()
# Stops every process started here (each in its own process group, so cockpit-ws's bridge
# and chromium's helpers go too): SIGTERM, up to 5 s, then SIGKILL.
cleanup() {
    local pid _
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    for _ in $(seq 50); do
        local alive=0
        for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for log in "$tmp"/*.log; do
        [ "$(basename "$log")" = page-test.log ] && continue  # printed in full
        [ -s "$log" ] && { echo "---- $(basename "$log") ----"; tail -n 30 "$log"; }
    done
    exit 1
}
# start NAME CMD...: CMD in a process group of its own, output in $tmp/NAME.log.
start() {
    local name=$1
    shift
    setsid "$@" >"$tmp/$name.log" 2>&1 &
    pids+=($!)
}
# wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds.
wait_for() {
    local seconds=$1 what=$2 _
    shift 2
    for _ in $(seq $((seconds * 10))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    fail "$what within $seconds s"
}

# The fake tree: x86 numbering (thread t of core i is i + t * 8), cpu0 without an online
# file, the summary lists read-only so that the daemon writes cpuN/online (per-cpu).
. "$here/../../scripts/fake-sysfs.sh"
sys=$tmp/sys
make_fake_sysfs "$sys" 16

cat >"$tmp/cpuhpd.yaml" <<'EOF'
protected_cpus: "1"
min_online: 2
coalesce_ms: 0
profiles:
  evacuate-package-1:
    offline: "package:1"
  lean:
    offline: "smt"
EOF

# The private bus: the integration tests' system-like policy and the project's own.
sed -e "s|@SOCKET_PATH@|$tmp/bus|" -e "s|@SOURCE_DIR@|$src|" -e "s|@EXTRA_CONFIG@||" \
    "$src/tests/integration/bus/system-like.conf" >"$tmp/bus.conf"
bus=unix:path=$tmp/bus
nowhere=unix:path=$tmp/no-such-bus
export DBUS_SESSION_BUS_ADDRESS=$nowhere
unset DBUS_STARTER_ADDRESS NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID
start dbus-daemon /usr/bin/dbus-daemon --config-file="$tmp/bus.conf" --nofork
wait_for 10 "dbus-daemon made no socket" test -S "$tmp/bus"

mkdir -p "$tmp/state" "$tmp/cgroup"
start cpuhpd "$cpuhpd" --bus "$bus" --sysfs-root "$sys" --state-dir "$tmp/state" \
    --config "$tmp/cpuhpd.yaml" --cgroup-root "$tmp/cgroup"
wait_for 15 "cpuhpd did not answer on the private bus" "$cpuctl" --bus-address "$bus" --timeout 2 status

# cockpit-ws on a free loopback port; the bridge it starts finds the page in XDG_DATA_DIRS
# and takes the private bus as its system bus.
mkdir -p "$tmp/share/cockpit" "$tmp/home" "$tmp/run"
chmod 0700 "$tmp/run"
cp -r "$src/cockpit" "$tmp/share/cockpit/cpuhpd"
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start cockpit-ws env HOME="$tmp/home" XDG_RUNTIME_DIR="$tmp/run" LANG=C.UTF-8 \
    XDG_DATA_DIRS="$tmp/share:/usr/share" DBUS_SYSTEM_BUS_ADDRESS="$bus" \
    "$cockpit_ws" --local-session=cockpit-bridge --no-tls --port "$port" --address 127.0.0.1
url=http://127.0.0.1:$port/cockpit/@localhost/cpuhpd/index.html
wait_for 15 "cockpit-ws did not serve $url" /usr/bin/python3 -c \
    "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=2).read()" "$url"

mkdir -p "$out"
rm -f "$out/cockpit-page.png"
# The browser test itself; it starts chromedriver and chromium, and the holding cpuctl,
# and stops them (its process group is stopped at exit too).
start page-test env BASE="http://127.0.0.1:$port" BUS="$bus" CPUCTL="$cpuctl" SYSFS="$sys" OUT="$out" \
    TMPDIR="$tmp" HOME="$tmp/home" /usr/bin/python3 "$here/page_test.py"
test_pid=${pids[-1]}
# page_test.py bounds each of its waits; this bounds the whole.
for _ in $(seq 1800); do
    kill -0 "$test_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$test_pid" 2>/dev/null; then
    cat "$tmp/page-test.log"
    fail "page_test.py did not finish within 180 s"
fi
wait "$test_pid"
rc=$?
cat "$tmp/page-test.log"
[ $rc -eq 0 ] || fail "page_test.py exited $rc"
[ -s "$out/cockpit-page.png" ] || fail "no screenshot at $out/cockpit-page.png"
echo "PASS: screenshot $out/cockpit-page.png"
