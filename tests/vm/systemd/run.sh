#!/usr/bin/env bash
# The installed package under a real systemd: boots a Debian bookworm root with systemd as
# PID 1 in a QEMU guest (8 vCPUs, Debian's kernel), where guest-test.sh installs the
# cpuhpd package with dpkg -i and checks the service: start (READY=1), bus activation,
# watchdog, root and non-root callers on the system bus (polkit granting a group), journal
# fields, restart after SIGKILL, the metrics file scraped by prometheus-node-exporter, and
# the systemd-analyze security exposure.
#
#   tests/vm/systemd/run.sh [--deb FILE] [--build-dir DIR] [--show]
#
# --deb        the package to install (default: build it with scripts/package.sh into
#              <build-dir>/vm/systemd/dist)
# --build-dir  where the console log and the guest's root image go (default build/)
# --show       copy the guest's console to the terminal as it comes
#
# The root (mmdebstrap --variant=minbase: systemd, dbus, jq, polkitd, power-profiles-daemon,
# prometheus-node-exporter and the package's dependencies) is cached in
# $CPUHPD_CACHE/systemd-root/, keyed by its package list (a package added here makes a new
# root); building it needs Debian's archive once. The guest boots it as its initramfs
# (rdinit= systemd), so it needs no disk and no kernel modules. Exit status: run-guest.sh's
# (0: every check passed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
deb=""
build_dir="$repo/build"
show=()
while [ $# -gt 0 ]; do
    case $1 in
    --deb) deb=$(realpath "$2"); shift ;;
    --build-dir) build_dir=$(realpath "$2"); shift ;;
    --show) show=(--show) ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "systemd/run.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
    shift
done
log() { echo "systemd/run.sh: $*" >&2; }
out="$build_dir/vm/systemd"
mkdir -p "$out"

if [ -z "$deb" ]; then
    log "building the package (scripts/package.sh)"
    rm -rf "$out/dist"
    # noddebs: the test installs the package, never its -dbgsym companion (the same
    # binaries, stripped as shipped; only the 24 MB debug package is not made).
    DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }noddebs" \
        "$repo/scripts/package.sh" --no-lintian --out "$out/dist" >"$out/package.log" 2>&1 ||
        { tail -n 40 "$out/package.log"; log "package build failed ($out/package.log)"; exit 1; }
    deb=$(ls "$out"/dist/cpuhpd_*_amd64.deb)
fi
[ -r "$deb" ] || { log "no package at $deb"; exit 1; }

# The root's packages: what the tests use, and what the package needs (the first of each
# alternative, without versions), so dpkg -i finds its dependencies installed.
depends=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' |
    grep -v '^$' | grep -v -x 'default-dbus-system-bus' || true)
packages=$(printf '%s\n' systemd systemd-sysv dbus jq util-linux polkitd power-profiles-daemon \
    prometheus-node-exporter $depends | sort -u | paste -sd, -)
cache="${CPUHPD_CACHE:-/var/cache/cpuhpd}/systemd-root"
key=$(printf 'bookworm minbase %s\n' "$packages" | sha256sum | cut -c1-16)
tarball="$cache/bookworm-$key.tar"
if [ ! -s "$tarball" ]; then
    command -v mmdebstrap >/dev/null || {
        log "installing mmdebstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
    }
    log "building the root ($packages) into $tarball"
    mkdir -p "$cache"
    mmdebstrap --quiet --format=tar --variant=minbase --include="$packages" bookworm "$tarball.part" ||
        { rm -f "$tarball.part"; log "mmdebstrap failed"; exit 1; }
    mv "$tarball.part" "$tarball"
fi

# This run's root: the cached one, the package and the test unit.
root=$(mktemp -d "$out/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar -xf "$tarball" -C "$root"
cp "$deb" "$root/root/cpuhpd.deb"
install -m 0755 "$here/guest-test.sh" "$root/usr/local/sbin/cpuhpd-guest-test"
cat >"$root/etc/systemd/system/cpuhpd-guest-test.service" <<'EOF'
[Unit]
Description=cpuhpd test under systemd (tests/vm/systemd)
After=multi-user.target dbus.service
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cpuhpd-guest-test
[Install]
WantedBy=default.target
EOF
mkdir -p "$root/etc/systemd/system/default.target.wants"
ln -sf ../cpuhpd-guest-test.service "$root/etc/systemd/system/default.target.wants/"
# The console is the test's: no login prompt on it.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
echo cpuhpd-guest >"$root/etc/hostname"
: >"$root/etc/machine-id"

initrd="$out/root.cpio.gz"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$initrd"
rm -rf "$root"
trap - EXIT
log "root image $(du -h "$initrd" | cut -f1)"

exec "$repo/tests/vm/run-guest.sh" --topology smt8 --initrd "$initrd" --build-dir "$build_dir" \
    --append "rdinit=/lib/systemd/systemd systemd.show_status=0" "${show[@]}"
