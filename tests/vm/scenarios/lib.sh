# lib.sh - helpers for the cpuhpd guest scenarios (busybox sh; sourced).
#
# A scenario exits 0 (PASS), 77 (SKIP: call skip "reason") or anything else (FAIL:
# call fail "reason"). Assertions check the KERNEL's state (per-CPU online files and
# /sys/devices/system/cpu/online); expected values are derived from the guest's own
# sysfs before a change. CPU sets are space-separated, sorted, unique numbers.

SYS=/sys/devices/system/cpu
CONF=/etc/cpuhpd/cpuhpd.yaml
DAEMON_LOG=/tmp/cpuhpd.log
PIDFILE=/run/cpuhpd-test.pid
CONFFILE=/run/cpuhpd-test.conf
CPUCTL_TIMEOUT=${CPUCTL_TIMEOUT:-240}

# ---------------------------------------------------------------- results
fail() { echo "ASSERT FAIL: $*"; echo "$*" >>/tmp/fail-reason; restore_all_online; exit 1; }
skip() { echo "SKIP: $*"; echo "$*" >/tmp/skip-reason; exit 77; }
note() { echo "  # $*"; }
have_binaries() { [ "$(cat /cpuhpd-tests/have-binaries 2>/dev/null)" = 1 ]; }
need_binaries() { have_binaries || skip "cpuhpd/cpuctl not in the initramfs"; }

