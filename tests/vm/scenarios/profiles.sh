#!/bin/sh
# profiles: on a real kernel, `cpuctl profile apply` takes the last package offline in one
# batch, leaving out a CPU of it that was offline before (it is not the profile's); an
# SMT-off profile applied on top changes only what differs; `cpuctl profile revert` brings
# back exactly what the profile in force took, and the CPU that was offline before stays so.
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
last_package_or_skip
BEFORE=$(first $P)
daemon_restart_with "profiles: {evacuate: {offline: \"package:$PK\"}, nosmt: {smt: \"off\"}}"

cc offline $BEFORE
assert_rc 0 "offline $BEFORE before the profile"
cc profile apply evacuate
assert_rc 0 "profile apply evacuate"
grep -q "profile evacuate applied: ok" $OUT || fail "no 'applied: ok' summary"
assert_offline_exactly "$P" "after profile apply evacuate"
assert_eq "$(cpuctl --json profile list | sed -n 's/.*"active":"\([^"]*\)".*/\1/p')" \
    "evacuate" "the profile in force"
grep "profile evacuate applied" $DAEMON_LOG | sed 's/^/  | /'

SMT=$(smt_secondaries)
if [ -n "$SMT" ]; then
    cc profile apply nosmt
    assert_rc 0 "profile apply nosmt on top of evacuate"
    # Back: the package's first threads (not BEFORE: it was never the profile's);
    # offline: the SMT siblings outside the package. The package's siblings stay offline.
    WANT=$(union "$BEFORE" "$SMT")
    assert_offline_exactly "$WANT" "after switching to nosmt"
    cc profile revert
    assert_rc 0 "profile revert (nosmt)"
else
    note "no SMT siblings: no switch to nosmt"
    cc profile revert
    assert_rc 0 "profile revert (evacuate)"
fi
grep -q "reverted: ok" $OUT || fail "no 'reverted: ok' summary"
assert_offline_exactly "$BEFORE" "after revert: only the CPU offline before the profile"
cc online $BEFORE
assert_rc 0 "online $BEFORE"
assert_all_online "end"
daemon_restart_default
