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

# tick: T = uptime in ms, without a fork (/proc/uptime has 10 ms steps); now_ms prints it.
tick() { local u; read -r u _ </proc/uptime; T=$(( ${u%.*} * 1000 + 1${u#*.} * 10 - 1000 )); }
now_ms() { tick; echo $T; }

# ---------------------------------------------------------------- cpu sets
# Every fork+exec costs ~15 ms in a TCG guest (Debian's jq ~500 ms), so the set helpers are
# single awk processes and the topology is read once per scenario into a table.
AWKLIB='
function addlist(s,   n, parts, i, item, rng, ug, ab, a, b, u, g, c) {
    gsub(/[ \t\n]+/, ",", s)
    n = split(s, parts, ",")
    for (i = 1; i <= n; i++) {
        item = parts[i]; if (item == "") continue
        u = 1; g = 1
        if (index(item, ":")) { split(item, rng, ":"); item = rng[1]; split(rng[2], ug, "/"); u = ug[1] + 0; g = ug[2] + 0; if (g < 1) g = 1 }
        if (item !~ /^[0-9]+(-[0-9]+)?$/) continue
        if (index(item, "-")) { split(item, ab, "-"); a = ab[1] + 0; b = ab[2] + 0 } else { a = item + 0; b = a }
        for (c = a; c <= b; c++) if ((c - a) % g < u) { set[c] = 1; if (c > max) max = c }
    }
}
function out(   c, o) { o = ""; for (c = 0; c <= max; c++) if (c in set) o = o (o == "" ? "" : " ") c; return o }
function cpulist(   c, o, st) {
    o = ""; st = -1
    for (c = 0; c <= max + 1; c++) {
        if ((c in set) && st < 0) st = c
        if (!(c in set) && st >= 0) { o = o (o == "" ? "" : ",") (st == c - 1 ? st : st "-" (c - 1)); st = -1 }
    }
    return o
}
BEGIN { max = -1 }
'
norm() { awk "$AWKLIB"'{ addlist($0) } END { print out() }'; }
# expand "0-3,8,10-11" (also the group form a-b:u/g) into "0 1 2 3 8 10 11"
expand() { awk -v s="$1" "$AWKLIB"'BEGIN { addlist(s); print out() }'; }
# compress "0 1 2 3 8" into the kernel's cpulist form "0-3,8"
compress() { awk -v s="$*" "$AWKLIB"'BEGIN { addlist(s); print cpulist() }'; }
union() { awk -v s="$*" "$AWKLIB"'BEGIN { addlist(s); print out() }'; }
minus() { awk -v a="$1" -v b="$2" "$AWKLIB"'BEGIN { addlist(b); for (c in set) del[c] = 1; delete set; max = -1; addlist(a); for (c in del) delete set[c]; print out() }'; }
inter() { awk -v a="$1" -v b="$2" "$AWKLIB"'BEGIN { addlist(b); for (c in set) keep[c] = 1; delete set; max = -1; addlist(a); for (c in set) if (!(c in keep)) delete set[c]; print out() }'; }
count() { set -- $*; echo $#; }
first() { echo "$1"; }
last() { [ $# -gt 0 ] && eval echo "\${$#}"; }
last_n() { local n=$1; shift; [ $# -gt $n ] && shift $(( $# - n )); echo "$@"; }
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
rd() { local v; read -r v <"$1" 2>/dev/null; echo "$v"; }
read -r _present <$SYS/present
PRESENT=$(expand "$_present")
present() { echo "$PRESENT"; }
possible() { expand "$(rd $SYS/possible)"; }
kernel_online() { expand "$(rd $SYS/online)"; }
has_online_file() { [ -e $SYS/cpu$1/online ]; }
cpu_is_online() { local v; [ -e $SYS/cpu$1/online ] || return 0; read -r v <$SYS/cpu$1/online; [ "$v" = 1 ]; }
# CPUs whose per-CPU file says online (a present CPU without an online file is online)
perfile_online() {
    awk -v s="$PRESENT" "$AWKLIB"'BEGIN { n = split(s, p, " ")
        for (i = 1; i <= n; i++) { f = "/sys/devices/system/cpu/cpu" p[i] "/online"; v = "1"
            if ((getline v < f) > 0) close(f); if (v == "1") addlist(p[i]) }
        print out() }'
}
protected_cpus() { expand "$(sed -n 's/^protected_cpus: *"\{0,1\}\([^"]*\)"\{0,1\}.*/\1/p' "$(daemon_conf)")"; }
# CPUs cpuhpd may take offline: present, with an online file, not protected
hotpluggable() {
    local c p out=""; p=" $(protected_cpus) "
    for c in $PRESENT; do has_online_file $c && ! contains "$p" $c && out="$out $c"; done
    echo $out
}

# Topology table, read while every CPU is online (scenarios start that way; an
# offline CPU has no topology/ directory). One line per present CPU:
#   cpu package die core node sibling...
TOPO=/tmp/topo.table
topo_snapshot() {
    awk -v s="$PRESENT" "$AWKLIB"'BEGIN { n = split(s, p, " ")
        for (nd = 0; nd < 64; nd++) { f = "/sys/devices/system/node/node" nd "/cpulist"
            if ((getline l < f) > 0) { close(f); delete set; max = -1; addlist(l); for (c in set) node[c] = nd } }
        for (i = 1; i <= n; i++) { c = p[i]; d = "/sys/devices/system/cpu/cpu" c "/topology/"
            pk = "?"; di = 0; co = "?"; sb = c
            if ((getline pk < (d "physical_package_id")) > 0) close(d "physical_package_id")
            if ((getline di < (d "die_id")) > 0) close(d "die_id")
            if ((getline co < (d "core_id")) > 0) close(d "core_id")
            if ((getline sb < (d "thread_siblings_list")) > 0) close(d "thread_siblings_list")
            delete set; max = -1; addlist(sb)
            print c, pk, di, co, ((c in node) ? node[c] : 0), out() } }' >$TOPO
}
[ "$(rd $SYS/online)" = "$_present" ] && topo_snapshot
[ -s $TOPO ] || topo_snapshot
_topo() { local code="$1" c p d co n s; while read -r c p d co n s; do eval "$code"; done <$TOPO; }
pkg_of() { _topo '[ $c = '$1' ] && echo $p'; }
die_of() { _topo '[ $c = '$1' ] && echo $d'; }
core_of() { _topo '[ $c = '$1' ] && echo $co'; }
siblings_of() { _topo '[ $c = '$1' ] && echo $s'; }
node_of() { _topo '[ $c = '$1' ] && echo $n'; }
cpus_of_pkg() { echo $(_topo '[ $p = '$1' ] && echo $c'); }
cpus_of_node() { echo $(_topo '[ $n = '$1' ] && echo $c'); }
packages() { _topo 'echo $p' | norm; }
nodes() { _topo 'echo $n' | norm; }
# secondary SMT threads: every thread of a core except its first (primary) one
# last_package_or_skip: PK, the last package, and P, its CPUs; skips the scenario when the
# machine has one package or the last one has a protected CPU.
last_package_or_skip() {
    [ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
    PK=$(last $(packages))
    P=$(union $(cpus_of_pkg $PK))
    [ -z "$(inter "$P" "$(protected_cpus)")" ] || skip "package $PK has protected CPUs"
}
smt_secondaries() { echo $(_topo 'set -- $s; [ $1 != $c ] && echo $c'); }
smt_control() { local v; read -r v <$SYS/smt/control 2>/dev/null || v=absent; echo "$v"; }

# Assert that exactly the CPUs in $1 are offline (everything else present online),
# per CPU and in the kernel's online mask.
assert_offline_exactly() {
    local want_off="$(union "$1")" ctx="$2" want_on got_file got_mask
    want_on=$(minus "$PRESENT" "$want_off")
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
    for c in $PRESENT; do
        cpu_is_online $c || echo 1 >$SYS/cpu$c/online 2>/dev/null
    done
    # "off", or a thread count left by a failed write (6.12)
    case "$(smt_control)" in off|[0-9]*) echo on >$SYS/smt/control 2>/dev/null ;; esac
    for c in $PRESENT; do
        cpu_is_online $c || echo 1 >$SYS/cpu$c/online 2>/dev/null
    done
    return 0
}

# need_rcu_scenario MIN: the start of the scenarios about a batch and rcu_expedited: the
# binaries, every CPU online, a writable rcu_expedited (RE; its value in ORIG_RE) and at
# least MIN hotpluggable CPUs (H, N); skips otherwise.
need_rcu_scenario() {
    need_binaries
    assert_all_online "start"
    RE=/sys/kernel/rcu_expedited
    [ -w $RE ] || skip "no writable $RE"
    H=$(hotpluggable)
    N=$(count $H)
    [ $N -ge $1 ] || skip "needs $1 hotpluggable CPUs, have $N"
    ORIG_RE=$(cat $RE)
}

# wait_for_first_offline: returns as soon as $SYS/offline names a CPU (it sets OFFLINE to
# it), 1 when none went. Reads with the shell's own `read`: a fork per look (awk, sleep)
# takes longer than a CPU's offline under TCG (50-300 ms).
wait_for_first_offline() {
    local i=0
    OFFLINE=
    while [ $i -lt 2000000 ]; do
        read -r OFFLINE <$SYS/offline
        [ -n "$OFFLINE" ] && return 0
        i=$((i + 1))
    done
    return 1
}

# ---------------------------------------------------------------- kernel log
# A report the kernel log must never hold (issue 28): WARN and BUG, lockdep's reports,
# RCU stalls, hung tasks, soft and hard lockups, the OOM killer. Not "Call Trace" on its
# own: sysrq w and l (init, before it kills a scenario that overran) print it too.
KERNEL_SPLAT='WARNING:|BUG:|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|sleeping function called from invalid context|turning off the locking correctness validator|INFO: task .* blocked|detected stalls? on CPU|self-detected stall|soft lockup|hard LOCKUP|invoked oom-killer'
# splat_count [PATTERN]: how many kernel log lines match PATTERN (default KERNEL_SPLAT)
splat_count() { dmesg | grep -cE "${1:-$KERNEL_SPLAT}"; }
# splat_show FROM [PATTERN]: the log from the FROM-th matching line (1-based) on, with
# the 12 lines after each match, at most 80 lines, indented
splat_show() {
    dmesg | awk -v from="$1" -v pat="${2:-$KERNEL_SPLAT}" '
        $0 ~ pat { n++; if (n >= from) left = 13 }
        left > 0 { print "  dmesg: " $0; left--; if (++shown >= 80) exit }'
}
# splat_first FROM [PATTERN]: the FROM-th matching line itself
splat_first() { dmesg | grep -E "${2:-$KERNEL_SPLAT}" | sed -n "${1}p"; }

# ---------------------------------------------------------------- random batches
# For the stress scenarios. rnd_setup sets H (the CPUs with an online file, protected or
# not), NH (their count), PK (the last package), P1 (its CPUs, a cpulist) and S (the SMT
# secondaries), which rnd_cpu and rnd_mask draw from.
rnd_setup() {
    local c
    H=""; for c in $PRESENT; do has_online_file $c && H="$H $c"; done; H=$(echo $H)
    NH=$(count $H)
    PK=$(last $(packages)); P1=$(compress $(cpus_of_pkg $PK))
    S=$(smt_secondaries)
}
rnd_cpu() { nth $(( RANDOM % NH )) $H; }
# rnd_mask [pairs]: the last package, the SMT secondaries or a random range; with
# "pairs", also a random pair of CPUs
rnd_mask() {
    local a b n=3
    [ "$1" = pairs ] && n=4
    case $(( RANDOM % n )) in
    0) echo "$P1" ;;
    1) [ -n "$S" ] && compress $S || echo "$P1" ;;
    2) a=$(rnd_cpu); b=$(rnd_cpu); [ $a -gt $b ] && { local t=$a; a=$b; b=$t; }; echo "$a-$b" ;;
    *) echo "$(rnd_cpu),$(rnd_cpu)" ;;
    esac
}

# ---------------------------------------------------------------- cpuctl
# cc ARGS...: runs cpuctl --timeout T ARGS, sets RC, OUT (stdout file), ERR, MS, and
# (with --json) loads the output's fields into J_* variables with ONE gojq run (gojq,
# not Debian's jq 1.6, which takes about 0.5 s to start in the guest: mkinitramfs.sh).
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
    case " $* " in *" --json "*) json_load $OUT ;; esac
    return 0
}
# json_load FILE: J_VALID (1 when the file is one JSON object), J_OUTCOME, J_ACTION,
# J_MODE, J_STRATEGY, J_BATCH, J_ORDER, J_CPUS, J_CHANGED, J_UNCHANGED, J_FAILED,
# J_ROLLED (rolled-back), J_REFUSED, J_CANCELLED (cpus with result cancelled), J_ERRORS
# ("cpu:ERRNO ..."), J_ONLINE, J_OFFLINE, J_PHASES (the daemon's "read=120 plan=40 ...", us)
json_load() {
    J_VALID=0 J_OUTCOME= J_ACTION= J_MODE= J_STRATEGY= J_BATCH= J_ORDER= J_CPUS= J_CHANGED=
    J_UNCHANGED= J_FAILED= J_ROLLED= J_REFUSED= J_CANCELLED= J_ERRORS= J_ONLINE= J_OFFLINE=
    J_PHASES=
    eval "$(gojq -r 'select(type == "object") |
        def s(f): (f // "") | tostring | @sh;
        def l(f): [f | tostring] | join(" ") | @sh;
        def r(x): l(.cpus[]? | select(.result == x) | .cpu);
        "J_VALID=1",
        "J_OUTCOME=" + s(.outcome), "J_ACTION=" + s(.action), "J_MODE=" + s(.mode),
        "J_STRATEGY=" + s(.strategy), "J_BATCH=" + s(.batch_id),
        "J_ORDER=" + l(.order[]?), "J_CPUS=" + l(.cpus[]?.cpu),
        "J_CHANGED=" + r("changed"), "J_UNCHANGED=" + r("unchanged"), "J_FAILED=" + r("failed"),
        "J_ROLLED=" + r("rolled-back"), "J_REFUSED=" + r("refused"),
        "J_CANCELLED=" + r("cancelled"),
        "J_ERRORS=" + l(.cpus[]? | "\(.cpu):\(.error // "")"),
        "J_ONLINE=" + s(.online), "J_OFFLINE=" + s(.offline),
        "J_PHASES=" + l(.phases // {} | to_entries[] | "\(.key)=\(.value)")' <"$1" 2>/dev/null)"
}
json_error_of() { local e; for e in $J_ERRORS; do [ "${e%%:*}" = "$1" ] && echo "${e#*:}"; done; }
assert_rc() { [ "$RC" = "$1" ] || fail "$2: cpuctl exit code $RC, expected $1"; echo "  ok: $2: exit $RC"; }
json_ok() { [ "$J_VALID" = 1 ] || fail "$1: cpuctl --json printed no JSON object"; }
# CPUs of the JSON result with a given result value
json_cpus_with() {
    case "$1" in
    changed) echo $J_CHANGED ;; unchanged) echo $J_UNCHANGED ;; failed) echo $J_FAILED ;;
    rolled-back) echo $J_ROLLED ;; refused) echo $J_REFUSED ;; cancelled) echo $J_CANCELLED ;;
    esac
}
# Check a successful offline/online JSON: outcome ok, every CPU of $1 "changed".
assert_json_changed() {
    local want="$(union "$1")" ctx="$2"
    json_ok "$ctx"
    assert_eq "$J_OUTCOME" ok "$ctx: outcome"
    assert_eq "$(union $J_CHANGED)" "$want" "$ctx: cpus with result changed"
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

# ---------------------------------------------------------------- strategies, bulk kernel
# cpuhpd's Capabilities (from `cpuctl --json status`, cached per boot in /tmp/caps:
# the kernel does not change under a running guest).
CAPS_FILE=/tmp/caps
caps() {
    [ -s $CAPS_FILE ] ||
        cpuctl --timeout 60 --json status 2>/dev/null | gojq -r '(.capabilities // []) | join(" ")' >$CAPS_FILE 2>/dev/null
    cat $CAPS_FILE 2>/dev/null
}
has_cap() { have_binaries && contains " $(caps) " "$1"; }
# expected_strategy ACTION "CPUS" [smt-selector]: what the daemon picks with --strategy
# auto, derived from its Capabilities and the kernel's state (call it BEFORE the
# request): smt only when the request named the `smt` selector (third argument) and
# smt/control can switch exactly CPUS (on for offline, off for online), even where bulk
# is offered; else bulk when offered; else per-cpu. A numeric mask never switches SMT
# for the whole machine, even when it names every secondary thread.
expected_strategy() {
    if [ "${3:-}" = smt-selector ] && has_cap smt && [ "$(union "$2")" = "$(smt_secondaries)" ]; then
        case "$1:$(smt_control)" in offline:on|online:off) echo smt; return ;; esac
    fi
    if has_cap bulk; then echo bulk; return; fi
    echo per-cpu
}
# assert_strategy EXPECTED CTX: the last cc --json result used EXPECTED
assert_strategy() { assert_eq "$J_STRATEGY" "$1" "$2: strategy"; }

