#!/usr/bin/env bash
# cli-test.sh CPUCTL CPUHPD SOURCE_DIR: the command lines that need no bus and no daemon:
# --version, usage without a command, --help's command list and examples, which commands
# take --refuse-pinned, and cpuhpd --check-config in both spellings. Each check names itself
# when it fails.
set -uo pipefail
cpuctl=$1 cpuhpd=$2 src=$3
version=$(sed -n 's/^project(cpuhpd VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# run NAME EXPECTED_RC CMD...: runs CMD with stdout/stderr in $tmp/out and $tmp/err.
run() {
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $name: exit $rc, expected $want"
        sed 's/^/  stdout: /' "$tmp/out"
        sed 's/^/  stderr: /' "$tmp/err"
        failures=$((failures + 1))
        return 1
    fi
}
# has NAME FILE REGEX: FILE ($tmp/out or $tmp/err) has a line matching REGEX.
has() {
    if ! grep -Eq -- "$3" "$tmp/$2"; then
        echo "FAIL $1: $2 has no line matching '$3'"
        sed "s/^/  $2: /" "$tmp/$2"
        failures=$((failures + 1))
    fi
}
empty() {
    if [ -s "$tmp/$2" ]; then
        echo "FAIL $1: $2 is not empty"
        sed "s/^/  $2: /" "$tmp/$2"
        failures=$((failures + 1))
    fi
}

[ -n "$version" ] || { echo "FAIL: no version in $src/CMakeLists.txt"; exit 1; }

run "cpuctl --version" 0 "$cpuctl" --version && {
    [ "$(cat "$tmp/out")" = "cpuctl $version" ] ||
        { echo "FAIL cpuctl --version printed '$(cat "$tmp/out")', expected 'cpuctl $version'"; failures=$((failures + 1)); }
}
run "cpuhpd --version" 0 "$cpuhpd" --version && has "cpuhpd --version" out "^cpuhpd $version\$"

# No command: the usage with every command, on stderr only, exit 2.
run "cpuctl (no command)" 2 "$cpuctl" && {
    empty "cpuctl (no command)" out
    for c in offline online plan status topology smt watch; do
        has "cpuctl (no command) lists $c" err "^ +$c "
    done
}
run "cpuctl --json (no command)" 2 "$cpuctl" --json && has "cpuctl --json (no command)" err "^ +offline "
# An unknown command is an error about that command, not the usage.
run "cpuctl frobnicate" 2 "$cpuctl" frobnicate && has "cpuctl frobnicate" err "frobnicate"

# --help: every command, and one example of each.
run "cpuctl --help" 0 "$cpuctl" --help && {
    for c in offline online plan status topology smt watch; do
        has "cpuctl --help lists $c" out "^ +$c "
        has "cpuctl --help has an example of $c" out "^ +cpuctl (--json )?$c( |\$)"
    done
}

# The commands the bash completion offers (completion/cpuctl.bash; the unit test
# CompletionLists holds zsh's to it) are those --help lists.
run "cpuctl --help (commands)" 0 "$cpuctl" --help && {
    listed=$(sed -n '/^Subcommands:/,/^$/s/^  \([a-z-]*\) .*/\1/p' "$tmp/out" | sort | tr '\n' ' ')
    offered=$(sed -n 's/^ *local commands="\([^"]*\)".*/\1/p' "$src/completion/cpuctl.bash" |
        tr ' ' '\n' | sort | tr '\n' ' ')
    if [ -z "$listed" ] || [ "$listed" != "$offered" ]; then
        echo "FAIL bash completion's commands: '$offered', cpuctl --help lists '$listed'"
        failures=$((failures + 1))
    fi
}

# --refuse-pinned: on the commands that may take CPUs offline, with its help; not on online
# or profile revert (a usage error before any bus is opened).
for c in "offline" "plan" "smt" "profile apply"; do
    # shellcheck disable=SC2086
    run "cpuctl $c --help" 0 "$cpuctl" $c --help &&
        has "cpuctl $c --help offers --refuse-pinned" out \
            "--refuse-pinned +refuse \(nothing changed\) when a task would lose every CPU it may run on"
done
run "cpuctl online --refuse-pinned" 2 "$cpuctl" online 4 --refuse-pinned &&
    has "cpuctl online --refuse-pinned" err "refuse-pinned"
run "cpuctl profile revert --refuse-pinned" 2 "$cpuctl" profile revert --refuse-pinned

# cpuhpd --check-config: positional, --config, and a bad file (with its line and key).
cat >"$tmp/good.yaml" <<'YAML'
protected_cpus: "0"
min_online: 2
YAML
cat >"$tmp/bad.yaml" <<'YAML'
min_online: 2
no_such_key: 1
YAML
run "cpuhpd --check-config FILE" 0 "$cpuhpd" --check-config "$tmp/good.yaml" &&
    has "cpuhpd --check-config FILE" out "good.yaml: OK"
run "cpuhpd --check-config --config FILE" 0 "$cpuhpd" --check-config --config "$tmp/good.yaml" &&
    has "cpuhpd --check-config --config FILE" out "good.yaml: OK"
run "cpuhpd --check-config the shipped config" 0 "$cpuhpd" --check-config "$src/config/cpuhpd.yaml"
run "cpuhpd --check-config bad FILE" 1 "$cpuhpd" --check-config "$tmp/bad.yaml" &&
    has "cpuhpd --check-config bad FILE" err "bad.yaml.*2.*no_such_key"
run "cpuhpd --check-config --config bad" 1 "$cpuhpd" --check-config --config "$tmp/bad.yaml"
run "cpuhpd --check-config missing FILE" 1 "$cpuhpd" --check-config "$tmp/missing.yaml"
run "cpuhpd --check-config two files" 2 "$cpuhpd" --check-config "$tmp/good.yaml" --config "$tmp/bad.yaml"
run "cpuhpd FILE without --check-config" 2 "$cpuhpd" "$tmp/good.yaml"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "cli: every check passed"
