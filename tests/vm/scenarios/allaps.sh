#!/bin/sh
# allaps: every AP (all hotpluggable, unprotected CPUs) offline in one request and
# back online in one request, with the strategy the daemon's Capabilities call for
# (bulk on the patched kernel, per-cpu on a stock one).
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
H=$(hotpluggable)
[ -n "$H" ] || skip "no hotpluggable CPU"
want=$(expected_strategy offline "$H")
cc --json offline all
assert_rc 0 "offline all"
assert_strategy "$want" "offline all"
assert_json_changed "$H" "offline all"
assert_offline_exactly "$H" "offline all"
note "offline all: $(count $H) CPUs in ${MS} ms, strategy $J_STRATEGY, batch $J_BATCH"
note "offline all: daemon phases (us): $J_PHASES"
want=$(expected_strategy online "$H")
cc --json online all
assert_rc 0 "online all"
assert_strategy "$want" "online all"
assert_json_changed "$H" "online all"
assert_all_online "online all"
note "online all: $(count $H) CPUs in ${MS} ms, strategy $J_STRATEGY"
note "online all: daemon phases (us): $J_PHASES"
exit 0
