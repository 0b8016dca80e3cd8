# Sourced by shell scripts that run cpuhpd against a fake sysfs tree (bench/fixed-cost.sh,
# tests/cockpit/page-test.sh). make_fake_sysfs SYS N writes under SYS an x86-numbered
# machine of N CPUs (N a multiple of 4): 2 packages, N/4 cores each, 2 threads a core,
# thread t of core i is i + t * N/2; cpu0 without an online file; every CPU online, SMT on;
# the summary lists read-only, so that the daemon writes cpuN/online (strategy per-cpu).
make_fake_sysfs() {
    local sys=$1 n=$2 cores=$(($2 / 2)) per=$(($2 / 4)) cpu c core
    cpu=$sys/devices/system/cpu
    mkdir -p "$cpu" "$sys/kernel" "$sys/devices/system/node"
    for c in $(seq 0 $((n - 1))); do
        core=$((c % cores))
        mkdir -p "$cpu/cpu$c/topology"
        [ "$c" -eq 0 ] || echo 1 >"$cpu/cpu$c/online"
        echo $((core / per)) >"$cpu/cpu$c/topology/physical_package_id"
        echo 0 >"$cpu/cpu$c/topology/die_id"
        echo $((core % per)) >"$cpu/cpu$c/topology/core_id"
        echo "$core,$((core + cores))" >"$cpu/cpu$c/topology/thread_siblings_list"
        echo "$core,$((core + cores))" >"$cpu/cpu$c/topology/core_cpus_list"
    done
    for c in 0 1; do
        mkdir -p "$sys/devices/system/node/node$c"
        echo "$((c * per))-$((c * per + per - 1)),$((c * per + cores))-$((c * per + cores + per - 1))" \
            >"$sys/devices/system/node/node$c/cpulist"
    done
    echo "0-$((n - 1))" >"$cpu/possible"
    echo "0-$((n - 1))" >"$cpu/present"
    echo "0-$((n - 1))" >"$cpu/online"
    echo >"$cpu/offline"
    echo 8191 >"$cpu/kernel_max"
    mkdir -p "$cpu/smt"
    echo on >"$cpu/smt/control"
    echo 1 >"$cpu/smt/active"
    echo 0 >"$sys/kernel/rcu_expedited"
    chmod 0444 "$cpu/possible" "$cpu/present" "$cpu/online" "$cpu/offline" "$cpu/kernel_max"
}
