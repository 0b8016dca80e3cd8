#!/bin/sh
# masks: every MASK form of docs/interface.md, each taken offline and back online
# through cpuctl: a list, a range, the group form, a hex cpumap, the selectors
# package:N, node:N, core:N, smt, and a union of several arguments. Expected sets come
# from the guest's own sysfs, read before any change; the strategy of each request
# from the daemon's Capabilities (expected_strategy in lib.sh).
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"

H=$(hotpluggable)
n=$(count $H)
[ $n -ge 4 ] || skip "needs 4 hotpluggable CPUs, have $n"
P=$(protected_cpus)
MAX=$(last $(present))

# round-trip MASK EXPECTED DESCRIPTION [ARGS...]: offline then online, checking both
round_trip() {
    local desc="$1" want="$(echo "$2" | norm)"; shift 2
    local strat sel=""
    [ "$*" = smt ] && sel=smt-selector
    echo "-- $desc: cpuctl offline $* (expect {$(compress $want)})"
    strat=$(expected_strategy offline "$want" $sel)
    cc --json offline "$@"
    assert_rc 0 "$desc offline"
    assert_strategy "$strat" "$desc offline"
    assert_json_changed "$want" "$desc offline"
    assert_eq "$J_ACTION" offline "$desc: action"
    assert_offline_exactly "$want" "$desc offline"
    strat=$(expected_strategy online "$want" $sel)
    cc --json online "$@"
    assert_rc 0 "$desc online"
    assert_strategy "$strat" "$desc online"
    assert_json_changed "$want" "$desc online"
    assert_all_online "$desc online"
}

a=$(nth 0 $H); b=$(nth 1 $H); c=$(nth 2 $H); z=$(last $H)

# 1. plain list
round_trip "list" "$a $z" "$a,$z"

# 2. a range of consecutive hotpluggable CPUs (the first three)
if [ $b -eq $((a + 1)) ] && [ $c -eq $((a + 2)) ]; then
    round_trip "range" "$a $b $c" "$a-$c"
else
    note "first three hotpluggable CPUs are not consecutive; range test uses $a-$a"
    round_trip "range" "$a" "$a-$a"
fi

# 3. group form: every 4th CPU from the first hotpluggable one to the last present
grp="$a-$MAX:1/4"
want=$(expand "$grp")
[ -z "$(inter "$want" "$P")" ] || fail "test bug: $grp includes a protected CPU"
round_trip "group form" "$want" "$grp"

# 4. hex cpumap of the second and the last hotpluggable CPUs
hm=$(hexmask $b $z)
round_trip "hex mask" "$b $z" "$hm"

# 5. package:N for a package without a protected CPU (prefer the highest)
pk=""
for p in $(packages); do [ -z "$(inter "$(cpus_of_pkg $p)" "$P")" ] && pk=$p; done
if [ -n "$pk" ]; then
    round_trip "package:$pk" "$(cpus_of_pkg $pk)" "package:$pk"
else
    note "every package holds a protected CPU: package selector not tested here"
fi

# 6. node:N for a node without a protected CPU
nd=""
for x in $(nodes); do
    cn=$(cpus_of_node $x)
    [ -n "$cn" ] && [ -z "$(inter "$cn" "$P")" ] && nd=$x
done
if [ -n "$nd" ]; then
    round_trip "node:$nd" "$(cpus_of_node $nd)" "node:$nd"
else
    note "every NUMA node holds a protected CPU (nodes: $(nodes)): node selector not tested here"
fi

# 7. core:N (the threads of CPU N's core) for the last CPU
round_trip "core:$z" "$(siblings_of $z)" "core:$z"

# 8. smt (secondary threads), only where there are any
S=$(smt_secondaries)
if [ -n "$S" ]; then
    round_trip "smt selector" "$S" smt
else
    note "no SMT siblings in this topology: smt selector not tested here"
fi

# 9. union of several arguments: a list, a core, a hex mask (and a package if any)
u_args="$a core:$z $(hexmask $c)"
u_want="$a $(siblings_of $z) $c"
if [ -n "$pk" ]; then u_args="$u_args package:$pk"; u_want="$u_want $(cpus_of_pkg $pk)"; fi
round_trip "union" "$u_want" $u_args

exit 0
