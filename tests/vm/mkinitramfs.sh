#!/usr/bin/env bash
# Builds the gzip cpio initramfs the guest tests boot with.
#
#   tests/vm/mkinitramfs.sh [--cpuhpd PATH] [--cpuctl PATH] [--output FILE]
#                           [--modules-from DIR] [--allow-missing]
#
# Contents: busybox-static (+ applet symlinks), util-linux chcpu, dbus-daemon as the
# guest's system bus (own system.conf, root, unix:path=/run/dbus/system_bus_socket), dbus-send, the
# project's bus policy dbus/org.cpuhpd1.conf (or a permissive fallback), cpuhpd,
# cpuctl, gojq, stress-ng, every shared library they need (ldd + the dynamic loader), the
# scenario scripts and /init (tests/vm/guest/init), uevent-count and reader-wait
# (tools/, gcc -static) and the kernel's cpu-on-off-test.sh selftest (from
# /usr/src/linux-source-6.1.tar.xz).
# Defaults: --cpuhpd build/daemon/cpuhpd --cpuctl build/client/cpuctl
#           --output build/vm/initramfs.cpio.gz
# --allow-missing: build without cpuhpd/cpuctl (harness development; the cpuctl
# scenarios then SKIP) instead of failing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cpuhpd="$repo/build/daemon/cpuhpd"
cpuctl="$repo/build/client/cpuctl"
out="$repo/build/vm/initramfs.cpio.gz"
allow_missing=0
modules_from=""

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --cpuhpd) cpuhpd="$2"; shift 2 ;;
    --cpuctl) cpuctl="$2"; shift 2 ;;
    --output|-o) out="$2"; shift 2 ;;
    --modules-from) modules_from="$2"; shift 2 ;;
    --allow-missing) allow_missing=1; shift ;;
    -h|--help) usage ;;
    *) echo "mkinitramfs: unknown argument $1" >&2; usage ;;
    esac
done

log() { echo "mkinitramfs: $*" >&2; }
die() { log "error: $*"; exit 1; }

busybox_bin="$(command -v busybox || true)"
[ -n "$busybox_bin" ] || die "busybox not found (apt-get install busybox-static)"
file -L "$busybox_bin" 2>/dev/null | grep -q 'dynamically linked' &&
    die "$busybox_bin is dynamically linked; install busybox-static"
for t in dbus-daemon dbus-send gojq cpio gzip; do
    command -v "$t" >/dev/null || die "$t not found (scripts/install-deps.sh)"
done

root="$(mktemp -d "${TMPDIR:-/tmp}/cpuhpd-initramfs.XXXXXX")"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc/cpuhpd,etc/dbus-1/system.d} \
         "$root"/{proc,sys,dev,run,tmp,root,var/lib/dbus} \
         "$root"/usr/share/dbus-1/system.d "$root"/usr/share/dbus-1/system-services \
         "$root"/cpuhpd-tests/scenarios

# busybox and its applets
cp "$busybox_bin" "$root/bin/busybox"
"$busybox_bin" --list-full | while read -r applet; do
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

