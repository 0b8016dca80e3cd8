#!/bin/sh
# external: a CPU changed behind the daemon's back (a plain sysfs write) shows in
# `cpuctl status --json` and in the Online D-Bus property (bounded poll).
. /cpuhpd-tests/lib.sh
need_binaries
assert_all_online "start"
H=$(hotpluggable)
[ -n "$H" ] || skip "no hotpluggable CPU"
x=$(last $H)

prop_online() {
    dbus-send --system --print-reply --dest=org.cpuhpd1 /org/cpuhpd1 \
        org.freedesktop.DBus.Properties.Get string:org.cpuhpd1.Manager string:Online 2>&1 |
        sed -n 's/.*variant *string "\(.*\)".*/\1/p'
}
status_field() { cpuctl --timeout 30 --json status >/tmp/st.json 2>/dev/null; json_load /tmp/st.json; eval echo "\$J_$1"; }

wait_consistent() { # ctx
    local want i=0 s p deadline
    want=$(cat $SYS/online)
    deadline=$(($(now_ms) + 20000))   # bounded: 20 s
    while :; do
        s=$(status_field ONLINE); p=$(prop_online)
        [ "$s" = "$want" ] && [ "$p" = "$want" ] && break
        [ $(now_ms) -lt $deadline ] || break
        sleep 0.1; i=$((i + 1))
    done
    echo "  status.online='$s' Online='$p' kernel='$want' after $i polls"
    [ "$s" = "$want" ] || fail "$1: cpuctl status online='$s', kernel says '$want'"
    [ "$p" = "$want" ] || fail "$1: D-Bus Online='$p', kernel says '$want'"
    echo "  ok: $1"
}

wait_consistent "before"
echo "+ echo 0 > $SYS/cpu$x/online   (behind the daemon's back)"
echo 0 >$SYS/cpu$x/online || fail "raw offline cpu$x failed"
wait_consistent "after the external offline of cpu$x"
off=$(status_field OFFLINE)
assert_eq "$(expand "$off")" "$x" "status: offline"
cpuctl --json status
echo
echo "+ echo 1 > $SYS/cpu$x/online"
echo 1 >$SYS/cpu$x/online || fail "raw online cpu$x failed"
wait_consistent "after the external online of cpu$x"
assert_all_online "end"
exit 0
