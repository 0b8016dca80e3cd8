#!/usr/bin/python3
"""Take CPUs offline or online through cpuhpd (org.cpuhpd1) from Python, with Gio
(Debian package python3-gi), and follow the batch's BatchProgress and BatchFinished
signals.

    cpuhpd-client.py offline 4,6,7
    cpuhpd-client.py online package:1 --mode best-effort --strategy per-cpu
    cpuhpd-client.py --bus-address unix:path=/tmp/bus offline 4 --dry-run

The bus: --bus-address ADDR, else $CPUHPD_BUS_ADDRESS, else the system bus (where
changing CPU state needs root). Exit status as cpuctl's: 0 ok, 1 failed (nothing left
changed) or a D-Bus error, 64 partial success (best-effort)."""
import argparse
import os
import sys

from gi.repository import Gio, GLib

NAME = "org.cpuhpd1"
PATH = "/org/cpuhpd1"
IFACE = "org.cpuhpd1.Manager"


def connect(address):
    if address:
        flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                 | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
    return Gio.bus_get_sync(Gio.BusType.SYSTEM, None)


def main():
    parser = argparse.ArgumentParser(description="Offline/Online through cpuhpd.")
    parser.add_argument("action", choices=["offline", "online"])
    parser.add_argument("mask", nargs="+", help="cpulist, 0x cpumap or selector (a union)")
    parser.add_argument("--mode", choices=["atomic", "best-effort"],
                        help="default: the daemon's (config default_mode)")
    parser.add_argument("--strategy", choices=["auto", "bulk", "smt", "per-cpu"])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--bus-address", default=os.environ.get("CPUHPD_BUS_ADDRESS"))
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds to wait for the reply (a large batch takes minutes)")
    args = parser.parse_args()

    bus = connect(args.bus_address)
    loop = GLib.MainLoop()
    state = {"reply": None, "error": None, "finished": {}}

    def on_signal(_conn, _sender, _path, _iface, signal, params):
        if signal == "BatchProgress":
            batch_id, done, total = params.unpack()
            print(f"progress: batch {batch_id} {done}/{total}", flush=True)
        elif signal == "BatchFinished":
            batch_id, action, strategy, changed, failed, requests, us, cancelled = params.unpack()
            state["finished"][batch_id] = True
            print(f"finished: batch {batch_id} {action} via {strategy}, changed "
                  f"'{changed}', failed '{failed}', {requests} request(s), {us} us"
                  + (f", cancelled before '{cancelled}'" if cancelled else ""), flush=True)
            if state["reply"] and state["reply"][1]["batch_id"] == batch_id:
                loop.quit()

    # Subscribe before calling, so that no signal of our batch is missed.
    for signal in ("BatchProgress", "BatchFinished"):
        bus.signal_subscribe(NAME, IFACE, signal, PATH, None, Gio.DBusSignalFlags.NONE,
                             on_signal)

    options = {}
    if args.mode:
        options["mode"] = GLib.Variant("s", args.mode)
    if args.strategy:
        options["strategy"] = GLib.Variant("s", args.strategy)
    if args.dry_run:
        options["dry_run"] = GLib.Variant("b", True)
    method = "Offline" if args.action == "offline" else "Online"

    def on_reply(conn, result):
        try:
            state["reply"] = conn.call_finish(result).unpack()
        except GLib.Error as error:
            state["error"] = error
            loop.quit()
            return
        results, summary = state["reply"]
        wrote = any(r[1] in ("changed", "failed", "rolled-back") for r in results)
        # BatchFinished comes for batches that wrote to the kernel; wait for it briefly
        # if it has not arrived yet.
        if summary["dry_run"] or not wrote or summary["batch_id"] in state["finished"]:
            loop.quit()
        else:
            GLib.timeout_add_seconds(5, loop.quit)

    bus.call(NAME, PATH, IFACE, method,
             GLib.Variant("(sa{sv})", (" ".join(args.mask), options)),
             GLib.VariantType("(a(ussis)a{sv})"), Gio.DBusCallFlags.NONE,
             int(args.timeout * 1000), None, on_reply)
    loop.run()

    if state["error"] is not None:
        print(f"error: {Gio.DBusError.get_remote_error(state['error'])}: "
              f"{Gio.DBusError.strip_remote_error(state['error']) or state['error'].message}",
              file=sys.stderr)
        return 1
    results, summary = state["reply"]
    for cpu, result, errno_name, _errno, message in results:
        print(f"cpu {cpu}: {result} {errno_name or '-'} {message}")
    print(f"summary: {summary['action']} '{summary['mask']}' outcome {summary['outcome']}, "
          f"strategy {summary['strategy']}, mode {summary['mode']}, batch {summary['batch_id']}, "
          f"order {list(summary['order'])}, {summary['duration_us']} us")
    return {"ok": 0, "partial": 64}.get(summary["outcome"], 1)


if __name__ == "__main__":
    sys.exit(main())