# Copy a dynamically linked binary and every library ldd names (incl. the loader),
# keeping the library paths so the loader's default search finds them.
copy_libs() {
    local bin="$1" lib
    # ldd fails on a statically linked binary (gojq): it has no libraries to copy.
    { ldd "$bin" 2>/dev/null || true; } | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' |
    while read -r lib; do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
copy_bin() { # src dest
    mkdir -p "$root$(dirname "$2")"
    rm -f "$root$2"
    cp -L "$1" "$root$2"
    chmod 755 "$root$2"
    copy_libs "$1"
}
copy_bin "$(command -v dbus-daemon)" /usr/bin/dbus-daemon
copy_bin "$(command -v dbus-send)" /usr/bin/dbus-send
# hold-defend watches for the HoldViolated signal (missing: that check SKIPs).
dbus_monitor_bin="$(command -v dbus-monitor || true)"
if [ -n "$dbus_monitor_bin" ]; then copy_bin "$dbus_monitor_bin" /usr/bin/dbus-monitor
else log "WARNING: dbus-monitor not found; hold-defend will not see HoldViolated"; fi
# gojq reads cpuctl's JSON in the scenarios: Debian's jq 1.6 compiles its builtins at every
# start, about 0.5 s per call in a TCG guest, against 2.1 ms (gojq) and 16.7 ms (jq) of CPU
# per call on the host; the suites parse about a hundred results each. Statically linked.
copy_bin "$(command -v gojq)" /usr/bin/gojq
# util-linux chcpu, the peer the benchmark compares against (busybox has none).
chcpu_bin="$(command -v chcpu || true)"
if [ -n "$chcpu_bin" ]; then copy_bin "$chcpu_bin" /usr/sbin/chcpu
else log "WARNING: chcpu (util-linux) not found; the benchmark's chcpu method will be left out"; fi
# util-linux chrt (busybox's has no SCHED_DEADLINE), for bulk-deadline; its own name so
# that busybox's applet stays where it is.
chrt_bin="$(command -v chrt || true)"
if [ -n "$chrt_bin" ] && "$chrt_bin" --help 2>&1 | grep -q -- --deadline; then
    copy_bin "$chrt_bin" /usr/bin/chrt-util-linux
else log "WARNING: util-linux chrt with --deadline not found; bulk-deadline will SKIP"; fi
# stress-ng, the outside stressor of lockdep-stress (its --cpu-online workers write cpuN/online).
stress_bin="$(command -v stress-ng || true)"
if [ -n "$stress_bin" ]; then copy_bin "$stress_bin" /usr/bin/stress-ng
else log "WARNING: stress-ng not found; lockdep-stress will run without it"; fi
# Debian's /lib64 and /lib may be symlinks into /usr; make sure the loader sits at
# the path the binaries ask for.
[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"

have_bins=1
for pair in "cpuhpd:$cpuhpd:/usr/sbin/cpuhpd" "cpuctl:$cpuctl:/usr/bin/cpuctl"; do
    name="${pair%%:*}"; rest="${pair#*:}"; src="${rest%%:*}"; dst="${rest#*:}"
    if [ -x "$src" ]; then
        copy_bin "$src" "$dst"
        log "$name: $src"
    elif [ "$allow_missing" = 1 ]; then
        log "WARNING: $name not found at $src; building without it (cpuctl scenarios will SKIP)"
        have_bins=0
    else
        die "$name not found at $src (build it, pass --$name PATH, or --allow-missing)"
    fi
done

# Guest tools for the bulk scenarios: the uevent counter, the reader timer and the RT and
# DEADLINE push checks and the wake-up spread (static C, tests/vm/tools/)
# and the kernel's own cpu-hotplug selftest from Debian's linux-source-6.1. Either
# may be missing (no gcc / no linux-source): the scenarios that need it then SKIP.
for tool in uevent-count:bulk-uevents reader-wait:bulk-reader rt-push:bulk-rtpush dl-push:bulk-dlpush wake-spread:bulk-spread; do
    name=${tool%%:*}
    if command -v gcc >/dev/null &&
        gcc -static -O2 -Wall -o "$root/usr/bin/$name" "$here/tools/$name.c" 2>"$root/tmp/gcc.err"; then
        log "$name: built from tools/$name.c"
    else
        log "WARNING: could not build tools/$name.c statically ($(head -c 300 "$root/tmp/gcc.err" 2>/dev/null)); ${tool#*:} will SKIP"
        rm -f "$root/usr/bin/$name"
    fi
done
rm -f "$root/tmp/gcc.err"
selftest=tools/testing/selftests/cpu-hotplug/cpu-on-off-test.sh
linux_src_tar="${CPUHPD_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}"
mkdir -p "$root/cpuhpd-tests/selftest"
# Unpacking one file from the tarball reads all of it (~20 s here): prefer the tree
# kernel/build.sh unpacked, else keep the extracted copy in the cache.
cache_root="${CPUHPD_CACHE:-/var/cache/cpuhpd}"
selftest_cached="$cache_root/selftest/cpu-on-off-test.sh"
unpacked="$(ls -d "$cache_root"/kernel/src-6.1.*/"$selftest" 2>/dev/null | head -n1 || true)"
if [ -n "$unpacked" ]; then
    selftest_src="$unpacked"
elif [ -s "$selftest_cached" ] && [ "$selftest_cached" -nt "$linux_src_tar" ]; then
    selftest_src="$selftest_cached"
else
    selftest_src=""
    if [ -r "$linux_src_tar" ] &&
        tar -xJOf "$linux_src_tar" "linux-source-6.1/$selftest" >"$root/tmp/selftest.sh" 2>/dev/null &&
        [ -s "$root/tmp/selftest.sh" ]; then
        selftest_src="$root/tmp/selftest.sh"
        mkdir -p "$(dirname "$selftest_cached")" 2>/dev/null &&
            cp "$root/tmp/selftest.sh" "$selftest_cached.tmp" 2>/dev/null &&
            mv "$selftest_cached.tmp" "$selftest_cached" 2>/dev/null || true
    fi
fi
if [ -n "$selftest_src" ] && cp "$selftest_src" "$root/cpuhpd-tests/selftest/cpu-on-off-test.sh"; then
    rm -f "$root/tmp/selftest.sh"
    chmod 755 "$root/cpuhpd-tests/selftest/cpu-on-off-test.sh"
    log "selftest: $selftest from $selftest_src"
else
    log "WARNING: $selftest not found in $linux_src_tar; bulk-selftest will SKIP"
    rm -f "$root/cpuhpd-tests/selftest/cpu-on-off-test.sh"
fi

# Kernel modules for options the kernel has as =m (see fetch-kernel.sh); the stock
# Debian 6.1 kernel has everything built in, so this is normally empty.
if [ -n "$modules_from" ] && [ -d "$modules_from" ]; then
    mkdir -p "$root/lib/modules"
    cp -a "$modules_from"/. "$root/lib/modules/"
fi

# The guest's system bus
cat >"$root/etc/dbus-1/system.conf" <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <!-- cpuhpd guest test bus: runs as root (no <user>), no activation helper. -->
  <type>system</type>
  <fork/>
  <pidfile>/run/dbus/pid</pidfile>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <deny send_type="method_call"/>
    <allow send_destination="org.freedesktop.DBus"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <deny own="*"/>
  </policy>
  <includedir>/usr/share/dbus-1/system.d</includedir>
  <includedir>/etc/dbus-1/system.d</includedir>
</busconfig>
CONF
if [ -f "$repo/dbus/org.cpuhpd1.conf" ]; then
    cp "$repo/dbus/org.cpuhpd1.conf" "$root/usr/share/dbus-1/system.d/org.cpuhpd1.conf"
    log "bus policy: dbus/org.cpuhpd1.conf"
else
    log "WARNING: dbus/org.cpuhpd1.conf is absent; using a permissive fallback policy"
    cat >"$root/usr/share/dbus-1/system.d/org.cpuhpd1.conf" <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <!-- permissive fallback written by tests/vm/mkinitramfs.sh -->
  <policy user="root">
    <allow own="org.cpuhpd1"/>
  </policy>
  <policy context="default">
    <allow send_destination="org.cpuhpd1"/>
    <allow receive_sender="org.cpuhpd1"/>
  </policy>
</busconfig>
CONF
fi

cat >"$root/etc/passwd" <<'EOF2'
root:x:0:0:root:/root:/bin/sh
messagebus:x:100:101::/nonexistent:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF2
cat >"$root/etc/group" <<'EOF2'
root:x:0:
messagebus:x:101:
nogroup:x:65534:
EOF2
echo "0123456789abcdef0123456789abcdef" >"$root/etc/machine-id"
cp "$root/etc/machine-id" "$root/var/lib/dbus/machine-id"

# cpuhpd's default guest config (scenarios write others under /tmp)
cat >"$root/etc/cpuhpd/cpuhpd.yaml" <<'EOF2'
# cpuhpd configuration for the QEMU guest tests
sysfs_root: /sys
bus: system
protected_cpus: "0"
min_online: 1
expedite: auto
default_mode: atomic
state_dir: /run/cpuhpd
EOF2

# init, the scenario library and scenarios
cp "$here/guest/init" "$root/init"
chmod 755 "$root/init"
cp "$here/scenarios/"*.sh "$root/cpuhpd-tests/scenarios/"
[ -d "$here/guest" ] && for f in "$here/guest/"*.sh; do
    [ -e "$f" ] && cp "$f" "$root/cpuhpd-tests/"
done
cp "$here/scenarios/lib.sh" "$root/cpuhpd-tests/lib.sh"
rm -f "$root/cpuhpd-tests/scenarios/lib.sh"
echo "$have_bins" >"$root/cpuhpd-tests/have-binaries"

mkdir -p "$(dirname "$out")"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
    gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
log "wrote $out ($(du -h "$out" | cut -f1))"
