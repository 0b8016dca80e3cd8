#!/usr/bin/env bash
# Boots the patched test kernel in QEMU (TCG, 16 vCPUs: 2 sockets x 4 cores
# x 2 threads) with a busybox initramfs whose /init (kernel/smoke-init.sh)
# exercises /sys/devices/system/cpu/{offline,online} writes, refusals,
# mid-batch failure, uevents, counts rebuilds with kprobes and runs the
# kernel's cpu-on-off-test.sh selftest.
#
# Usage: kernel/smoke-test.sh [--lockdep] [--kernel BZIMAGE]
# Exit 0 if the guest reported "SMOKE DONE 0", 1 otherwise.
# The serial log is kept in ${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel/smoke-*.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel
build_args=()
kernel=
while [ $# -gt 0 ]; do
  case "$1" in
    --lockdep) build_args+=(--lockdep) ;;
    --kernel) kernel=$2; shift ;;
    *) echo "smoke-test.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "$kernel" ]; then
  kernel=$("$here/build.sh" "${build_args[@]}" | tail -n1)
fi
[ -f "$kernel" ] || { echo "smoke-test.sh: no kernel at '$kernel'" >&2; exit 1; }

busybox=/bin/busybox
[ -x "$busybox" ] || busybox=$(command -v busybox)
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
  echo "smoke-test.sh: warning: $busybox may not be static (install busybox-static)" >&2

tmp=$(mktemp -d /tmp/cpuhpd-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,selftest}
cp "$busybox" "$root/bin/busybox"
cp "$here/smoke-init.sh" "$root/init"
chmod +x "$root/init"
# The selftest ships with the source the kernel was built from.
selftest=tools/testing/selftests/cpu-hotplug/cpu-on-off-test.sh
if [ -f "$cache/src-6.1.192-3/$selftest" ]; then
  cp "$cache/src-6.1.192-3/$selftest" "$root/selftest/"
else
  tar -xJOf /usr/src/linux-source-6.1.tar.xz "linux-source-6.1/$selftest" \
    >"$root/selftest/cpu-on-off-test.sh" 2>/dev/null || rm -f "$root/selftest/cpu-on-off-test.sh"
fi
[ -f "$root/selftest/cpu-on-off-test.sh" ] && chmod +x "$root/selftest/cpu-on-off-test.sh"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -9) >"$tmp/initrd.gz"

log=$cache/smoke-$(date +%Y%m%d-%H%M%S).log
mkdir -p "$cache"
echo "smoke-test.sh: booting $kernel (log: $log)" >&2
set +e
timeout 900 qemu-system-x86_64 -accel tcg,thread=multi -cpu max,vendor=GenuineIntel \
  -smp 16,sockets=2,cores=4,threads=2 -m 1G -nographic -no-reboot \
  -kernel "$kernel" -initrd "$tmp/initrd.gz" \
  -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init" </dev/null >"$log" 2>&1
rc=$?
set -e
grep -a '^SMOKE' "$log" | tr -d '\r'
if [ $rc -ne 0 ]; then
  echo "smoke-test.sh: qemu exited with $rc (124 = timeout)" >&2
fi
if grep -aq '^SMOKE DONE 0' "$log"; then
  echo "smoke-test.sh: PASS"
  exit 0
fi
echo "smoke-test.sh: FAIL (see $log)" >&2
tail -30 "$log" >&2
exit 1
