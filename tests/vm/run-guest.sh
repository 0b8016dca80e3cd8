#!/usr/bin/env bash
# Boots a QEMU (TCG) guest with the cpuhpd test initramfs and runs scenarios in it.
#
#   tests/vm/run-guest.sh [--topology smt16|numa8] [--scenarios all|NAME,...]
#                         [--kernel PATH] [--cpuhpd PATH] [--cpuctl PATH]
#                         [--initrd PATH] [--build-dir DIR] [--timeout SEC]
#                         [--show] [--debug] [--allow-missing] [--append ARGS]
#                         [--cpu MODEL]   (default max,vendor=GenuineIntel,-monitor)
#                         [--scenario-timeout SEC]  (per scenario in the guest; default 300)
#                         [--boot-timeout SEC]  (until /init runs; default 180)
#                         [--boot-retries N]  (boots again after a boot hang; default 1
#                                              for a kernel without a System.map beside
#                                              it, i.e. Debian's, 0 for ours)
#                         [--qemu-arg ARG]...  (appended to QEMU's command line, e.g. -s for
#                                               a gdb stub to inspect a hung guest)
#
# Topologies: smt16 = 16 vCPUs, 2 sockets x 4 cores x 2 threads (smt/control on);
#             smtN  = N vCPUs (N a multiple of 4: 8, 32, 48, 64...), 2 sockets x N/4
#                     cores x 2 threads;
#             numa8 = 8 vCPUs, 2 sockets x 4 cores, no SMT, NUMA nodes 0-3 / 4-7.
# --kernel defaults to Debian's stock kernel (tests/vm/fetch-kernel.sh).
# --initrd skips building one (default: build with mkinitramfs.sh from --cpuhpd/--cpuctl).
# The serial console goes to <build-dir>/vm/<topology>/console.log (build-dir defaults
# to build/ of the repo). --show also copies it to the terminal as it comes.
# Exit status: 0 when every scenario passed or skipped and the guest printed its
# closing line; 1 on any FAIL, a missing closing line or a hung guest (timeout).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
topology=smt16
scenarios=all
kernel=""
cpuhpd="$repo/build/daemon/cpuhpd"
cpuctl="$repo/build/client/cpuctl"
initrd=""
build_dir="${CPUHPD_BUILD_DIR:-$repo/build}"
timeout_s=840
boot_timeout_s=180
boot_retries=""
show=0
debug=0
allow_missing=0
append_extra=""
qemu_extra=()
# -monitor: without MWAIT an offline x86 CPU parks in HLT (hlt_play_dead). With it,
# mwait_play_dead runs, and TCG implements MWAIT as a pause, so every offline vCPU
# spins on a host core and the whole guest slows down as CPUs go offline (jq took
# 0.5 s with all CPUs online and 4.7 s with the 8 SMT siblings offline).
cpu_model="${CPUHPD_VM_CPU:-max,vendor=GenuineIntel,-monitor}"

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --topology) topology="$2"; shift 2 ;;
    --scenarios|--scenario) scenarios="$2"; shift 2 ;;
    --kernel) kernel="$2"; shift 2 ;;
    --cpuhpd) cpuhpd="$2"; shift 2 ;;
    --cpuctl) cpuctl="$2"; shift 2 ;;
    --initrd) initrd="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --boot-timeout) boot_timeout_s="$2"; shift 2 ;;
    --boot-retries) boot_retries="$2"; shift 2 ;;
    --show) show=1; shift ;;
    --debug) debug=1; shift ;;
    --allow-missing) allow_missing=1; shift ;;
    --append) append_extra="$append_extra $2"; shift 2 ;;
    --cpu) cpu_model="$2"; shift 2 ;;
    --qemu-arg) qemu_extra+=("$2"); shift 2 ;;
    --scenario-timeout) append_extra="$append_extra cpuhpd.scenario_timeout=$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run-guest: unknown argument $1" >&2; usage ;;
    esac
done

log() { echo "run-guest: $*" >&2; }

