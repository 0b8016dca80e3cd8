#!/bin/sh
# bulk-interrupt: a batch stops between two CPUs when its writer is killed. The writer
# (a shell doing one write of every hotpluggable CPU to cpu/offline, then to
# cpu/online) gets SIGKILL once the kernel has changed its first CPU; the write must
# stop early (kernel log "interrupted before CPU"), and afterwards cpu/online, every
# cpuN/online file and the root cgroup's cpuset.cpus.effective must agree, i.e. the
# batch's cpuset update ran. A batch that finished before the signal came proves
# nothing: that case is retried, up to 5 times, then the scenario fails.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
CG=/sys/fs/cgroup
[ -e $CG/cgroup.controllers ] || mount -t cgroup2 cgroup2 $CG 2>/dev/null
[ -e $CG/cpuset.cpus.effective ] || skip "no cpuset.cpus.effective in the root cgroup"
assert_all_online "start"
H=$(hotpluggable)
HL=$(compress $H)

# consistent CTX: the kernel's online mask, the per-CPU files and cpusets agree
consistent() {
    local files mask eff
    files=$(perfile_online); mask=$(kernel_online); eff=$(expand "$(rd $CG/cpuset.cpus.effective)")
    [ "$files" = "$mask" ] || fail "$1: per-CPU online files {$(compress $files)} != $SYS/online {$(compress $mask)}"
    [ "$eff" = "$mask" ] || fail "$1: root cpuset.cpus.effective {$(compress $eff)} != $SYS/online {$(compress $mask)}"
    echo "  ok: $1: online={$(compress $mask)}, the per-CPU files and cpuset.cpus.effective agree"
}

# interrupt ACTION FUNC: one killed batch (lib.sh); STOPPED=1 if the kernel stopped it early.
interrupt() { write_killed_after_first_change $SYS/$1 "$HL" cpu_${2}_mask; }

for dir in "offline down" "online up"; do
    set -- $dir
    try=1
    while :; do
        [ $1 = online ] && { kwrite $SYS/offline "$HL"; assert_eq "$KW" ok "write $HL > offline"; }
        interrupt $1 $2
        consistent "$1 batch killed (try $try)"
        [ $STOPPED = 1 ] && break
        note "the $1 batch ended before the signal; trying again"
        restore_all_online
        try=$((try + 1))
        [ $try -le 5 ] || fail "could not interrupt an $1 batch in 5 tries"
    done
    if [ $1 = offline ]; then
        off=$(inter "$H" "$(minus "$PRESENT" "$(kernel_online)")")
        [ "$off" != "$H" ] || fail "offline batch killed: every CPU went offline anyway"
    else
        on=$(inter "$H" "$(kernel_online)")
        [ "$on" != "$H" ] || fail "online batch killed: every CPU came online anyway"
    fi
    echo "  ok: the $1 batch stopped part way"
    # what is left still works as a batch
    kwrite $SYS/online "$HL"; assert_eq "$KW" ok "write $HL > online after the interrupted batch"
    assert_all_online "after the interrupted $1 batch"
    consistent "after bringing every CPU back"
done
exit 0
