#!/bin/sh
# bulk-cpuset: a cgroup v2 cpuset partition on the last package; one batch write of
# its CPUs to cpu/offline, then to cpu/online. The partition's state
# (cpuset.cpus.partition), its effective CPUs, its task's affinity and the sched
# domains (debugfs sched/domains/cpuN/domainM/name) are read IMMEDIATELY after each
# write returns - no polling: the patched kernel does its one cpuset update and waits
# for it inside the write. Run twice: with a task in the partition (it goes
# "root invalid (...hotplug)" and falls back to the parent's CPUs, then is valid
# again) and empty (a valid empty partition stays "root" with no effective CPUs).
. /cpuhpd-tests/lib.sh
need_bulk_kernel
assert_all_online "start"
need_cpuset_v2
[ $(count $(packages)) -ge 2 ] || skip "needs 2 packages"
PK=$(last $(packages))
B=$(cpus_of_pkg $PK)
BL=$(compress $B)
REST=$(minus "$PRESENT" "$B")
SD=$DBG/sched/domains
# 6.12 shows sched/domains only while sched/verbose is on (6.1 always): on for the run
if [ ! -d $SD/cpu0 ] && [ -w $DBG/sched/verbose ]; then
    echo Y >$DBG/sched/verbose && trap "echo N >$DBG/sched/verbose" EXIT
fi
have_sd=0; [ -d $SD/cpu0 ] && have_sd=1
[ $have_sd = 1 ] || note "no $SD (needs SCHED_DEBUG + DEBUG_FS): sched domains NOT checked, only the cpuset files"

# domains CPU -> "SMT MC ..." (names of cpuN's domains, lowest first; "" if none)
domains() { awk -v d="$SD/cpu$1" 'BEGIN { for (i = 0; i < 16; i++) { f = d "/domain" i "/name"
    if ((getline n < f) <= 0) break; close(f); o = o (o == "" ? "" : " ") n } print o }'; }
# all_domains: "cpu:NAME,NAME cpu:..." for every present CPU
all_domains() { local c o=""; for c in $PRESENT; do o="$o $c:$(domains $c | tr ' ' ,)"; done; echo $o; }
dom_of() { local e; for e in $1; do [ "${e%%:*}" = "$2" ] && echo "${e#*:}"; done; }

if [ $have_sd = 1 ]; then
    D_ALL=$(all_domains)
    note "domains without a partition: $D_ALL"
fi

part_cleanup() {
    [ -n "$TASK" ] && { kill $TASK 2>/dev/null; wait $TASK 2>/dev/null; }; TASK=""
    partition_remove p
}
cpuset_fail() { part_cleanup; fail "$@"; }

# write_and_read offline|online: writes the package to cpu/offline or cpu/online and
# reads, at once, the partition state (part), its effective CPUs (eff), the root's
# (reff), the task's affinity (aff) and the sched domains (D_NOW).
write_and_read() {
    kwrite $SYS/$1 "$BL"
    part=$(rd $CG/p/cpuset.cpus.partition); eff=$(rd $CG/p/cpuset.cpus.effective)
    reff=$(rd $CG/cpuset.cpus.effective)
    [ -n "$TASK" ] && aff=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$TASK/status)
    D_NOW=""; [ $have_sd = 1 ] && D_NOW=$(all_domains)
    [ "$KW" = ok ] || cpuset_fail "$label: write $BL > $1: $KW"
}

run_case() { # populated(1|0)
    local pop=$1 label part eff aff d c
    label=$([ $pop = 1 ] && echo "with a task" || echo "empty")
    echo "-- partition on {$BL}, $label"
    partition_make p "$BL" || cpuset_fail "$PARTITION_ERR"
    TASK=""
    if [ $pop = 1 ]; then
        sleep 100000 & TASK=$!
        echo $TASK >$CG/p/cgroup.procs || cpuset_fail "cannot move a task into the partition"
    fi
    assert_eq "$(rd $CG/p/cpuset.cpus.partition)" root "$label: partition before"
    assert_eq "$(rd $CG/p/cpuset.cpus.effective)" "$BL" "$label: effective before"
    if [ $have_sd = 1 ]; then
        D_PART=$(all_domains)
        note "domains with the partition: $D_PART"
        for c in $PRESENT; do
            d=$(dom_of "$D_PART" $c); a=$(dom_of "$D_ALL" $c)
            [ -n "$d" ] || cpuset_fail "cpu$c has no sched domain with the partition"
            case "$a" in "$d",*) ;; *) cpuset_fail "cpu$c: domains with the partition ($d) are not a strict prefix of those without ($a): the partition did not cut the cross-package level" ;; esac
        done
        echo "  ok: every CPU lost its cross-package domain level"
    fi

    # --- offline: read everything at once
    write_and_read offline
    D_OFF=$D_NOW
    note "right after offline: partition='$part' effective='$eff' root effective='$reff' task affinity='$aff'"
    assert_offline_exactly "$B" "$label: batch offline"
    assert_eq "$reff" "$(compress $REST)" "$label: root cpuset.cpus.effective after offline"
    if [ $pop = 1 ]; then
        case "$part" in "root invalid"*) echo "  ok: $label: partition '$part'" ;;
        *) cpuset_fail "$label: partition is '$part' right after offline, expected 'root invalid (...)' (populated, no CPU left)" ;; esac
        assert_eq "$eff" "$(compress $REST)" "$label: effective after offline (parent's CPUs)"
        assert_eq "$aff" "$(compress $REST)" "$label: task affinity after offline"
    else
        assert_eq "$part" root "$label: partition after offline (valid empty partition)"
        assert_eq "$eff" "" "$label: effective after offline"
    fi
    if [ $have_sd = 1 ]; then
        note "domains right after offline: $D_OFF"
        for c in $PRESENT; do
            d=$(dom_of "$D_OFF" $c)
            if contains " $B " $c; then
                [ -z "$d" ] || cpuset_fail "offline cpu$c still has sched domains ($d) right after the write"
            else
                [ "$d" = "$(dom_of "$D_PART" $c)" ] || cpuset_fail "cpu$c: domains '$d' right after offline, expected '$(dom_of "$D_PART" $c)'"
            fi
        done
        echo "  ok: sched domains right after offline"
    fi

    # --- online
    write_and_read online
    D_ON=$D_NOW
    note "right after online: partition='$part' effective='$eff' root effective='$reff' task affinity='$aff'"
    assert_all_online "$label: batch online"
    assert_eq "$part" root "$label: partition after online"
    assert_eq "$eff" "$BL" "$label: effective after online"
    assert_eq "$reff" "$(compress $REST)" "$label: root cpuset.cpus.effective after online"
    [ -n "$TASK" ] && assert_eq "$aff" "$BL" "$label: task affinity after online"
    if [ $have_sd = 1 ]; then
        [ "$D_ON" = "$D_PART" ] || cpuset_fail "sched domains right after online: $D_ON, expected $D_PART"
        echo "  ok: sched domains right after online = those before the offline"
    fi
    part_cleanup
}
run_case 1
run_case 0
if [ $have_sd = 1 ]; then
    [ "$(all_domains)" = "$D_ALL" ] || fail "domains after removing the partition: $(all_domains), expected $D_ALL"
    echo "  ok: domains back to the unpartitioned ones"
fi
exit 0