case "$topology" in
smt16) smp=(-smp 16,sockets=2,cores=4,threads=2) ;;
smt[0-9]*)
    n=${topology#smt}
    { [[ "$n" =~ ^[0-9]+$ ]] && [ $((n % 4)) = 0 ] && [ "$n" -ge 4 ]; } ||
        { log "topology $topology: N must be a multiple of 4"; exit 2; }
    smp=(-smp "$n,sockets=2,cores=$((n / 4)),threads=2") ;;
numa8) smp=(-smp 8,sockets=2,cores=4,threads=1
             -object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=1G
             -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1) ;;
*) log "unknown topology $topology (smt16|smtN|numa8)"; exit 2 ;;
esac

outdir="$build_dir/vm/$topology"
mkdir -p "$outdir"
console="$outdir/console.log"

if [ -z "$kernel" ]; then
    kernel="$("$here/fetch-kernel.sh")" || { log "could not fetch the Debian kernel"; exit 1; }
fi
[ -r "$kernel" ] || { log "kernel $kernel not readable"; exit 1; }

if [ -z "$initrd" ]; then
    initrd="$outdir/initramfs.cpio.gz"
    mk=("$here/mkinitramfs.sh" --cpuhpd "$cpuhpd" --cpuctl "$cpuctl" --output "$initrd")
    [ "$allow_missing" = 1 ] && mk+=(--allow-missing)
    "${mk[@]}" || { log "mkinitramfs failed"; exit 1; }
fi

# The modules kernel/build.sh keeps beside a patched kernel (modules-<hash>/: rcutorture
# in the lockdep flavour) go in as a second archive, under /lib/cpuhpd-modules: the
# kernel unpacks concatenated cpio archives in order. Init loads none of them; the
# scenario that needs one does.
moddir="$(dirname "$kernel")/modules-${kernel##*/bzImage-}"
if [ -d "$moddir" ]; then
    stage="$(mktemp -d)"
    mkdir -p "$stage/lib/cpuhpd-modules"
    cp "$moddir"/*.ko "$stage/lib/cpuhpd-modules/"
    with_modules="$outdir/initramfs+modules.cpio.gz"
    { cat "$initrd"; (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1); } \
        >"$with_modules"
    rm -rf "$stage"
    log "modules from $moddir: $(cd "$moddir" && echo *.ko)"
    initrd="$with_modules"
fi

# No "quiet": should a boot hang, the console shows how far the kernel came. /init turns
# the console down to warnings before the scenarios run.
# no_timer_check: under TCG on a busy host the kernel's IO-APIC timer check can miss its
# ticks and panic at boot ("IO-APIC + timer doesn't work!", seen here with two builds and
# two guests on 2 cores); virtual machines' kernels are booted with it for that reason.
# log_buf_len: the test kernels are built with a 128 KiB log, which 180 batches of the
# CPU on/offline lines overwrite; a scenario that counts splat lines in dmesg before and
# after (bulk-attach, lockdep-stress) must not lose one that scrolled out of the buffer.
append="console=ttyS0 panic=-1 sysrq_always_enabled no_timer_check log_buf_len=8M cpuhpd.scenarios=$scenarios"
[ "$debug" = 1 ] && append="$append cpuhpd.debug=1"
[ -n "${append_extra# }" ] && append="$append ${append_extra# }"

# The monitor on a socket of its own (the console stays on stdio) for hang-dump.sh, in a
# short temporary directory: a unix socket path has at most 107 bytes.
sockdir="$(mktemp -d /tmp/cpuhpd-qemu.XXXXXX)"
trap 'rm -rf "$sockdir"' EXIT
monitor="$sockdir/monitor.sock"
# debug-threads names each vCPU thread "CPU N/TCG" and the pidfile gives the host-side
# halt check (watch_halt below) QEMU's pid.
qemu_pidfile="$sockdir/qemu.pid"
cmd=(qemu-system-x86_64 -accel tcg,thread=multi -cpu "$cpu_model" -m 2G
     "${smp[@]}" -nographic -no-reboot -kernel "$kernel" -initrd "$initrd" -append "$append"
     -name "cpuhpd-$topology,debug-threads=on" -pidfile "$qemu_pidfile"
     -monitor "unix:$monitor,server=on,wait=off" "${qemu_extra[@]}")
log "kernel $kernel"
log "console log $console"
log "${cmd[*]}"

# A stall, a lockup or a guest about to be killed for its time: record where every vCPU
# is, twice, 15 s apart (are they moving?), in $outdir/hang.txt. The System.map is the
# one kernel/build.sh keeps beside a patched kernel's bzImage; the stock kernel has none
# (addresses only).
hang_report="$outdir/hang.txt"

# One guest at a time on this machine: two TCG guests on 2 cores slow each other down,
# skew every timing and make stalls likely. Wait for any other run-guest.sh (a test, the
# demo or a benchmark) to finish first.
lockfile="${CPUHPD_CACHE:-/var/cache/cpuhpd}/qemu.lock"
mkdir -p "$(dirname "$lockfile")"
exec 8>"$lockfile"
if ! flock -n 8; then
    log "another QEMU guest holds $lockfile; waiting for it"
    flock 8
fi
system_map="$(dirname "$kernel")/System.map-${kernel##*/bzImage-}"
[ -r "$system_map" ] || system_map=""
# A kernel that kernel/build.sh made (it has a System.map beside it) is under test itself:
# a hang at its boot is a failure. A kernel of someone else's (Debian's) that hangs before
# our /init ran has not run any of our code yet: boot it once more, and say so.
if [ -z "$boot_retries" ]; then
    if [ -n "$system_map" ]; then boot_retries=0; else boot_retries=1; fi
