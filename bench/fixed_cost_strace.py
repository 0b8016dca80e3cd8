#!/usr/bin/env python3
"""fixed_cost_strace.py CPUCTL_TRACE [DAEMON_TRACE]: where one cpuctl call's wall time went,
from `strace -f -ttt -s 4096` of cpuctl and (attached with -p, same clock) of cpuhpd
(bench/fixed-cost.sh --strace writes both).

cpuctl's side: exec and dynamic loading (to the last shared object opened), cpuctl's own
start (argument parsing, to the bus socket's connect), the bus connection (connect, auth,
Hello: to the method call's send), every round trip before the call (AddMatch,
GetNameOwner, property reads; none expected), the call's round trip, and reply to exit.
The daemon's side, inside the round trip: the call's receipt, the authorization round
trip (GetConnectionCredentials), and from there to the reply's send (admission, queue,
coalescing window, batch; the reply's queued_us and duration_us split it)."""
import re
import sys

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
METHODS = ("Offline", "Online", "SetSmt", "HoldCpus", "ApplyProfile", "RevertProfile")


def events(path):
    """(time, pid, syscall, text) of every syscall line; a resumed call counts at its end
    with its whole text (the unfinished part and the resumed part joined)."""
    pending = {}
    out = []
    with open(path, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, t, text = int(m.group(1)), float(m.group(2)), m.group(3)
            if text.endswith("<unfinished ...>"):
                pending[pid] = text[: -len("<unfinished ...>")]
                continue
            r = re.match(r"<\.\.\. (\w+) resumed>(.*)$", text)
            if r:
                text = pending.pop(pid, r.group(1) + "(") + r.group(2)
            name = re.match(r"([\w+]+)\(", text)
            out.append((t, pid, name.group(1) if name else text.split(" ")[0], text))
    return out


def bus_messages(evs, kinds):
    """The sendmsg/recvmsg/writev/read calls that moved D-Bus messages, with their text."""
    return [e for e in evs if e[2] in kinds and not re.search(r"= -1 E", e[3])]


def member_of(text):
    if "AUTH " in text or "BEGIN" in text:
        return "auth"
    for name in METHODS + ("Hello", "AddMatch", "GetNameOwner", "GetAll", "Get",
                           "GetConnectionCredentials", "RemoveMatch"):
        if re.search(r"\\0\\0\\0\\0%s\\0" % name, text) or re.search(r'\\0%s\\0' % name, text) \
                or ('"%s"' % name) in text or re.search(r"\b%s\b" % name, text):
            return name
    return None


def ms(a, b):
    return "%8.2f ms" % ((b - a) * 1000.0)


def main():
    cl = events(sys.argv[1])
    if not cl:
        sys.exit("no syscalls in " + sys.argv[1])
    t0 = cl[0][0]
    end = max(e[0] for e in cl)
    exits = [e for e in cl if e[2] == "exit_group"]
    t_exit = exits[-1][0] if exits else end
    libs = [e for e in cl if e[2] == "openat" and ".so" in e[3] and "= -1" not in e[3]]
    t_loaded = libs[-1][0] if libs else t0
    connects = [e for e in cl if e[2] == "connect" and "sun_path" in e[3]]
    t_connect = connects[0][0] if connects else t0
    sends = bus_messages(cl, ("sendmsg", "writev", "write"))
    recvs = bus_messages(cl, ("recvmsg", "read"))
    call = next((e for e in sends if member_of(e[3]) in METHODS), None)
    writes_out = [e for e in cl if e[2] == "write" and re.match(r"write\(1,", e[3])]
    print("cpuctl (%s):" % sys.argv[1])
    print("  exec + dynamic loading      %s" % ms(t0, t_loaded))
    print("  start (parse, to connect)   %s" % ms(t_loaded, t_connect))
    if call is None:
        print("  no method call found in the trace (strace -s too small?)")
        return
    t_call = call[0]
    before = [member_of(e[3]) for e in sends if t_connect <= e[0] < t_call]
    print("  connect+auth+Hello+...      %s   messages sent before the call: %s" %
          (ms(t_connect, t_call), ", ".join(m or "?" for m in before) or "none"))
    reply = next((e for e in recvs if e[0] > t_call and ("duration_us" in e[3] or "Error" in e[3])),
                 None)
    if reply is None:
        later = [e for e in recvs if e[0] > t_call and not re.search(r"= 0$", e[3])]
        reply = later[-1] if later else None
    t_reply = reply[0] if reply else t_exit
    print("  the call's round trip       %s" % ms(t_call, t_reply))
    t_out = writes_out[0][0] if writes_out else t_exit
    print("  reply -> output written     %s" % ms(t_reply, t_out))
    print("  output -> exit              %s" % ms(t_out, t_exit))
    print("  total (exec -> exit_group)  %s" % ms(t0, t_exit))
    if len(sys.argv) < 3:
        return
    dm = events(sys.argv[2])
    dsends = bus_messages(dm, ("sendmsg", "writev", "write"))
    drecvs = bus_messages(dm, ("recvmsg", "read"))
    got = next((e for e in drecvs if e[0] >= t_call - 0.001 and member_of(e[3]) in METHODS), None)
    if got is None:
        print("daemon: the call's receipt not found in " + sys.argv[2])
        return
    creds = [e for e in dsends if e[0] >= got[0] and member_of(e[3]) == "GetConnectionCredentials"]
    creds_back = None
    if creds:
        creds_back = next((e for e in drecvs if e[0] > creds[0][0] and "UnixUserID" in e[3]), None)
    sent = next((e for e in dsends if e[0] > got[0] and ("duration_us" in e[3] or "Error" in e[3])),
                None)
    print("cpuhpd (%s):" % sys.argv[2])
    print("  call sent -> received       %s" % ms(t_call, got[0]))
    if creds and creds_back:
        print("  authorization round trip    %s   (GetConnectionCredentials, from receipt)" %
              ms(got[0], creds_back[0]))
        start = creds_back[0]
    else:
        start = got[0]
    if sent:
        print("  -> reply sent               %s   (admission, queue, window, batch)" %
              ms(start, sent[0]))
        print("  reply sent -> received      %s" % ms(sent[0], t_reply))
    opens = [e for e in dm if e[2] == "openat" and got[0] <= e[0] <= (sent[0] if sent else end)]
    print("  files opened in between     %d" % len(opens))


if __name__ == "__main__":
    main()
