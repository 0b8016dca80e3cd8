#!/usr/bin/env bash
# Fetches Debian's stock kernel image (the one linux-image-amd64 depends on) into a
# cache outside the repository and prints the path of its vmlinuz.
#   ${CPUHPD_CACHE:-/var/cache/cpuhpd}/debian-kernel/<version>/
# Cached: nothing is downloaded when the extracted image is already there.
# Diagnostics go to stderr; stdout is only the vmlinuz path.
set -euo pipefail

cache="${CPUHPD_CACHE:-/var/cache/cpuhpd}/debian-kernel"
meta="${CPUHPD_KERNEL_META:-linux-image-amd64}"

log() { echo "fetch-kernel: $*" >&2; }

pkg="$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
if [ -z "$pkg" ]; then
    # Offline and no apt lists: fall back to the newest version already cached.
    latest="$(ls -1 "$cache" 2>/dev/null | sort -V | tail -n1 || true)"
    if [ -n "$latest" ] && ls "$cache/$latest"/root/boot/vmlinuz-* >/dev/null 2>&1; then
        log "cannot resolve $meta with apt-cache; using cached $latest"
        ls "$cache/$latest"/root/boot/vmlinuz-* | head -n1
        exit 0
    fi
    log "cannot resolve the image package of $meta (apt-get update?)"
    exit 1
fi
version="${pkg#linux-image-}"
dir="$cache/$version"
root="$dir/root"

if ! ls "$root"/boot/vmlinuz-* >/dev/null 2>&1; then
    mkdir -p "$dir"
    tmp="$(mktemp -d "$dir/.dl.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    log "downloading $pkg into $dir"
    # apt-get download writes into the current directory; run it unsandboxed as root
    # would otherwise warn about _apt not being able to write there.
    (cd "$tmp" && apt-get download -o APT::Sandbox::User=root -q "$pkg" >&2)
    deb="$(ls "$tmp"/*.deb | head -n1)"
    log "extracting $(basename "$deb")"
    dpkg -x "$deb" "$tmp/root"
    rm -rf "$root"
    mv "$tmp/root" "$root"
    mv "$deb" "$dir/"
fi

vmlinuz="$(ls "$root"/boot/vmlinuz-* | head -n1)"
config="$(ls "$root"/boot/config-* 2>/dev/null | head -n1 || true)"

# Check that the options the guest tests rely on are built in (=y). A module (=m)
# would have to be insmod-ed from the initramfs (mkinitramfs.sh copies the modules
# listed in $dir/modules.needed); a missing option is reported.
if [ -n "$config" ] && [ ! -e "$dir/config-checked" ]; then
    : >"$dir/modules.needed.tmp"
    bad=0
    for opt in CONFIG_SMP CONFIG_HOTPLUG_CPU CONFIG_HOTPLUG_SMT CONFIG_UNIX CONFIG_NET \
               CONFIG_CPUSETS CONFIG_CGROUPS CONFIG_DEVTMPFS CONFIG_TMPFS \
               CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE CONFIG_BLK_DEV_INITRD \
               CONFIG_RD_GZIP CONFIG_NUMA CONFIG_SCHED_SMT; do
        val="$(grep -E "^$opt=" "$config" | cut -d= -f2 || true)"
        case "$val" in
        y) ;;
        m) log "$opt is a module"; echo "$opt" >>"$dir/modules.needed.tmp" ;;
        *) log "WARNING: $opt is not set in $(basename "$config")"; bad=1 ;;
        esac
    done
    mv "$dir/modules.needed.tmp" "$dir/modules.needed"
    # CONFIG_CPU_HOTPLUG_STATE_CONTROL is not needed: in 6.1 kernel/cpu.c it only
    # widens cpuN/hotplug/target; cpuN/hotplug/fail exists with or without it.
    grep -q '^CONFIG_CPU_HOTPLUG_STATE_CONTROL=y' "$config" ||
        log "note: CONFIG_CPU_HOTPLUG_STATE_CONTROL unset (fine: cpuN/hotplug/fail is unconditional in 6.1)"
    [ $bad -eq 0 ] && log "kernel config ok: every needed option is built in"
    touch "$dir/config-checked"
fi

echo "$vmlinuz"
