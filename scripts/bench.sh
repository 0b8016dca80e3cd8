#!/usr/bin/env bash
# The side-by-side benchmark: boots one QEMU (TCG) guest per kernel and size, runs every
# hotplug method in it (tests/vm/guest/bench.sh), measures the daemon itself on the host
# (bench/daemon-bench.sh), and writes raw samples, a markdown report and PNG plots.
#
#   scripts/bench.sh [--quick] [--large] [OPTIONS]
#
#   --quick              smoke run (a few minutes): stock kernel, 8 vCPUs, 1 repetition,
#                        no extra cgroups, short daemon figures; asserts no timing.
#                        Output defaults to <build>/bench-quick/ (not the source tree)
#   --large              add 48 and 64 vCPUs (hours under TCG)
#   --vcpus LIST         guest sizes (default 8,16,32; multiples of 4; 2 packages, SMT)
#   --reps N             timed repetitions per cell (default 5)
#   --configs LIST       cg0,part,cgN,cgNtM (default cg0,part,cg2000): no extra cgroups;
#                        an empty cpuset partition on the last package; N cpu cgroups;
#                        those and M sleeping tasks spread over them
#   --workloads LIST     all,pkg,smt (default all three): every AP, the last package, the
#                        SMT siblings
#   --methods LIST       guest methods (default all that apply): loop,loop-exp,chcpu,
#                        smt-control,cpuctl-per-cpu,cpuctl-smt,cpuctl-bulk,direct
#   --kernel-stock PATH  stock kernel image (default: tests/vm/fetch-kernel.sh)
#   --kernel-patched PATH  a patched kernel (repeatable; default: the 6.1 and 6.12 images
#                        kernel/build.sh --base B --print-path names, if built; never builds)
#   --no-stock | --no-patched | --no-guests | --no-daemon   leave a part out
#   --guest-timeout SEC  per guest (default grows with size, reps and configurations)
#   --out DIR            output directory (default bench/results/<date>)
#   --append             add to the CSV files already in --out (e.g. a 32-vCPU run with
#                        fewer repetitions beside a full 8/16 run) instead of starting anew
#   --report-only DIR    only (re)write the report and plots of an earlier run
#   --build DIR          build directory (default $CPUHPD_BUILD_DIR or build/)
#   --no-build           use the binaries already in --build (the ctest smoke test does)
#
# Guests run one at a time: run-guest.sh holds ${CPUHPD_CACHE:-/var/cache/cpuhpd}/qemu.lock.
# Output: samples.csv, phases.csv, phasewall.csv, rebuilds.csv, states.csv, info.csv, daemon.csv,
# daemonphases.csv (where cpuctl's batches went in the daemon), client.csv (cpuctl calls that
# change nothing: what the client and the call cost without a batch),
# meta.txt, raw/ (console logs), report.md and *.png. Exit status 1 if a guest failed
# (hung, a method erred or left the wrong CPUs online) or nothing was measured.
set -euo pipefail
main() {
    here=$(cd "$(dirname "$0")/.." && pwd)
    build=${CPUHPD_BUILD_DIR:-$here/build}
    export CPUHPD_CACHE=${CPUHPD_CACHE:-/var/cache/cpuhpd}

    command_line="scripts/bench.sh $*"
    quick=0 large=0 vcpus="" reps="" configs="" methods="" workloads="" out="" guest_timeout=""
    append_run=0 do_build=1 kernel_stock="" patched=() do_stock=1 do_patched=1 do_guests=1 do_daemon=1 report_only=""
    usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
    while [ $# -gt 0 ]; do
        case "$1" in
        --quick) quick=1; shift ;;
        --large) large=1; shift ;;
        --vcpus) vcpus="$2"; shift 2 ;;
        --reps) reps="$2"; shift 2 ;;
        --configs) configs="$2"; shift 2 ;;
        --methods) methods="$2"; shift 2 ;;
        --workloads) workloads="$2"; shift 2 ;;
        --kernel-stock) kernel_stock="$2"; shift 2 ;;
        --kernel-patched) patched+=("$2"); shift 2 ;;
        --no-stock) do_stock=0; shift ;;
        --no-patched) do_patched=0; shift ;;
        --no-guests) do_guests=0; shift ;;
        --no-daemon) do_daemon=0; shift ;;
        --guest-timeout) guest_timeout="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --append) append_run=1; shift ;;
        --build) build="$2"; shift 2 ;;
        --no-build) do_build=0; shift ;;
        --report-only) report_only="$2"; shift 2 ;;
        -h|--help) usage 0 ;;
        *) echo "bench: unknown argument $1" >&2; usage 2 ;;
        esac
    done

    log() { echo "bench: $*" >&2; }
    die() { log "error: $*"; exit 1; }

    if [ -n "$report_only" ]; then
        exec /usr/bin/python3 "$here/bench/report.py" "$report_only"
    fi

    if [ "$quick" = 1 ]; then
        : "${vcpus:=8}" "${reps:=1}" "${configs:=cg0}"
        do_patched=0
        out=${out:-$build/bench-quick/$(date +%Y-%m-%d)}
    else
        : "${vcpus:=8,16,32}" "${reps:=5}" "${configs:=cg0,part,cg2000}"
        [ "$large" = 1 ] && vcpus="$vcpus,48,64"
        out=${out:-$here/bench/results/$(date +%Y-%m-%d)}
    fi
    rebuild_reps=5
    [ "$quick" = 1 ] && rebuild_reps=2

    "$here/scripts/install-deps.sh"
    if [ "$do_build" = 1 ]; then
        log "building cpuhpd, cpuctl and the daemon benchmark (Release) in $build"
        cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
        targets=(cpuhpd cpuctl)
        [ "$do_daemon" = 1 ] && targets+=(cpuhpd-bench)
        ninja -C "$build" "${targets[@]}" >/dev/null
    fi
    for b in daemon/cpuhpd client/cpuctl; do
        [ -x "$build/$b" ] || die "$build/$b is not built"
    done

    mkdir -p "$out/raw"
    samples="$out/samples.csv" phases="$out/phases.csv" phasewall="$out/phasewall.csv"
    rebuilds="$out/rebuilds.csv" infos="$out/info.csv"
    # csv_header FILE HEADER: a new file with its header (kept with --append)
    csv_header() { [ "$append_run" = 1 ] && [ -s "$1" ] || echo "$2" >"$1"; }
    csv_header "$samples" "kernel,vcpus,config,workload,method,action,rep,ncpus,ms,status,rebuilds,synchronize_rcu,synchronize_rcu_expedited,stop_machine,stop_machine_cpuslocked"
    csv_header "$phases" "kernel,vcpus,config,workload,method,action,step,callback,incl_ns,excl_ns,calls"
    csv_header "$phasewall" "kernel,vcpus,config,workload,method,action,ncpus,ms,rebuild_ns,rebuilds,states_ns"
    csv_header "$out/states.csv" "kernel,vcpus,step,state"
    csv_header "$rebuilds" "kernel,vcpus,config,online_cpus,cgroups,ns"
    csv_header "$infos" "kernel,vcpus,key,value"
    csv_header "$out/daemonphases.csv" "kernel,vcpus,config,workload,method,action,rep,phase,us"
    csv_header "$out/client.csv" "kernel,vcpus,config,what,rep,ms,queued_us"
    [ "$append_run" = 1 ] || : >"$out/meta.txt"
    {
        echo "---- run"
        echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "command: $command_line"
        echo "settings: vcpus $vcpus, reps $reps, configs $configs${methods:+, methods $methods}${workloads:+, workloads $workloads}"
        echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet 2>/dev/null || echo ' (dirty)')"
        echo "host: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r), $(qemu-system-x86_64 --version | head -n1)"
        echo "host load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >>"$out/meta.txt"

    # ---------------------------------------------------------------- kernels
    kernels=()  # "label=path"
    if [ "$do_guests" = 1 ] && [ "$do_stock" = 1 ]; then
        [ -n "$kernel_stock" ] || kernel_stock="$("$here/tests/vm/fetch-kernel.sh")" ||
            die "could not fetch Debian's stock kernel (tests/vm/fetch-kernel.sh)"
        kernels+=("stock-$(basename "$kernel_stock" | sed 's/^vmlinuz-//')=$kernel_stock")
    fi
    if [ "$do_guests" = 1 ] && [ "$do_patched" = 1 ]; then
        if [ ${#patched[@]} -eq 0 ]; then
            for base in 6.1 6.12; do
                if p="$("$here/kernel/build.sh" --base $base --print-path 2>/dev/null)"; then
                    patched+=("$p")
                else
                    log "the patched $base kernel is not built (kernel/build.sh --base $base --print-path: $p); leaving it out"
                    log "(build it with tests/vm/patched-kernel.sh --base $base, or pass --kernel-patched PATH)"
                    echo "patched $base kernel: not built ($p)" >>"$out/meta.txt"
                fi
            done
        fi
        for p in "${patched[@]}"; do
            [ -r "$p" ] || die "patched kernel $p not readable"
            kernels+=("patched-$(basename "$p" | sed 's/^bzImage-//')=$p")
        done
    fi
    for k in "${kernels[@]}"; do echo "kernel ${k%%=*}: ${k#*=}" >>"$out/meta.txt"; done

    # ---------------------------------------------------------------- guests
    failed=0
    if [ "$do_guests" = 1 ] && [ ${#kernels[@]} -gt 0 ]; then
        initrd="$build/bench/initramfs.cpio.gz"
        "$here/tests/vm/mkinitramfs.sh" --cpuhpd "$build/daemon/cpuhpd" --cpuctl "$build/client/cpuctl" \
            --output "$initrd"
        nconf=$(echo "$configs" | tr ',' '\n' | grep -c .)
        lock="$CPUHPD_CACHE/qemu.lock"
        mkdir -p "$CPUHPD_CACHE"
        append="cpuhpd.bench_reps=$reps cpuhpd.bench_configs=$configs cpuhpd.bench_rebuild_reps=$rebuild_reps"
        [ -n "$methods" ] && append="$append cpuhpd.bench_methods=$methods"
        [ -n "$workloads" ] && append="$append cpuhpd.bench_workloads=$workloads"
        for k in "${kernels[@]}"; do
            label=${k%%=*} image=${k#*=}
            for n in $(echo "$vcpus" | tr ',' ' '); do
                # TCG: a batch's time grows about with the square of the vCPUs (64: ~60 s a way).
                t=${guest_timeout:-$(( 900 + reps * nconf * n * n / 2 ))}
                name="$label-$n"
                # --append: keep the console logs of an earlier guest of the same size.
                [ -e "$out/raw/$name.console.log" ] && name="$name-$(date +%H%M%S)"
                log "guest $name: $n vCPUs, $reps reps, configs $configs (timeout $t s; load $(cut -d' ' -f1-3 /proc/loadavg))"
                # run-guest.sh takes $lock itself (one guest at a time on the machine).
                flock -n "$lock" true 2>/dev/null || log "waiting for $lock (another guest is running)"
                start=$(date +%s)
                set +e
                "$here/tests/vm/run-guest.sh" --topology "smt$n" --kernel "$image" \
                    --initrd "$initrd" --build-dir "$build/bench/$name" --scenarios bench \
                    --scenario-timeout "$((t - 60))" --timeout "$t" --append "$append" \
                    >"$out/raw/$name.run.log" 2>&1
                rc=$?
                set -e
                cp "$build/bench/$name/vm/smt$n/console.clean.log" "$out/raw/$name.console.log" 2>/dev/null || true
                echo "guest $name: exit $rc, $(sed -n 's/.*scenario results (\([0-9]*\) s wall).*/\1/p' "$out/raw/$name.run.log" | head -n1) s in the guest, $(( $(date +%s) - start )) s with the wait for the lock, host load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
                if [ "$rc" != 0 ]; then
                    failed=1
                    log "guest $name FAILED (exit $rc): $out/raw/$name.run.log"
                    tail -n 30 "$out/raw/$name.run.log" >&2 || true
                fi
                collect_guest "$label" "$n" "$out/raw/$name.console.log"
            done
        done
    fi

    # ---------------------------------------------------------------- the daemon itself
    if [ "$do_daemon" = 1 ]; then
        dargs=(--build "$build" --out "$out/daemon.csv")
        [ "$do_build" = 1 ] || echo "daemon figures: binaries of $build as they are (maybe a sanitizer build)" >>"$out/meta.txt"
        [ "$quick" = 1 ] && dargs+=(--quick)
        "$here/bench/daemon-bench.sh" "${dargs[@]}" || { failed=1; log "daemon benchmark FAILED"; }
    fi

    echo "host load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
    /usr/bin/python3 "$here/bench/report.py" "$out" || { failed=1; log "report FAILED"; }
    nsamples=$(($(wc -l <"$samples") - 1))
    if [ "$do_guests" = 1 ] && [ ${#kernels[@]} -gt 0 ] && [ "$nsamples" -le 0 ]; then
        log "no guest samples were recorded"; failed=1
    fi
    log "wrote $out/report.md ($nsamples guest samples)"
    exit $failed
}

# collect_guest LABEL VCPUS CONSOLE: appends a guest's BENCH-* console lines to the CSV
# files in $out, each prefixed with the kernel label and the guest size.
collect_guest() {
    local label=$1 n=$2 con=$3 kind file
    [ -r "$con" ] || return 0
    for kind in SAMPLE:samples PHASE:phases PHASEWALL:phasewall REBUILD:rebuilds STATE:states INFO:info \
        DAEMONPHASE:daemonphases CLIENT:client; do
        file="$out/${kind#*:}.csv"
        grep -a "^BENCH-${kind%%:*}," "$con" | sed "s/^BENCH-${kind%%:*},/$label,$n,/" >>"$file" || true
    done
    grep -a '^BENCH-ERROR' "$con" >&2 || true
    log "guest $label-$n: $(grep -ac '^BENCH-SAMPLE,\([^,]*,\)\{7\}ok' "$con") samples ok, $(grep -ac '^BENCH-ERROR' "$con") errors"
}

# The whole script is read before it runs (editing it during a long run is safe).
main "$@"
