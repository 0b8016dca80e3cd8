#!/bin/sh
# smt: `cpuctl smt off|on` goes through smt/control (SetSmt forces it whenever it
# applies, even where the kernel offers bulk): the control file changes, exactly the
# secondary threads go offline, strategy "smt". `cpuctl offline|online smt` (the smt
# selector) asks for SMT too and takes smt/control the same way; a numeric mask never
# does, even one that names exactly the secondaries or one of them. Skips on a
# topology without SMT.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
ctl=$(smt_control)
S=$(smt_secondaries)
[ "$ctl" = on ] || skip "smt/control is '$ctl' (no SMT in this topology)"
[ -n "$S" ] || skip "smt/control on but no CPU has a sibling"
note "secondary threads: {$(compress $S)}, capabilities: $(caps)"

cc --json smt off
assert_rc 0 "smt off"
json_ok "smt off"
assert_strategy smt "smt off"
assert_eq "$(smt_control)" off "smt off: $SYS/smt/control"
assert_offline_exactly "$S" "smt off"
assert_eq "$(json_cpus_with changed)" "$S" "smt off: cpus changed"

cc --json smt on
assert_rc 0 "smt on"
assert_strategy smt "smt on"
assert_eq "$(smt_control)" on "smt on: $SYS/smt/control"
assert_all_online "smt on"

want=$(expected_strategy offline "$S" smt-selector)
cc --json offline smt
assert_rc 0 "offline smt"
assert_strategy "$want" "offline smt"
if [ "$want" = smt ]; then
    assert_eq "$(smt_control)" off "offline smt: $SYS/smt/control"
else
    assert_eq "$(smt_control)" on "offline smt ($want): $SYS/smt/control untouched"
fi
assert_offline_exactly "$S" "offline smt"

want=$(expected_strategy online "$S" smt-selector)
cc --json online smt
assert_rc 0 "online smt"
assert_strategy "$want" "online smt"
assert_eq "$(smt_control)" on "online smt: $SYS/smt/control"
assert_all_online "online smt"

# A numeric mask of exactly the secondaries must not switch SMT for the machine.
want=$(expected_strategy offline "$S")
cc --json offline $(compress $S)
assert_rc 0 "offline $(compress $S)"
[ "$J_STRATEGY" != smt ] || fail "a numeric mask of every secondary used the smt strategy"
assert_strategy "$want" "offline $(compress $S)"
assert_eq "$(smt_control)" on "offline $(compress $S): smt/control untouched"
assert_offline_exactly "$S" "offline $(compress $S)"
cc --json online $(last $S)
assert_rc 0 "online one sibling after the numeric mask"
cc --json online $(compress $S)
assert_rc 0 "online $(compress $S)"
assert_all_online "online $(compress $S)"

# A mask that is not exactly the secondaries must not use smt/control.
x=$(last $S)
want=$(expected_strategy offline "$x")
cc --json offline $x
assert_rc 0 "offline one sibling"
[ "$J_STRATEGY" != smt ] || fail "offline of one sibling used the smt strategy"
assert_strategy "$want" "offline one sibling"
assert_eq "$(smt_control)" on "one sibling: smt/control untouched"
assert_offline_exactly "$x" "offline one sibling"
cc --json online $x
assert_rc 0 "online one sibling"
assert_all_online "online one sibling"
exit 0
