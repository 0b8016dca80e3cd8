#!/bin/sh
# bulk-reader: what a batch costs the rest of the system. A cpus_read_lock() reader
# (tools/reader-wait.c: membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) in a loop) is timed
# while the last N APs (N = 4, 8, all) go offline as one batch and come back as one, and
# while all of them go through cpuN/online one by one. Prints, per direction and N, the
# write's duration (how long the batch holds cpu_add_remove_lock and the device hotplug
# lock) and the reader's worst wait. The batch takes cpus_write_lock() per CPU (and
# briefly at its start and end), never for the whole batch: the reader's worst wait in
# the largest batch must stay under half of that batch's duration.
. /cpuhpd-tests/lib.sh
need_bulk_kernel
command -v reader-wait >/dev/null || skip "reader-wait not in the initramfs (no static gcc at build time)"
assert_all_online "start"
H=$(hotpluggable)
NH=$(count $H)
[ $NH -ge 8 ] || skip "needs 8 hotpluggable CPUs"
STOP=/tmp/reader.stop
# timed CMD...: runs CMD with the reader going; sets MS (CMD's duration) and WAIT_US
timed() {
    rm -f $STOP
    reader-wait $STOP >/tmp/reader.out &
    local rp=$! t0
    usleep 200000
    t0=$(now_ms)
    "$@"
    MS=$(( $(now_ms) - t0 ))
    usleep 200000
    touch $STOP
    wait $rp
    WAIT_US=$(awk '{ print $4 }' /tmp/reader.out)
    [ -n "$WAIT_US" ] || fail "reader-wait printed nothing: $(cat /tmp/reader.out)"
}
batch() { kwrite $SYS/$1 "$2" >/dev/null; [ "$KW" = ok ] || fail "write $2 > $1: $KW"; }
loop() { local c; for c in $2; do echo $1 >$SYS/cpu$c/online || fail "cpu$c/online = $1 failed"; done; }

echo "  direction  N   how        write ms  reader worst wait ms"
for n in 4 8 $NH; do
    B=$(compress $(last_n $n $H))
    timed batch offline "$B"; OFF_MS=$MS OFF_W=$WAIT_US
    echo "  offline    $n  batch      $OFF_MS  $((OFF_W / 1000))"
    timed batch online "$B"; ON_MS=$MS ON_W=$WAIT_US
    echo "  online     $n  batch      $ON_MS  $((ON_W / 1000))"
done
timed loop 0 "$(last_n $NH $H)"
echo "  offline    $NH  per-CPU    $MS  $((WAIT_US / 1000))"
timed loop 1 "$(last_n $NH $H)"
echo "  online     $NH  per-CPU    $MS  $((WAIT_US / 1000))"
assert_all_online "end"
# the largest batch (the last one of the N loop) against half its duration
[ $((OFF_W / 1000)) -lt $((OFF_MS / 2)) ] ||
    fail "offline batch of $NH: the reader waited $((OFF_W / 1000)) ms of the write's $OFF_MS ms"
[ $((ON_W / 1000)) -lt $((ON_MS / 2)) ] ||
    fail "online batch of $NH: the reader waited $((ON_W / 1000)) ms of the write's $ON_MS ms"
echo "  ok: a batch of $NH: the reader's worst wait is $((OFF_W / 1000)) ms of $OFF_MS ms going offline, $((ON_W / 1000)) ms of $ON_MS ms coming online"
exit 0
