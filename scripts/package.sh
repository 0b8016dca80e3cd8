#!/usr/bin/env bash
# Builds the Debian package cpuhpd the Debian way (debian/, dh, CMake + Ninja) and runs
# lintian on it.
#
#   scripts/package.sh              build without the tests (DEB_BUILD_OPTIONS=nocheck)
#   scripts/package.sh --check      also run ctest -L 'unit|integration' inside the build
#   scripts/package.sh --out DIR    where the .deb, .buildinfo and .changes go (default dist/)
#   scripts/package.sh --no-lintian  skip lintian (the systemd guest test builds the package
#                                    to install it, not to review it)
#
# As root it first installs what it needs with apt-get: dpkg-dev, debhelper, devscripts,
# lintian and the Build-Depends of debian/control (apt-get build-dep). It builds in a copy
# of the tree (the files git knows, committed or not), so build/ and the worktree stay
# clean. The package is not installed: `sudo dpkg -i dist/cpuhpd_*.deb` does that.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/dist
check=0
lintian=1
while [ $# -gt 0 ]; do
    case $1 in
    --check) check=1 ;;
    --out) out=$2; shift ;;
    --no-lintian) lintian=0 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    tools=(dpkg-dev debhelper devscripts lintian fakeroot)
    missing=()
    for p in "${tools[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    profiles=()
    [ $check -eq 1 ] || profiles=(-P nocheck)
    (cd "$here" && apt-get build-dep -y -qq --no-install-recommends "${profiles[@]}" ./ >/dev/null)
else
    echo "package.sh: not root, installing nothing (dpkg-buildpackage checks the Build-Depends)" >&2
fi

version=$(dpkg-parsechangelog -l "$here/debian/changelog" -S Version)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A caller that compiles through ccache (scripts/test.sh) gets hits across runs although each
# run builds in a new temporary directory: ccache takes the paths below it as relative ones.
if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
    export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fi
src=$work/cpuhpd-$version
mkdir -p "$src"
# The files git knows (tracked, and new ones not ignored): never build/ or dist/.
(cd "$here" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$src"

# No empty word in the list (dpkg warns "invalid flag in DEB_BUILD_OPTIONS").
options=${DEB_BUILD_OPTIONS:-}
[ $check -eq 1 ] || options="${options:+$options }nocheck"
export DEB_BUILD_OPTIONS="$options"
export DEB_BUILD_PROFILES="$([ $check -eq 1 ] || echo nocheck)"
(cd "$src" && nice dpkg-buildpackage -us -uc -b)

mkdir -p "$out"
changes=$(ls "$work"/cpuhpd_"$version"_*.changes)
for f in "$work"/*.deb "$work"/*.buildinfo "$changes"; do
    cp "$f" "$out/"
done
echo "package.sh: built $(cd "$out" && ls cpuhpd_"$version"_*.deb)" >&2
[ $lintian -eq 1 ] || exit 0
echo "package.sh: lintian" >&2
# Info tags too (-I); the tags that stay are explained in debian/README.source.
lintian -I "$out/$(basename "$changes")"