fi

# Sends HMP commands to QEMU's monitor, one per argument, 2 s apart.
monitor_send() {
    { for c in "$@"; do printf '%s\n' "$c"; sleep 2; done; } |
        timeout 30 socat - "UNIX-CONNECT:$monitor" >/dev/null 2>&1 || true
}

# The boot watchdog: a guest whose console has no "init reached" line boot_timeout_s
# after QEMU started is stuck in the kernel's boot. The magic SysRq keys (the command
# line has sysrq_always_enabled) print the blocked tasks, every CPU's backtrace and
# every task's stack on the console; then QEMU is told to quit and $outdir/boot-hang
# marks the attempt.
watch_for_hang() {
    local start_s deadline boot_deadline why="" stall_seen=0
    start_s=$(date +%s)
    deadline=$(( start_s + timeout_s - 40 ))
    boot_deadline=$(( start_s + boot_timeout_s ))
    while sleep 5; do
        if [ "$stall_seen" = 0 ] &&
            grep -aqE 'detected stalls|self-detected stall|soft lockup|hard LOCKUP|blocked for more than' \
            "$console" 2>/dev/null; then
            why="the console reports a stall or lockup"
            stall_seen=1
        elif [ "$(date +%s)" -ge "$boot_deadline" ] &&
            ! grep -aq 'CPUHPD-VM: init reached' "$console" 2>/dev/null; then
            why="the guest did not reach /init within $boot_timeout_s s (boot hang)"
        elif [ "$(date +%s)" -ge "$deadline" ]; then
            why="the guest is about to be killed for its time"
        else
            continue
        fi
        {
            echo "== $why; vCPUs at $(date +%T):"
            "$here/hang-dump.sh" "$monitor" "$system_map" 2>&1 || true
            sleep 15
            echo "== vCPUs at $(date +%T):"
            "$here/hang-dump.sh" "$monitor" "$system_map" 2>&1 || true
        } >>"$hang_report"
        case "$why" in
        *"stall or lockup"*)
            # A lockup before /init (seen: Debian's 6.1 with 16 vCPUs on a loaded host, an
            # IPI from text_poke never answered) is a boot hang: keep watching, so that the
            # boot deadline below stops this boot and retries it.
            if ! grep -aq 'CPUHPD-VM: init reached' "$console"; then
                continue
            fi
            ;;
        *"boot hang"*)
            if grep -aq 'CPUHPD-VM: init reached' "$console"; then
                # Slow, not stuck: /init came while the vCPUs were being dumped.
                [ "$stall_seen" = 1 ] || rm -f "$hang_report"
                boot_deadline=$(( deadline + 1 ))
                continue
            fi
            monitor_send "sendkey alt-sysrq-w" "sendkey alt-sysrq-l" "sendkey alt-sysrq-t"
            sleep 10
            echo "$why" >"$outdir/boot-hang"
            monitor_send quit
            ;;
        esac
        return 0
    done
}