# The companion kernel patch makes cpu/offline and cpu/online writable (0644).
kernel_has_bulk() { [ "$(stat -c %a $SYS/offline 2>/dev/null)" = 644 ]; }
need_bulk_kernel() {
    kernel_has_bulk || skip "the kernel has no bulk interface ($SYS/offline is mode $(stat -c %a $SYS/offline 2>/dev/null), not 644)"
}
# halt_check NAME: the host-side check that every offline vCPU halts. Prints
# "CPUHPD-HALT-CHECK NAME offline=LIST end" and keeps the guest idle for HALT_WAIT s, in
# which run-guest.sh (watch_halt) samples the CPU time of QEMU's vCPU threads; the
# verdict is the host's (HALT-CHECK lines after the results; a FAIL fails the run).
HALT_WAIT=${HALT_WAIT:-10}
halt_check() {
    local off
    off=$(compress $(minus "$PRESENT" "$(kernel_online)"))
    echo "CPUHPD-HALT-CHECK $1 offline=${off:-none} end"
    sleep "$HALT_WAIT"
}
# kwrite FILE VALUE: one write(2) of VALUE to FILE; KW = ok | EPERM | EBUSY | EINVAL |
# EAGAIN | ENOSPC | ERANGE | "other: <message>" (busybox prints strerror).
kwrite() {
    local err
    echo "+ echo $2 > $1"
    if err=$( (echo "$2" >"$1") 2>&1 ); then KW=ok; else
        case "$err" in
        *"not permitted"*) KW=EPERM ;; *"busy"*) KW=EBUSY ;; *"Invalid argument"*) KW=EINVAL ;;
        *"temporarily unavailable"*) KW=EAGAIN ;; *"No space"*) KW=ENOSPC ;;
        *"out of range"*) KW=ERANGE ;; *) KW="other: $err" ;;
        esac
    fi
    echo "  -> $KW"
}
# kwrite_ok FILE VALUE WHAT: kwrite, and fail "WHAT: <error>" unless the write succeeded
kwrite_ok() { kwrite "$1" "$2"; [ "$KW" = ok ] || fail "$3: $KW"; }
# write_killed_after_first_change FILE LIST FUNC: write LIST to FILE (cpu/offline or
# cpu/online) from a child shell and SIGKILL it as soon as cpu/online changes (the
# batch's first CPU is done), seen by a tight read with shell builtins only (awk or sleeps
# between reads saw batches finish before the signal came). STOPPED=1 when the kernel
# logged "FUNC: interrupted before CPU" for it (the batch stopped early), else 0.
write_killed_after_first_change() {
    local pid i=0 before start now
    before=$(dmesg | grep -c "$3: interrupted before CPU")
    read -r start <$SYS/online
    sh -c "echo $2 >$1" 2>/dev/null &
    pid=$!
    while [ $i -lt 500000 ]; do
        read -r now <$SYS/online
        [ "$now" != "$start" ] && break
        i=$((i + 1))
    done
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    STOPPED=0
    if [ "$(dmesg | grep -c "$3: interrupted before CPU")" -gt "$before" ]; then
        STOPPED=1
        dmesg | grep "$3: interrupted" | tail -n1 | sed 's/^/  | /'
    fi
}
# cpuset_pair A CPUS_A B CPUS_B: two cgroup v2 cpusets under the root, $CG/A on CPUS_A and
# $CG/B on CPUS_B (cpuset enabled in the root's subtree); non-zero when any step is
# refused (no cpuset controller).
cpuset_pair() {
    local cg=/sys/fs/cgroup
    [ -e $cg/cgroup.controllers ] || mount -t cgroup2 cgroup2 $cg 2>/dev/null
    grep -qw cpuset $cg/cgroup.controllers 2>/dev/null || return 1
    grep -qw cpuset $cg/cgroup.subtree_control || echo +cpuset >$cg/cgroup.subtree_control || return 1
    mkdir -p $cg/$1 $cg/$3 && echo "$2" >$cg/$1/cpuset.cpus && echo "$4" >$cg/$3/cpuset.cpus
}
# need_cpuset_v2 [PREFIX]: CG=/sys/fs/cgroup, with cgroup v2 mounted there (mounted
# now if it is not) and its cpuset controller; else SKIP, PREFIX before the reason.
need_cpuset_v2() {
    CG=/sys/fs/cgroup
    [ -e $CG/cgroup.controllers ] || mount -t cgroup2 cgroup2 $CG 2>/dev/null
    grep -qw cpuset $CG/cgroup.controllers 2>/dev/null || skip "${1:-}no cpuset controller in cgroup v2"
}
# partition_make NAME CPUS: a cgroup v2 cpuset partition (its own root domain) at
# /sys/fs/cgroup/NAME on CPUS. Non-zero, with PARTITION_ERR saying which step was
# refused, on failure; partition_remove undoes it either way.
partition_make() {
    local cg=/sys/fs/cgroup
    PARTITION_ERR=""
    echo +cpuset >$cg/cgroup.subtree_control || { PARTITION_ERR="cannot enable +cpuset"; return 1; }
    mkdir -p $cg/$1
    echo "$2" >$cg/$1/cpuset.cpus || { PARTITION_ERR="cpuset.cpus=$2 refused"; return 1; }
    echo root >$cg/$1/cpuset.cpus.partition || { PARTITION_ERR="cpuset.cpus.partition=root refused"; return 1; }
}
# partition_remove NAME: back to a member, then removed (cgroup_remove: once the tasks
# the caller killed have left).
partition_remove() {
    local cg=/sys/fs/cgroup
    if [ -d $cg/$1 ]; then
        echo member >$cg/$1/cpuset.cpus.partition 2>/dev/null
        cgroup_remove $cg/$1 || note "partition_remove: $CGROUP_ERR"
    fi
    echo -cpuset >$cg/cgroup.subtree_control 2>/dev/null
}
# kv_field KEY TEXT: the word after KEY in TEXT, one per line of TEXT that has it (the
# guest tools print "name key value key value ...").
kv_field() { echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
# start_ready READYFILE OUT CMD...: CMD in the background (pid in BG_PID, output in
# OUT); waits up to 20 s for it to create READYFILE. Non-zero, with CMD killed, if it
# did not.
start_ready() {
    local ready=$1 out=$2 i=0
    shift 2
    rm -f $ready
    "$@" >$out 2>&1 &
    BG_PID=$!
    while [ ! -e $ready ] && kill -0 $BG_PID 2>/dev/null && [ $i -lt 400 ]; do usleep 50000; i=$((i + 1)); done
    [ -e $ready ] && return 0
    kill $BG_PID 2>/dev/null; wait $BG_PID 2>/dev/null
    return 1
}
# cgroup_remove DIR...: rmdir each cgroup once its last task has left, waiting up to 5 s
# each: rmdir fails with EBUSY while cgroup.procs names a task, and a killed task's
# children outlive it (a shell loop's usleep, orphaned). cgroup.procs is read, not
# tested with -s: cgroupfs files have size 0. Non-zero, with CGROUP_ERR naming what is
# left, if one stays.
cgroup_remove() {
    local d i rc=0
    CGROUP_ERR=""
    for d in "$@"; do
        [ -d "$d" ] || continue
        i=0
        while [ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
        rmdir "$d" 2>/dev/null && continue
        CGROUP_ERR="$CGROUP_ERR${CGROUP_ERR:+; }cannot remove $d (tasks: $(tr '\n' ' ' <"$d/cgroup.procs" 2>/dev/null))"
        rc=1
    done
    return $rc
}
# hotplug_state_num NAME: the number of hotplug state NAME (e.g. sched:active) in
# cpu/hotplug/states, for cpuN/hotplug/fail; empty if the kernel has no such state.
hotplug_state_num() { sed -n "s/^ *\([0-9]*\): $1\$/\1/p" $SYS/hotplug/states 2>/dev/null | head -n1; }
# The kernel's order for a batch: SMT secondaries first (ascending), then primaries
# going down; primaries first coming up.
kernel_order() { # ACTION "CPUS"
    local s p c sec; sec=" $(smt_secondaries) "; s=""; p=""
    for c in $(union "$2"); do contains "$sec" $c && s="$s $c" || p="$p $c"; done
    if [ "$1" = offline ]; then echo $s $p; else echo $p $s; fi
}
# debugfs (sched/debug, sched/domains), mounted by init
DBG=/sys/kernel/debug
# kprobe hit counters (tracefs): kprobes_setup FUNC... ; kprobe_hits FUNC
TRACEFS=/sys/kernel/tracing
kprobes_setup() {
    local f
    [ -e $TRACEFS/kprobe_events ] || mount -t tracefs tracefs $TRACEFS 2>/dev/null
    [ -w $TRACEFS/kprobe_events ] || return 1
    for f in "$@"; do
        grep -q "^p:kprobes/cpuhpd_$f " $TRACEFS/kprobe_events 2>/dev/null && continue
        echo "p:cpuhpd_$f $f" >>$TRACEFS/kprobe_events 2>/dev/null || { note "kprobe on $f refused"; return 1; }
    done
    echo 1 >$TRACEFS/events/kprobes/enable
}
kprobe_hits() { awk -v e="cpuhpd_$1" '$1 == e { print $2 }' $TRACEFS/kprobe_profile; }
