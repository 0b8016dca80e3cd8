#!/usr/bin/env bash
# Fails when a C++ file differs from the project's .clang-format, or when an if, else, for,
# while or do body lacks braces (.clang-tidy: readability-braces-around-statements).
#
#   scripts/check-format.sh [BUILD_DIR]          format: every file; braces: the C++ files
#                                                changed since the merge base with main
#                                                (uncommitted ones too; on main itself, those
#                                                of the last commit)
#   scripts/check-format.sh --all [BUILD_DIR]    braces: every file (several minutes on 2 cores)
#
# Formatting costs nothing; the brace check needs a compiler's view (clang-tidy and the
# build's compile_commands.json: BUILD_DIR, else $CPUHPD_BUILD_DIR, build-test or build-dev)
# and costs 1-5 s of CPU per translation unit, so by default it reads only what changed.
# clang-format 14 (Debian 12) has no InsertBraces.
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
if [ "${1:-}" = "--all" ]; then
  all=1
  shift
fi
build=${1:-${CPUHPD_BUILD_DIR:-}}
if [ -z "$build" ]; then
  for b in build-test build-dev build; do
    if [ -f "$b/compile_commands.json" ]; then
      build=$b
      break
    fi
  done
fi

# kernel/ is kernel code in the kernel's style (scripts/checkpatch.pl --strict), not ours.
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c' ':!kernel/')
if [ ${#files[@]} -gt 0 ]; then
  clang-format --dry-run --Werror "${files[@]}"
fi
echo "format: ${#files[@]} files clean"

if [ -z "$build" ] || [ ! -f "$build/compile_commands.json" ]; then
  echo "braces: no compile_commands.json (give the build directory: $0 [--all] BUILD_DIR)" >&2
  exit 1
fi
# The translation units of the build that are the project's (not generated ones).
mapfile -t units < <(python3 -c '
import json, os, sys
root = os.getcwd() + "/"
for e in json.load(open(sys.argv[1])):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    if f.startswith(root) and os.path.exists(f):
        print(os.path.relpath(f, root))
' "$build/compile_commands.json" | sort -u)
if [ "$all" -eq 1 ]; then
  check=("${units[@]}")
else
  base=$(git merge-base HEAD main 2>/dev/null || true)
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
    base=$(git rev-parse -q --verify HEAD~1 || true)
  fi
  mapfile -t changed < <({
    [ -n "$base" ] && git diff --name-only --diff-filter=ACMR "$base" -- '*.cpp' '*.h'
    git ls-files --others --exclude-standard -- '*.cpp' '*.h'
  } | sort -u)
  # A unit for each changed file: itself, or for a header the first unit that includes it
  # (.clang-tidy's HeaderFilterRegex then reads the header too).
  check=()
  for f in "${changed[@]}"; do
    if printf '%s\n' "${units[@]}" | grep -qxF "$f"; then
      check+=("$f")
    elif [[ $f == *.h ]]; then
      for u in "${units[@]}"; do
        if grep -q "#include \"\(.*/\)\?$(basename "$f")\"" "$u"; then
          check+=("$u")
          break
        fi
      done
    fi
  done
  mapfile -t check < <(printf '%s\n' "${check[@]}" | sed '/^$/d' | sort -u)
fi
if [ ${#check[@]} -eq 0 ]; then
  echo "braces: no C++ file changed"
  exit 0
fi
# The build's flags are GCC's: clang-tidy neither knows some warnings nor makes its own
# warnings errors; only the brace check fails.
printf '%s\0' "${check[@]}" |
  xargs -0 -n 4 -P "$(nproc)" clang-tidy -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-error \
    2> >(grep -v '^[0-9]* warnings\? generated\.$' >&2)
echo "braces: ${#check[@]} translation units clean"