# The host-side halt check. A scenario that calls halt_check (lib.sh) prints
# "CPUHPD-HALT-CHECK NAME offline=LIST end" and then keeps the guest idle for
# HALT_WAIT s; here every vCPU thread's CPU time (utime+stime of "CPU N/TCG" in
# /proc/QEMU_PID/task/*/stat) is sampled twice, halt_window_s apart, and every vCPU
# that is offline in the guest must have used less than halt_max_pct of a host CPU: an
# offline CPU parks in hlt_play_dead() and its vCPU thread sleeps, while a CPU that was
# left running kernel code (e.g. spinning in cpuhp_ap_sync_alive()) burns host time.
# One "HALT-CHECK NAME PASS|FAIL ..." line per request in $outdir/halt.txt.
halt_report="$outdir/halt.txt"
halt_window_s=4
halt_max_pct=5
# vcpu_ticks PID: "N TICKS" per vCPU thread, TICKS = utime + stime (clock ticks).
vcpu_ticks() {
    local t comm n
    for t in /proc/"$1"/task/*; do
        read -r comm <"$t/comm" 2>/dev/null || continue
        case "$comm" in "CPU "*/TCG) ;; *) continue ;; esac
        n=${comm#CPU }
        n=${n%/TCG}
        awk -v n="$n" '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print n, f[12] + f[13] }' \
            "$t/stat" 2>/dev/null || true
    done
}
watch_halt() {
    local seen=0 total line name off pid t0 t1 hz
    hz=$(getconf CLK_TCK)
    while sleep 0.5; do
        total=$(grep -acE 'CPUHPD-HALT-CHECK [^ ]+ offline=[^ ]+ end' "$console" 2>/dev/null) || total=0
        while [ "$seen" -lt "$total" ]; do
            seen=$((seen + 1))
            line=$(grep -aE 'CPUHPD-HALT-CHECK [^ ]+ offline=[^ ]+ end' "$console" |
                sed -n "${seen}p" | tr -d '\r')
            line=${line#*CPUHPD-HALT-CHECK }
            name=${line%% *}
            off=${line#* offline=}
            off=${off%% *}
            pid=$(cat "$qemu_pidfile" 2>/dev/null || true)
            if [ -z "$pid" ] || [ ! -d "/proc/$pid/task" ]; then
                echo "HALT-CHECK $name FAIL: QEMU's pid is unknown, nothing measured" >>"$halt_report"
                continue
            fi
            t0=$(vcpu_ticks "$pid")
            sleep "$halt_window_s"
            t1=$(vcpu_ticks "$pid")
            awk -v name="$name" -v off="$off" -v hz="$hz" -v w="$halt_window_s" \
                -v max="$halt_max_pct" -v t0="$t0" -v t1="$t1" '
                BEGIN {
                    n = split(t0, a, "\n"); for (i = 1; i <= n; i++) { split(a[i], f, " "); b[f[1]] = f[2] }
                    n = split(t1, a, "\n"); for (i = 1; i <= n; i++) { split(a[i], f, " "); e[f[1]] = f[2] }
                    if (off != "none") {
                        n = split(off, p, ",")
                        for (i = 1; i <= n; i++) {
                            if (split(p[i], r, "-") == 1) r[2] = r[1]
                            for (c = r[1] + 0; c <= r[2] + 0; c++) o[c] = 1
                        }
                    }
                    bad = ""; offs = ""; ons = ""; nvcpu = 0
                    for (c = 0; c < 4096; c++) {
                        if (!(c in b) || !(c in e)) continue
                        nvcpu++
                        pct = int((e[c] - b[c]) * 100 / (hz * w) + 0.5)
                        if (c in o) { offs = offs " cpu" c "=" pct "%"; if (pct >= max) bad = bad " cpu" c "=" pct "%" }
                        else ons = ons " cpu" c "=" pct "%"
                    }
                    if (nvcpu == 0) { print "HALT-CHECK " name " FAIL: no \"CPU N/TCG\" threads found"; exit }
                    if (bad == "") { verdict = "PASS"; msg = "every offline vCPU halted (< " max "% of a host CPU)" }
                    else { verdict = "FAIL"; msg = "offline vCPUs running (>= " max "% of a host CPU):" bad }
                    if (offs == "") offs = " none"
                    printf "HALT-CHECK %s %s: offline {%s}, %d s: %s\n", name, verdict, off, w, msg
                    printf "HALT-CHECK %s   offline vCPUs:%s\n", name, offs
                    printf "HALT-CHECK %s   online vCPUs:%s\n", name, ons
                }' >>"$halt_report"
        done
    done
}

# Boots the guest once: sets qrc (QEMU's exit status) and elapsed (seconds).
boot_guest() {
    local watcher halt_watcher start_s
    rm -f "$hang_report" "$outdir/boot-hang" "$halt_report" "$qemu_pidfile"
    watch_for_hang &
    watcher=$!
    watch_halt &
    halt_watcher=$!
    start_s=$(date +%s)
    set +e
    if [ "$show" = 1 ]; then
        # The terminal gets the console without the kernel's boot messages (console.log
        # keeps them).
        timeout -k 10 "$timeout_s" "${cmd[@]}" </dev/null 2>&1 | tee "$console" |
            awk '{ sub(/\r$/, ""); gsub(/\033\[[0-9;?]*[a-zA-Z]/, ""); gsub(/\033c/, "")
                   if (!booted && /^\[ *[0-9]+\.[0-9]+\] /) next
                   if (/CPUHPD-VM: init reached/) booted = 1
                   print; fflush() }'
        qrc=${PIPESTATUS[0]}
    else
        timeout -k 10 "$timeout_s" "${cmd[@]}" </dev/null >"$console" 2>&1
        qrc=$?
    fi
    set -e
    kill "$watcher" "$halt_watcher" 2>/dev/null || true
    wait "$watcher" "$halt_watcher" 2>/dev/null || true
    elapsed=$(( $(date +%s) - start_s ))
}

rm -f "$outdir"/console.boot-hang-*.log "$outdir"/hang.boot-hang-*.txt
boot_guest
attempt=1
while [ -e "$outdir/boot-hang" ] && [ "$attempt" -le "$boot_retries" ]; do
    hung_console="$outdir/console.boot-hang-$attempt.log"
    mv "$console" "$hung_console"
    mv "$hang_report" "$outdir/hang.boot-hang-$attempt.txt"
    log "BOOT HANG: $(cat "$outdir/boot-hang") with kernel $kernel, before our /init ran;" \
        "its console ($hung_console, last 80 lines) and vCPUs ($outdir/hang.boot-hang-$attempt.txt) follow"
    tail -n 80 "$hung_console" | sed -e 's/\r$//' >&2
    cat "$outdir/hang.boot-hang-$attempt.txt" >&2
    log "booting again (attempt $((attempt + 1)); --boot-retries $boot_retries)"
    attempt=$((attempt + 1))
    boot_guest
done

# The serial console has CRLF line ends.
clean="$outdir/console.clean.log"
sed -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' <"$console" >"$clean"

status=0
if [ -e "$outdir/boot-hang" ]; then
    log "BOOT HANG: $(cat "$outdir/boot-hang") (kernel $kernel; no boots left)"
    status=1
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
    log "TIMEOUT: the guest did not finish within $timeout_s s (hung guest)"
    status=1
elif [ "$qrc" != 0 ]; then
    log "qemu exited with status $qrc"
    status=1
fi

echo "---- $topology: scenario results (${elapsed} s wall)"
grep -aE '^SCENARIO [^ ]+ (PASS|FAIL|SKIP)' "$clean" || echo "(no scenario result lines)"
grep -aE '^CPUHPD-VM: init reached' "$clean" || true
# The first kernel report of the run (lib.sh's KERNEL_SPLAT at a line's start), in short,
# here where a log cut short (CI) still shows it: its head, then for a lockdep report each
# recorded dependency "-> #N (lock)" with the first frames below lockdep's own, and the
# locks held; for any other, the first frames of its call trace.
splat_pat=$(sed -n "s/^KERNEL_SPLAT='\(.*\)'$/\1/p" "$here/scenarios/lib.sh")
first_report=$(grep -anE "^($splat_pat)" "$clean" | head -n1 | cut -d: -f1 || true)
if [ -n "$splat_pat" ] && [ -n "$first_report" ]; then
    echo "---- $topology: the first kernel report, in short (console line $first_report)"
    tail -n +"$first_report" "$clean" | head -n 400 | awk '
        NR <= 14 { if (NF) print; next }
        /Call Trace:/ { print; trace = 1; frames = 0; next }
        trace && frames < 12 && /^ +[a-z_?]/ { print; frames++ }
        /^-> #|^Chain exists of|-->|^ *(lock|rlock|wlock)\(|^ *\*\*\* DEADLOCK|^ #[0-9]+:/ { print; frames = 0; dep = /^-> #/; next }
        dep && frames < 8 && /^ +[a-z_][a-zA-Z0-9_.]*\+0x/ && !/lock_acquire|lockdep|validate_chain|check_prev|check_noncircular/ { print; frames++ }
        /^stack backtrace:|end trace/ { exit }' || true
fi
# Tables some scenarios print as notes (bulk-counts: COUNT and TIME lines).
if grep -aqE '^ *# (COUNT|TIME) ' "$clean"; then
    echo "---- $topology: counts and timings"
    grep -aE '^ *# (COUNT|TIME) ' "$clean" | sed 's/^ *# //'
fi
# The host-side halt checks: one verdict per request, every one a PASS.
nhalt=$(grep -acE 'CPUHPD-HALT-CHECK [^ ]+ offline=[^ ]+ end' "$clean" || true)
if [ "$nhalt" -gt 0 ]; then
    echo "---- $topology: host-side halt checks ($nhalt requested)"
    [ -f "$halt_report" ] && cat "$halt_report"
    nverdict=$(grep -acE '^HALT-CHECK [^ ]+ (PASS|FAIL)' "$halt_report" 2>/dev/null || true)
    if [ "$nverdict" != "$nhalt" ]; then
        log "HALT-CHECK: $nhalt requested by the guest, $nverdict measured"
        status=1
    fi
    grep -qE '^HALT-CHECK [^ ]+ FAIL' "$halt_report" 2>/dev/null && status=1
fi
summary="$(grep -aE '^CPUHPD-VM: [0-9]+ passed, [0-9]+ failed' "$clean" | tail -n1 || true)"
nfail_lines=$(grep -acE '^SCENARIO [^ ]+ FAIL' "$clean" || true)
if [ -z "$summary" ]; then
    log "no closing 'N passed, N failed' line: the guest did not finish its scenarios"
    status=1
else
    echo "$summary"
    nfailed=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    [ "$nfailed" = 0 ] || status=1
fi
[ "$nfail_lines" = 0 ] || status=1

if [ -s "$hang_report" ]; then
    echo "---- $topology: where the vCPUs were ($hang_report)"
    cat "$hang_report"
fi
if [ "$status" != 0 ]; then
    echo "---- tail of $console"
    tail -n 60 "$clean"
    echo "---- $topology: FAILED (full console log: $console)"
else
    echo "---- $topology: OK (console log: $console)"
fi
exit $status