now_ms() { local u; u=$(cut -d' ' -f1 /proc/uptime); echo $(( ${u%.*} * 1000 + 1${u#*.} * 10 - 1000 )); }

# ---------------------------------------------------------------- cpu sets
norm() { tr ' ,' '\n\n' | grep -E '^[0-9]+$' | sort -n -u | tr '\n' ' ' | sed 's/ $//'; echo; }
# expand "0-3,8,10-11" (also kernel group form a-b:u/g) into "0 1 2 3 8 10 11"
expand() {
    local item a b r u g i
    for item in $(echo "$1" | tr ',' ' '); do
        case "$item" in
        *-*:*/*) r=${item%%:*}; a=${r%-*}; b=${r#*-}; u=${item#*:}; g=${u#*/}; u=${u%/*}
                 i=$a; while [ $i -le $b ]; do [ $(((i - a) % g)) -lt $u ] && echo $i; i=$((i + 1)); done ;;
        *-*) a=${item%-*}; b=${item#*-}; i=$a; while [ $i -le $b ]; do echo $i; i=$((i + 1)); done ;;
        *) echo "$item" ;;
        esac
    done | norm
}
# compress "0 1 2 3 8" into the kernel's cpulist form "0-3,8"
compress() {
    local out="" start="" prev="" c
    for c in $(echo "$*" | norm); do
        if [ -z "$start" ]; then start=$c; prev=$c
        elif [ $c -eq $((prev + 1)) ]; then prev=$c
        else out="$out,$(_rng $start $prev)"; start=$c; prev=$c; fi
    done
    [ -n "$start" ] && out="$out,$(_rng $start $prev)"
    echo "${out#,}"
}
_rng() { [ $1 -eq $2 ] && echo $1 || echo "$1-$2"; }
union() { echo "$*" | norm; }
minus() { local a="$1" b=" $2 " c out=""; for c in $a; do case "$b" in *" $c "*) ;; *) out="$out $c" ;; esac; done; echo "$out" | norm; }
inter() { local a="$1" b=" $2 " c out=""; for c in $a; do case "$b" in *" $c "*) out="$out $c" ;; esac; done; echo "$out" | norm; }
count() { echo "$*" | wc -w; }
first() { echo "$1"; }
last() { local c l=""; for c in $*; do l=$c; done; echo "$l"; }
nth() { local n=$1 c; shift; for c in $*; do [ $n -eq 0 ] && { echo $c; return; }; n=$((n - 1)); done; }
contains() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
# kernel cpumap (hex, 32-bit words, most significant first) of a set, with 0x
hexmask() {
    local max=0 c nw w v s=""
    for c in $*; do [ $c -gt $max ] && max=$c; done
    nw=$((max / 32 + 1)); w=$((nw - 1))
    while [ $w -ge 0 ]; do
        v=0; for c in $*; do [ $((c / 32)) -eq $w ] && v=$((v | (1 << (c % 32)))); done
        if [ $w -eq $((nw - 1)) ]; then s=$(printf '%x' $v); else s="$s,$(printf '%08x' $v)"; fi
        w=$((w - 1))
    done
    echo "0x$s"
}

# ---------------------------------------------------------------- kernel state
present() { expand "$(cat $SYS/present)"; }
possible() { expand "$(cat $SYS/possible)"; }
kernel_online() { expand "$(cat $SYS/online)"; }
cpu_is_online() { [ ! -e $SYS/cpu$1/online ] || [ "$(cat $SYS/cpu$1/online)" = 1 ]; }
# CPUs whose per-CPU file says online (cpu without an online file counts as online)
perfile_online() { local c; for c in $(present); do cpu_is_online $c && echo $c; done | norm; }
has_online_file() { [ -e $SYS/cpu$1/online ]; }
protected_cpus() { expand "$(sed -n 's/^protected_cpus: *"\{0,1\}\([^"]*\)"\{0,1\}.*/\1/p' "$(daemon_conf)")"; }
# CPUs cpuhpd may take offline: present, with an online file, not protected
hotpluggable() { local c p; p=" $(protected_cpus) "; for c in $(present); do has_online_file $c && ! contains "$p" $c && echo $c; done | norm; }

# topology (read while the CPU is online; scenarios snapshot it at their start)
pkg_of() { cat $SYS/cpu$1/topology/physical_package_id; }
die_of() { cat $SYS/cpu$1/topology/die_id 2>/dev/null || echo 0; }
core_of() { cat $SYS/cpu$1/topology/core_id; }
siblings_of() { expand "$(cat $SYS/cpu$1/topology/thread_siblings_list)"; }
node_of() { local n; for n in $SYS/cpu$1/node*; do [ -e "$n" ] && { echo ${n##*node}; return; }; done; echo 0; }
cpus_of_pkg() { local c; for c in $(present); do [ "$(pkg_of $c)" = "$1" ] && echo $c; done | norm; }
cpus_of_node() { [ -e /sys/devices/system/node/node$1/cpulist ] && expand "$(cat /sys/devices/system/node/node$1/cpulist)"; }
packages() { local c; for c in $(present); do pkg_of $c; done | norm; }
nodes() { local n; for n in /sys/devices/system/node/node[0-9]*; do [ -e "$n" ] && echo ${n##*node}; done | norm; }
# secondary SMT threads: every thread of a core except its first (primary) one
smt_secondaries() { local c s; for c in $(present); do s=$(siblings_of $c); [ "$(first $s)" != $c ] && echo $c; done | norm; }
smt_control() { cat $SYS/smt/control 2>/dev/null || echo absent; }

# Assert that exactly the CPUs in $1 are offline (everything else present online),
# per CPU and in the kernel's online mask.
assert_offline_exactly() {
    local want_off="$(echo "$1" | norm)" ctx="$2" pres want_on got_file got_mask
    pres=$(present)
    want_on=$(minus "$pres" "$want_off")
    got_file=$(perfile_online)
    got_mask=$(kernel_online)
    [ "$got_file" = "$want_on" ] || fail "$ctx: per-CPU online files say online={$(compress $got_file)}, expected {$(compress $want_on)}"
    [ "$got_mask" = "$want_on" ] || fail "$ctx: $SYS/online=$(cat $SYS/online), expected $(compress $want_on)"
    echo "  ok: $ctx: offline={$(compress $want_off)} online=$(cat $SYS/online)"
}
assert_all_online() { assert_offline_exactly "" "$1"; }
assert_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; echo "  ok: $3 = '$2'"; }

restore_all_online() {
    local c
    for c in $(present); do
        has_online_file $c && [ "$(cat $SYS/cpu$c/online)" != 1 ] && echo 1 >$SYS/cpu$c/online 2>/dev/null
    done
    [ "$(smt_control)" = off ] && echo on >$SYS/smt/control 2>/dev/null
    for c in $(present); do
        has_online_file $c && [ "$(cat $SYS/cpu$c/online)" != 1 ] && echo 1 >$SYS/cpu$c/online 2>/dev/null
    done
    return 0
}

# ---------------------------------------------------------------- cpuctl
# cc ARGS...: runs cpuctl --timeout T ARGS, sets RC, OUT (stdout file), ERR, MS.
OUT=/tmp/cc.out ERR=/tmp/cc.err
cc() {
    local t0 t1
    echo "+ cpuctl $*"
    t0=$(now_ms)
    cpuctl --timeout $CPUCTL_TIMEOUT "$@" >$OUT 2>$ERR
    RC=$?
    t1=$(now_ms); MS=$((t1 - t0))
    echo "  rc=$RC (${MS} ms)"
    [ -s $OUT ] && head -c 1500 $OUT | sed 's/^/  | /' && echo
    [ -s $ERR ] && head -c 800 $ERR | sed 's/^/  ! /'
    return 0
}
assert_rc() { [ "$RC" = "$1" ] || fail "$2: cpuctl exit code $RC, expected $1"; echo "  ok: $2: exit $RC"; }
jqo() { jq -r "$@" <$OUT; }
json_ok() { jq -e . <$OUT >/dev/null 2>&1 || fail "$1: cpuctl --json printed no valid JSON"; }
# CPUs of the JSON result with a given result value
json_cpus_with() { jqo "[.cpus[] | select(.result == \"$1\") | .cpu] | .[]" | norm; }
json_cpus() { jqo '[.cpus[].cpu] | .[]' | norm; }
# Check a successful offline/online JSON: outcome ok, every CPU of $1 "changed".
assert_json_changed() {
    local want="$(echo "$1" | norm)" ctx="$2"
    json_ok "$ctx"
    assert_eq "$(jqo .outcome)" ok "$ctx: outcome"
    assert_eq "$(json_cpus_with changed)" "$want" "$ctx: cpus with result changed"
}

# ---------------------------------------------------------------- daemon
daemon_conf() { cat $CONFFILE 2>/dev/null || echo $CONF; }
daemon_pid() { cat $PIDFILE 2>/dev/null; }
daemon_alive() { local p; p=$(daemon_pid); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
daemon_is_default() { daemon_alive && [ "$(daemon_conf)" = $CONF ]; }
bus_has_owner() {
    dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.cpuhpd1 2>/dev/null | grep -q 'boolean true'
}
# daemon_start [CONFIG]: starts cpuhpd in the background, waits (bounded) for its name
daemon_start() {
    local conf="${1:-$CONF}" i=0
    echo "$conf" >$CONFFILE
    echo "+ cpuhpd --config $conf &"
    echo "=== cpuhpd start $(date) config=$conf" >>$DAEMON_LOG
    cpuhpd --config "$conf" >>$DAEMON_LOG 2>&1 &
    echo $! >$PIDFILE
    while [ $i -lt 300 ]; do
        bus_has_owner && { echo "  cpuhpd up (pid $(daemon_pid), $((i / 10)).$((i % 10)) s)"; return 0; }
        daemon_alive || { echo "  cpuhpd exited during start-up:"; tail -n 20 $DAEMON_LOG; return 1; }
        sleep 0.1; i=$((i + 1))
    done
    echo "  cpuhpd did not own org.cpuhpd1 within 30 s"; tail -n 20 $DAEMON_LOG
    return 1
}
daemon_stop() {
    local p i=0
    p=$(daemon_pid)
    [ -n "$p" ] || return 0
    kill -TERM "$p" 2>/dev/null
    while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$p" 2>/dev/null && { echo "  cpuhpd ignored SIGTERM for 10 s; SIGKILL"; kill -KILL "$p"; sleep 0.2; }
    # wait for the bus name to go away so the next start is clean
    i=0; while bus_has_owner && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    rm -f $PIDFILE
}
# daemon_restart_with KEY: VALUE ...  -> restarts cpuhpd with the default config
# plus/overriding the given "key: value" lines (written to /tmp/cpuhpd-<n>.yaml)
daemon_restart_with() {
    local f=/tmp/cpuhpd-$$-$(now_ms).yaml line key
    cp $CONF $f
    for line in "$@"; do
        key="${line%%:*}"
        sed -i "/^$key:/d" $f
        echo "$line" >>$f
    done
    daemon_stop
    daemon_start $f || fail "cpuhpd did not start with: $*"
}
daemon_restart_default() { daemon_stop; daemon_start $CONF || fail "cpuhpd did not restart"; }
