#!/bin/sh
# pinned: on a real kernel, a user task whose affinity is only the last package, and an IRQ
# whose affinity is only a CPU of it, are listed by `cpuctl plan offline package:N`;
# `--refuse-pinned` refuses (exit 1, Error.Pinned) and changes nothing; the real offline
# lists them too, and the kernel confirms the report: it breaks the task's affinity
# ("no longer affine") and the task lives on.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
last_package_or_skip
PL=$(compress $P)

# A runnable task: the kernel moves it off a dying CPU at once (select_fallback_rq), where a
# sleeping one would only be moved when it wakes.
taskset -c "$PL" sh -c 'while :; do :; done' &
TASK=$!
# Wait (bounded) for the affinity to be set and for the exec: taskset sets the affinity,
# then execs sh (read before the exec, the name is taskset's, and the plan, made after
# it, names sh: seen once as "task N (exe)" against "pinned: task N (sh)").
i=0
until grep -q "^Cpus_allowed_list:.$PL\$" /proc/$TASK/status 2>/dev/null &&
    [ "$(cat /proc/$TASK/comm 2>/dev/null)" = sh ]; do
    i=$((i + 1)); [ $i -le 50 ] || fail "task $TASK never got affinity $PL and ran sh"; usleep 100000
done
read -r COMM </proc/$TASK/comm
note "task $TASK ($COMM): $(grep Cpus_allowed_list /proc/$TASK/status)"

# An IRQ that takes an affinity of one CPU of the package (not every IRQ does).
IRQCPU=$(first $P)
IRQ=
for d in /proc/irq/[0-9]*; do
    IRQ_OLD=$(cat $d/smp_affinity_list 2>/dev/null) || continue
    if echo $IRQCPU >$d/smp_affinity_list 2>/dev/null; then IRQ=${d##*/}; break; fi
done
[ -n "$IRQ" ] && note "irq $IRQ ($(ls -F /proc/irq/$IRQ | sed -n 's,/$,,p' | tr '\n' ' ')) on CPU $IRQCPU, was $IRQ_OLD" ||
    note "no IRQ here takes an affinity of CPU $IRQCPU: IRQs not checked"

cleanup() { kill $TASK 2>/dev/null; [ -n "$IRQ" ] && echo "$IRQ_OLD" >/proc/irq/$IRQ/smp_affinity_list 2>/dev/null; }

cc plan offline package:$PK
assert_rc 0 "plan offline package:$PK"
grep -qx "pinned: task $TASK ($COMM) on CPU $PL" $OUT || { cleanup; fail "the plan does not list task $TASK"; }
echo "  ok: the plan lists task $TASK ($COMM) on CPU $PL"
if [ -n "$IRQ" ]; then
    grep -q "^pinned: irq $IRQ .*on CPU $IRQCPU\$" $OUT || { cleanup; fail "the plan does not list irq $IRQ"; }
    echo "  ok: the plan lists irq $IRQ on CPU $IRQCPU"
fi

cc offline --refuse-pinned package:$PK
assert_rc 1 "offline --refuse-pinned package:$PK"
grep -q "task $TASK ($COMM)" $ERR || { cleanup; fail "the refusal does not name task $TASK"; }
assert_all_online "after the refusal: nothing changed"

dmesg -c >/dev/null
cc offline package:$PK
assert_rc 0 "offline package:$PK"
grep -qx "pinned: task $TASK ($COMM) on CPU $PL" $OUT || { cleanup; fail "the result does not list task $TASK"; }
echo "  ok: the result lists task $TASK"
assert_offline_exactly "$P" "after offline package:$PK"
kill -0 $TASK || fail "task $TASK did not survive"
i=0
until dmesg | grep -q "process $TASK ($COMM) no longer affine"; do
    i=$((i + 1))
    [ $i -le 50 ] || { cleanup; fail "the kernel did not break task $TASK's affinity (no 'no longer affine')"; }
    usleep 100000
done
dmesg | grep "no longer affine" | sed 's/^/  | /'
echo "  ok: the kernel broke task $TASK's affinity, now $(sed -n 's/^Cpus_allowed_list:.//p' /proc/$TASK/status)"

cc online package:$PK
assert_rc 0 "online package:$PK"
cleanup
assert_all_online "end"
