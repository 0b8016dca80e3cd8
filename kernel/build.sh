#!/usr/bin/env bash
# Builds a cpuhpd test kernel: Debian's linux-source-<base> with the patch series in
# kernel/patches/<base>/, configured from `make tinyconfig` plus the fragment(s) in
# kernel/config/.
#
# Usage: kernel/build.sh [--base 6.1|6.12] [--lockdep] [--print-path]
#   --base B      which kernel: 6.1 (default) or 6.12, each with its own series
#   --lockdep     also merge config/cpuhpd-lockdep.fragment (PROVE_LOCKING...)
#   --print-path  print the path the bzImage has (or will have) and exit:
#                 status 0 if it is built, 1 if not. Builds nothing.
#
# The result is ${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel/bzImage-<hash> (with
# config-<hash> and System.map-<hash> beside it, and modules-<hash>/*.ko when a fragment
# asks for a module, "=m", with test-modules/*.ko), hash = sha256 of the base, the
# patches, the fragments used, test-modules/ and this script. An existing result is reused at once.
# The bzImage path is always the last line on stdout; everything else goes to stderr
# or to the build log.
#
# Environment: CPUHPD_CACHE (cache root), CPUHPD_KERNEL_JOBS (default nproc),
# CPUHPD_KEEP_BUILD=1 (keep the build tree after success).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${CPUHPD_CACHE:-/var/cache/cpuhpd}/kernel
jobs=${CPUHPD_KERNEL_JOBS:-$(nproc)}

base=6.1
lockdep=0
print_path=0
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=${2:-}; shift ;;
    --base=*) base=${1#--base=} ;;
    --lockdep) lockdep=1 ;;
    --print-path) print_path=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "kernel/build.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# The Debian source package each series is written against (the exact version the
# patches apply to; a different installed version only warns).
case "$base" in
  6.1) base_version=6.1.192-3 ;;
  6.12) base_version=6.12.117-1~deb12u1 ;;
  *) echo "build.sh: --base must be 6.1 or 6.12, not '$base'" >&2; exit 2 ;;
esac
tarball=/usr/src/linux-source-$base.tar.xz

patches=()
while IFS= read -r p; do patches+=("$p"); done \
  < <(find "$here/patches/$base" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
        ! -name '0000-*' | LC_ALL=C sort)
[ ${#patches[@]} -gt 0 ] || die "no patches in $here/patches/$base"

fragments=("$here/config/cpuhpd-test.fragment")
# Options that only one base needs or names differently.
[ -f "$here/config/cpuhpd-test-$base.fragment" ] && fragments+=("$here/config/cpuhpd-test-$base.fragment")
flavour=test
if [ "$lockdep" = 1 ]; then
  fragments+=("$here/config/cpuhpd-lockdep.fragment")
  flavour=lockdep
fi

# Inputs, in a fixed order, with their names, so that renaming a patch or
# switching the flavour changes the hash too.
hash=$(
  {
    echo "base $base $base_version flavour $flavour"
    for f in "${patches[@]}" "${fragments[@]}" "$here"/test-modules/* "$here/build.sh"; do
      echo "== $(basename "$f")"
      cat "$f"
    done
  } | sha256sum | cut -c1-16
)
image="$cache/bzImage-$hash"

if [ "$print_path" = 1 ]; then
  echo "$image"
  [ -f "$image" ]
  exit
fi
if [ -f "$image" ]; then
  echo "$image"
  exit 0
fi

mkdir -p "$cache"
# One build at a time per cache; a second caller waits, then finds the image.
exec 9>"$cache/.build.lock"
if ! flock -n 9; then
  log "another build is running; waiting for it"
  flock 9
fi
if [ -f "$image" ]; then
  echo "$image"
  exit 0
fi

[ -r "$tarball" ] || die "$tarball missing: apt-get install linux-source-$base"
installed=$(dpkg-query -W -f='${Version}' linux-source-$base 2>/dev/null || true)
[ "$installed" = "$base_version" ] ||
  log "warning: linux-source-$base is '$installed', the series is against $base_version"

# Pristine, cached unpack of the source. Never modified after unpacking.
src="$cache/src-${base_version//\~/-}"
if [ ! -f "$src/.cpuhpd-unpacked" ]; then
  log "unpacking $tarball into $src"
  rm -rf "$src" "$src.tmp"
  mkdir -p "$src.tmp"
  tar -xJf "$tarball" -C "$src.tmp" --strip-components=1
  touch "$src.tmp/.cpuhpd-unpacked"
  mv "$src.tmp" "$src"
fi

work="$cache/build-$hash"
rm -rf "$work"
mkdir -p "$work"
buildlog="$cache/build-$hash.log"
: >"$buildlog"
log "build $flavour $base kernel $hash in $work (log: $buildlog)"
start=$(date +%s)

cp -a "$src/." "$work/src"
rm -f "$work/src/.cpuhpd-unpacked"
for p in "${patches[@]}"; do
  log "applying $(basename "$p")"
  patch -d "$work/src" -p1 -F0 -N -s --no-backup-if-mismatch <"$p" >>"$buildlog" 2>&1 ||
    die "$(basename "$p") does not apply (see $buildlog)"
done

# Fixed build identity, so that the same inputs give the same kernel.
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2026"
export KBUILD_BUILD_USER=cpuhpd KBUILD_BUILD_HOST=cpuhpd KBUILD_BUILD_VERSION=1
obj="$work/obj"
mk() { make -C "$work/src" O="$obj" "$@" >>"$buildlog" 2>&1; }

mk tinyconfig || die "make tinyconfig failed (see $buildlog)"
(cd "$work/src" && ./scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "${fragments[@]}") \
  >>"$buildlog" 2>&1 || die "merge_config.sh failed (see $buildlog)"
mk olddefconfig || die "make olddefconfig failed (see $buildlog)"

# Dependencies can silently drop an option: check every one we asked for.
missing=0
while IFS= read -r line; do
  case "$line" in
    CONFIG_*=n)
      opt=${line%%=*}
      if grep -q "^$opt=" "$obj/.config"; then
        log "config: $opt should be unset, is $(grep "^$opt=" "$obj/.config")"
        missing=1
      fi ;;
    CONFIG_*=*)
      if ! grep -qx "$line" "$obj/.config"; then
        opt=${line%%=*}
        log "config: wanted $line, got '$(grep -E "^$opt=|^# $opt is not set" "$obj/.config" || echo absent)'"
        missing=1
      fi ;;
  esac
done < <(cat "${fragments[@]}")
[ "$missing" = 0 ] || die "required options missing from the final .config"
log "config: every option of ${fragments[*]##*/} is set"

log "make -j$jobs bzImage"
mk -j"$jobs" bzImage || { tail -40 "$buildlog" >&2; die "kernel build failed (see $buildlog)"; }

# Options a fragment builds as modules (rcutorture: it starts at boot when built in).
# Placed before the image, so that an image in the cache always has its modules.
if grep -qh '^CONFIG_[A-Z0-9_]*=m$' "${fragments[@]}"; then
  log "make -j$jobs modules"
  mk -j"$jobs" modules || { tail -40 "$buildlog" >&2; die "module build failed (see $buildlog)"; }
  # The guest scenarios' own modules (test-modules/), built out of tree in a copy.
  cp -r "$here/test-modules" "$work/test-modules"
  log "make M=test-modules modules"
  mk M="$work/test-modules" modules || { tail -40 "$buildlog" >&2; die "test module build failed (see $buildlog)"; }
  rm -rf "$cache/modules-$hash" "$cache/modules-$hash.tmp"
  mkdir -p "$cache/modules-$hash.tmp"
  find "$obj" "$work/test-modules" -name '*.ko' -exec cp {} "$cache/modules-$hash.tmp/" \;
  mv "$cache/modules-$hash.tmp" "$cache/modules-$hash"
  log "modules: $(cd "$cache/modules-$hash" && echo *.ko)"
fi
cp "$obj/.config" "$cache/config-$hash"
# For tests/vm/hang-dump.sh: names the functions stuck vCPUs are in.
cp "$obj/System.map" "$cache/System.map-$hash"
cp "$obj/arch/x86/boot/bzImage" "$image.tmp"
mv "$image.tmp" "$image"
log "built in $(( $(date +%s) - start )) s"
if [ "${CPUHPD_KEEP_BUILD:-0}" != 1 ]; then
  rm -rf "$work"
fi
echo "$image"
