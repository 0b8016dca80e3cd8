#!/usr/bin/python3
"""Writes report.md and the PNG plots of a scripts/bench.sh run from its CSV files.

    bench/report.py DIR

Inputs (DIR): meta.txt, samples.csv, phases.csv, phasewall.csv, rebuilds.csv, states.csv,
info.csv, daemon.csv, daemonphases.csv (any may be missing or empty). Measured and projected figures are
kept apart: the projection section says what it assumes.
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

METHOD_ORDER = ["loop", "loop-exp", "chcpu", "smt-control", "cpuctl-per-cpu", "cpuctl-smt",
                "cpuctl-bulk", "direct"]
METHOD_TEXT = {
    "loop": "per-CPU shell loop",
    "loop-exp": "loop, rcu_expedited=1",
    "chcpu": "chcpu -d/-e",
    "smt-control": "smt/control off/on",
    "cpuctl-per-cpu": "cpuctl --strategy per-cpu",
    "cpuctl-smt": "cpuctl --strategy smt",
    "cpuctl-bulk": "cpuctl --strategy bulk",
    "direct": "bulk write cpu/offline|online",
}
CONFIG_TEXT = {"cg0": "no extra cgroups", "part": "cpuset partition (last package)"}
WORKLOAD_TEXT = {"all": "all APs", "pkg": "last package", "smt": "SMT siblings"}
COUNTS = ["rebuilds", "synchronize_rcu", "synchronize_rcu_expedited", "stop_machine",
          "stop_machine_cpuslocked"]
PUBLISHED = [
    # (cpus, what, before_s, after_s, source)
    (480, "all APs off+on, per-CPU loop -> hotplug speed-up series", 106.0, 5.07,
     "published figure (hotplug speed-up series)"),
    (1536, "SMT off, smt/control -> one rcu_sync window", 20 * 60.0, 5.5 * 60,
     "published figure (2026 LKML thread, 1536-CPU SMT switch)"),
]


# The part of a cpuctl call's wall time the daemon does not report: cpuctl and the bus, and
# the queue before the batch unless cpuctl reported it ("queued", from "queued_us").
OUTSIDE = "rest (cpuctl, bus, reply; the queue unless \"queued\" is shown)"


def config_text(c):
    if c in CONFIG_TEXT:
        return CONFIG_TEXT[c]
    if m := re.fullmatch(r"cg(\d+)t(\d+)", c):
        return f"{m[1]} cpu cgroups, {m[2]} tasks"
    if c.startswith("cg"):
        return f"{c[2:]} cpu cgroups"
    return c


def config_size(c):
    """(cgroups, tasks) of a cgN or cgNtM configuration, for sorting."""
    m = re.fullmatch(r"cg(\d+)(?:t(\d+))?", c)
    return (int(m[1]), int(m[2] or 0)) if m else (0, 0)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def span(xs, fmt=None):
    """The median and the range of samples, '-' without any."""
    fmt = fmt or fmt_ms
    if not xs:
        return "-"
    return f"{fmt(med(xs))} [{fmt(min(xs))}-{fmt(max(xs))}]"


def plain_ms(v):
    return f"{v:.1f}"


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fmt_ms(v):
    if v != v:
        return "-"
    return f"{v / 1000:.2f} s" if v >= 10000 else f"{v:.0f} ms"


def fmt_count(vals):
    vals = [v for v in vals if v == v]
    if not vals:
        return "-"
    lo, hi = min(vals), max(vals)
    m = med(vals)
    s = f"{m:g}"
    return s if lo == hi else f"{s} ({lo:g}-{hi:g})"


def vcpus_key(v):
    return int(v)


def cell(r):
    """A row's cell: (kernel, vcpus, config, workload, method, action)."""
    return (r["kernel"], r["vcpus"], r["config"], r["workload"], r["method"], r["action"])


class Report:
    def __init__(self, d):
        self.d = d
        self.out = []
        self.meta = open(os.path.join(d, "meta.txt")).read() if os.path.exists(
            os.path.join(d, "meta.txt")) else ""
        self.samples = read_csv(os.path.join(d, "samples.csv"))
        self.phases = read_csv(os.path.join(d, "phases.csv"))
        self.phasewall = read_csv(os.path.join(d, "phasewall.csv"))
        self.rebuilds = read_csv(os.path.join(d, "rebuilds.csv"))
        self.states = read_csv(os.path.join(d, "states.csv"))
        self.info = read_csv(os.path.join(d, "info.csv"))
        self.daemon = read_csv(os.path.join(d, "daemon.csv"))
        # The daemon's own phases of each cpuctl sample (cpuctl --json "phases", microseconds).
        self.daemonphases = read_csv(os.path.join(d, "daemonphases.csv"))
        # cpuctl calls that change nothing (exec: cpuctl --version; noop: an online CPU
        # brought online), milliseconds, and the daemon's queued_us of the noop.
        self.client = read_csv(os.path.join(d, "client.csv"))
        # Traced cells with a negative nanosecond sum come from runs whose guest script
        # printed them with busybox awk's %d, which wraps above 2^31 ns (2.1 s): drop them.
        bad = {cell(r) for r in self.phases if num(r["incl_ns"]) < 0 or num(r["excl_ns"]) < 0}
        bad |= {cell(r) for r in self.phasewall
                if num(r["rebuild_ns"]) < 0 or num(r.get("states_ns")) < 0}
        self.dropped_phase_cells = sorted(bad)
        self.phases = [r for r in self.phases if cell(r) not in bad]
        self.phasewall = [r for r in self.phasewall if cell(r) not in bad]
        self.plots = []
        # cells[(kernel, vcpus, config, workload, method, action)] = [sample rows with status ok]
        self.cells = defaultdict(list)
        self.errors = defaultdict(int)
        for r in self.samples:
            if r["status"] == "ok":
                self.cells[cell(r)].append(r)
            else:
                self.errors[cell(r)] += 1

    def w(self, line=""):
        self.out.append(line)

    def guests(self):
        return sorted({(r["kernel"], r["vcpus"]) for r in self.samples},
                      key=lambda g: (g[0], vcpus_key(g[1])))

    def ms(self, key):
        return [num(r["ms"]) for r in self.cells.get(key, [])]

    def offon(self, k, v, c, wl, m):
        """Per-repetition offline+online sums (pairs by rep)."""
        off = {r["rep"]: num(r["ms"]) for r in self.cells.get((k, v, c, wl, m, "offline"), [])}
        on = {r["rep"]: num(r["ms"]) for r in self.cells.get((k, v, c, wl, m, "online"), [])}
        return [off[x] + on[x] for x in off if x in on]

    # ---------------------------------------------------------------- sections
    def header(self):
        self.w("# cpuhpd benchmark report")
        self.w()
        self.w("Generated by `scripts/bench.sh` (`bench/report.py`). Every guest figure comes from "
               "QEMU TCG guests on the host below: absolute times are TCG times (a batch spends "
               "most of its time in emulated stop_machine and inter-processor interrupts on 2 "
               "host cores), so compare methods by their **ratio to the per-CPU shell loop in "
               "the same guest**, and read the kprobe **counts**, which do not depend on the "
               "emulator.")
        self.w()
        self.w("```")
        self.w(self.meta.strip())
        self.w("```")
        self.w()
        self.w("Each cell: median of the repetitions with [min-max]; `ratio` = median / median of "
               "the loop in the same guest and configuration. A run whose method failed or left "
               "other CPUs online than expected is counted as an error, not a sample "
               "(column `err`). Counts per batch are kprobe hits (`kprobe_profile`) during the "
               "timed batch: `rebuilds` = `partition_sched_domains_locked`, `sync_rcu` = "
               "`synchronize_rcu`, `exp` = `synchronize_rcu_expedited`, `stop_m` = "
               "`stop_machine_cpuslocked` (takedown_cpu calls it directly).")
        self.w()
        self.w("How each batch is run (`tests/vm/guest/bench.sh`): the loop writes `cpuN/online` "
               "from busybox sh without forking, siblings first going down and primaries first "
               "coming up (the kernel's bulk order); `loop-exp` is the same inside "
               "`rcu_expedited=1`; `chcpu -d/-e LIST` and `cpuctl` include their process start "
               "(cpuctl also its D-Bus round trip and the daemon's 20 ms coalescing window); "
               "every method of a repetition runs before the next repetition starts. The clock "
               "is `/proc/uptime` (10 ms steps), read without a fork around the batch only. "
               "The kprobe counters stay armed during the timed runs (a few hits per CPU); the "
               "tracepoint pass and the rebuild timing run separately afterwards.")
        self.w()
        self.w("**Measured**: every time, count and ratio in the tables, the per-phase breakdown, "
               "the rebuild cost table and the daemon figures. **Fitted**: the rebuild cost model. "
               "**Projected** (a model, labelled as such): the 480/1536-CPU section.")
        self.w()

    def summary(self):
        guests = self.guests()
        if not guests:
            self.w("No guest samples in this run.")
            self.w()
            return
        self.w("## Summary: ratio to the per-CPU loop (offline + online)")
        self.w()
        self.w("Median of (offline + online) per repetition, as a ratio to the loop's median in the "
               "same guest and configuration; below 1 is faster than the loop. `loop (s)` is the "
               "loop's median in seconds (TCG).")
        self.w()
        methods = [m for m in METHOD_ORDER
                   if any(self.offon(k, v, c, wl, m) for (k, v) in guests
                          for c in self.configs() for wl in WORKLOAD_TEXT)]
        self.w("| workload | kernel | vCPUs | configuration | loop (s) | " +
               " | ".join(m for m in methods if m != "loop") + " |")
        self.w("|---|---|---|---|---|" + "---|" * (len(methods) - 1))
        for wl in WORKLOAD_TEXT:
            for (k, v) in guests:
                for c in self.configs():
                    loop = self.offon(k, v, c, wl, "loop")
                    if not loop:
                        continue
                    lm = med(loop)
                    cells = []
                    for m in methods:
                        if m == "loop":
                            continue
                        x = self.offon(k, v, c, wl, m)
                        cells.append(f"{med(x) / lm:.2f}" if x else "-")
                    self.w(f"| {WORKLOAD_TEXT[wl]} | {k} | {v} | {config_text(c)} | "
                           f"{lm / 1000:.2f} | " + " | ".join(cells) + " |")
        self.w()

    def configs(self):
        seen = []
        for r in self.samples:
            if r["config"] not in seen:
                seen.append(r["config"])
        return seen

    def detail(self):
        if not self.samples:
            return
        self.w("## Every cell")
        self.w()
        for (k, v) in self.guests():
            for c in self.configs():
                for wl in ["all", "pkg", "smt"]:
                    rows = [m for m in METHOD_ORDER
                            if self.cells.get((k, v, c, wl, m, "offline")) or
                            self.errors.get((k, v, c, wl, m, "offline"))]
                    if not rows:
                        continue
                    ncpus = next(iter(self.cells.get((k, v, c, wl, rows[0], "offline"), [])),
                                 {}).get("ncpus", "?")
                    self.w(f"### {k}, {v} vCPUs, {config_text(c)}, {WORKLOAD_TEXT[wl]} "
                           f"({ncpus} CPUs)")
                    self.w()
                    self.w("| method | n | offline | ratio | online | ratio | err | "
                           "rebuilds off/on | sync_rcu off/on | exp off/on | stop_m off |")
                    self.w("|---|---|---|---|---|---|---|---|---|---|---|")
                    lo = med(self.ms((k, v, c, wl, "loop", "offline")))
                    ln = med(self.ms((k, v, c, wl, "loop", "online")))
                    for m in rows:
                        off = self.ms((k, v, c, wl, m, "offline"))
                        on = self.ms((k, v, c, wl, m, "online"))
                        err = self.errors.get((k, v, c, wl, m, "offline"), 0) + self.errors.get(
                            (k, v, c, wl, m, "online"), 0)

                        def ratio(xs, base):
                            return f"{med(xs) / base:.2f}" if xs and base == base and base else "-"

                        def cnt(col, act):
                            return fmt_count([num(r[col]) for r in self.cells.get(
                                (k, v, c, wl, m, act), [])])

                        self.w(f"| {METHOD_TEXT.get(m, m)} | {len(off)} | {span(off)} | "
                               f"{ratio(off, lo)} | {span(on)} | {ratio(on, ln)} | {err} | "
                               f"{cnt('rebuilds', 'offline')} / {cnt('rebuilds', 'online')} | "
                               f"{cnt('synchronize_rcu', 'offline')} / "
                               f"{cnt('synchronize_rcu', 'online')} | "
                               f"{cnt('synchronize_rcu_expedited', 'offline')} / "
                               f"{cnt('synchronize_rcu_expedited', 'online')} | "
                               f"{cnt('stop_machine_cpuslocked', 'offline')} |")
                    self.w()

    # ---------------------------------------------------------------- plots
    def plot_ratios(self):
        guests = self.guests()
        if not guests:
            return
        panels = [(k, c) for k in sorted({g[0] for g in guests}) for c in self.configs()]
        fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False,
                                 sharey=True)
        for ax, (k, c) in zip(axes[0], panels):
            sizes = sorted({v for (kk, v) in guests if kk == k}, key=vcpus_key)
            methods = [m for m in METHOD_ORDER if any(self.offon(k, v, c, "all", m) for v in sizes)]
            width = 0.8 / max(1, len(methods))
            for i, m in enumerate(methods):
                ys, lo, hi = [], [], []
                for v in sizes:
                    base = med(self.offon(k, v, c, "all", "loop"))
                    x = self.offon(k, v, c, "all", m)
                    if x and base == base and base:
                        ys.append(med(x) / base)
                        lo.append(med(x) / base - min(x) / base)
                        hi.append(max(x) / base - med(x) / base)
                    else:
                        ys.append(float("nan"))
                        lo.append(0)
                        hi.append(0)
                xs = np.arange(len(sizes)) + (i - (len(methods) - 1) / 2) * width
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=METHOD_TEXT.get(m, m))
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
            ax.set_xticks(np.arange(len(sizes)))
            ax.set_xticklabels([f"{v} vCPUs" for v in sizes])
            ax.set_title(f"{k}\n{config_text(c)}", fontsize=9)
            ax.set_ylabel("time / loop time (offline+online, all APs)")
        axes[0][0].legend(fontsize=7, loc="upper left")
        fig.suptitle("Measured (TCG guests): ratio to the per-CPU shell loop, median, bars = "
                     "min-max", fontsize=10)
        fig.tight_layout()
        self.save(fig, "ratios.png", "Ratio to the loop per method, size and configuration")

    def plot_phases(self):
        if not self.phases:
            return
        walls = {cell(r): r for r in self.phasewall}
        # Exclusive seconds per callback, per traced cell (in the order of phases.csv).
        excl = defaultdict(lambda: defaultdict(float))
        for r in self.phases:
            excl[cell(r)][r["callback"]] += num(r["excl_ns"]) / 1e9
        # The largest guest per kernel; all APs with no extra cgroups and with the most
        # cgroups; the SMT siblings with no extra cgroups (loop vs smt/control).
        picks = []
        for k in sorted({r["kernel"] for r in self.phasewall}):
            vs = sorted({r["vcpus"] for r in self.phasewall if r["kernel"] == k}, key=vcpus_key)
            cfgs = sorted({r["config"] for r in self.phasewall if r["kernel"] == k})
            cg = sorted((c for c in cfgs if c.startswith("cg")), key=config_size)
            chosen = [c for c in (cg[:1] + cg[-1:]) if c] or cfgs[:1]
            for c in dict.fromkeys(chosen):
                picks.append((k, vs[-1], c, "all"))
            picks.append((k, vs[-1], chosen[0], "smt"))
        bars = []  # (label, {segment: seconds})
        totals = defaultdict(float)
        for (k, v, c, wl) in picks:
            for act in ["offline", "online"]:
                for m in METHOD_ORDER:
                    key = (k, v, c, wl, m, act)
                    if key not in walls:
                        continue
                    seg = defaultdict(float, excl.get(key, {}))
                    wr = walls[key]
                    rb = num(wr["rebuild_ns"]) / 1e9
                    outside = max(0.0, num(wr["ms"]) / 1000 - num(wr["states_ns"]) / 1e9 - rb)
                    seg["sched-domain rebuilds (kretprobe)"] += rb
                    seg["outside the state machine"] += outside
                    for s, t in seg.items():
                        totals[s] += t
                    bars.append((f"{k[:12]} {v}\n{c} {WORKLOAD_TEXT[wl]}\n{m} {act}", seg,
                                 max(1, int(num(wr["ncpus"])))))
        if not bars:
            return
        top = [s for s, _ in sorted(totals.items(), key=lambda x: -x[1])][:11]
        palette = [plt.get_cmap("tab10")(i) for i in range(10)] + ["#bbbbbb", "#555555"]
        series = []
        for i, s in enumerate(top + ["other states"]):
            ys = [b[1].get(s, 0.0) if s != "other states" else
                  sum(t for name, t in b[1].items() if name not in top) for b in bars]
            series.append((s, ys, palette[i % len(palette)]))
        self.stacked_bars([b[0] for b in bars], series,
                          "seconds: exclusive time per state, summed over CPUs",
                          "Measured: where a batch's time goes (cpuhp_enter/exit tracepoints)\n"
                          "traced runs, slower than the timed ones",
                          "phases.png", "Per-phase breakdown, loop vs the other methods")
        # The table behind it: the largest states per bar.
        self.w("### Per-phase breakdown (traced runs)")
        self.w()
        self.w("Exclusive time per hotplug state (callback name), summed over the batch's CPUs, "
               "from `cpuhp:cpuhp_enter`/`cpuhp_exit` (nested states subtracted from the state "
               "that waits for them), with the `partition_sched_domains_locked` time from a "
               "kretprobe and the remainder of the wall time outside any state (locks, "
               "rcu_sync, the cpuset work, user space). One traced run per cell, separate from "
               "the timed repetitions (tracing slows it).")
        self.w()
        if self.dropped_phase_cells:
            self.w(f"{len(self.dropped_phase_cells)} traced cells left out: their guest script "
                   "printed nanosecond sums with busybox awk's %d, which wraps above 2.1 s "
                   "(fixed since): " + ", ".join(" ".join(c[1:]) for c in
                                                 self.dropped_phase_cells) + ".")
            self.w()
        self.w("| run | wall | " + " | ".join(top[:8]) + " |")
        self.w("|---|---|" + "---|" * len(top[:8]))
        for label, seg, _n in bars:
            wall = sum(seg.values())
            self.w(f"| {label.replace(chr(10), ' ')} | {wall:.2f} s | " +
                   " | ".join(f"{seg.get(s, 0) * 1000:.0f} ms" for s in top[:8]) + " |")
        self.w()
        # What a batch still pays per CPU, state by state: the map for the next kernel work.
        self.w("Per CPU of the batch (ms per CPU: the same times divided by the CPUs the batch "
               "changed). A state a bulk method still pays N times shows the same per-CPU "
               "figure as the loop; one it pays once per batch shrinks with N.")
        self.w()
        self.w("| run | CPUs | " + " | ".join(top[:8]) + " |")
        self.w("|---|---|" + "---|" * len(top[:8]))
        for label, seg, n in bars:
            self.w(f"| {label.replace(chr(10), ' ')} | {n} | " +
                   " | ".join(f"{seg.get(s, 0) * 1000 / n:.1f}" for s in top[:8]) + " |")
        self.w()

    def plot_daemon_phases(self):
        """Where a cpuctl batch's wall time goes: the daemon's phases (medians over the
        repetitions) and the rest of the wall time (cpuctl, the bus, queueing and the
        coalescing window), beside the kernel's per-state plot."""
        if not self.daemonphases:
            return
        # reps[cell][rep][phase] = microseconds, phases in the order the daemon reported them
        reps = defaultdict(lambda: defaultdict(dict))
        order = []
        for r in self.daemonphases:
            reps[cell(r)][r["rep"]][r["phase"]] = num(r["us"])
            if r["phase"] not in order:
                order.append(r["phase"])
        # The largest guest per kernel, all APs, the first and last cgroup configuration.
        picks = []
        for k in sorted({c[0] for c in reps}):
            vs = sorted({c[1] for c in reps if c[0] == k}, key=vcpus_key)
            cfgs = sorted({c[2] for c in reps if c[0] == k and c[1] == vs[-1]})
            cg = sorted((c for c in cfgs if c.startswith("cg")), key=config_size)
            chosen = [c for c in (cg[:1] + cg[-1:]) if c] or cfgs[:1]
            for c in dict.fromkeys(chosen):
                for wl in ["all", "pkg", "smt"]:
                    for m in METHOD_ORDER:
                        for act in ["offline", "online"]:
                            if (k, vs[-1], c, wl, m, act) in reps:
                                picks.append((k, vs[-1], c, wl, m, act))
                    if any(p[3] == wl for p in picks if p[0] == k and p[2] == c):
                        break  # one workload per configuration: the first there is
        bars = []  # (label, {segment: ms}, wall ms or None)
        for key in picks:
            k, v, c, wl, m, act = key
            seg = {p: med([rep.get(p, 0.0) for rep in reps[key].values()]) / 1000 for p in order}
            walls = [num(r["ms"]) for r in self.cells.get(key, [])]
            wall = med(walls) if walls else None
            if wall is not None:
                seg[OUTSIDE] = max(0.0, wall - sum(seg.values()))
            bars.append((f"{k[:12]} {v}\n{c} {WORKLOAD_TEXT.get(wl, wl)}\n{m} {act}", seg, wall))
        if not bars:
            return
        palette = [plt.get_cmap("tab20")(i) for i in range(20)]
        series = [(p, [b[1].get(p, 0.0) for b in bars], palette[i % len(palette)])
                  for i, p in enumerate(order)]
        series.append((OUTSIDE,
                       [b[1].get(OUTSIDE, 0.0) for b in bars],
                       "#cccccc"))
        self.stacked_bars([b[0] for b in bars], [x for x in series if any(x[1])],
                          "ms per batch (medians over the repetitions)",
                          "Measured: where a cpuctl batch's time goes in the daemon\n"
                          "(cpuctl --json \"phases\"; \"write\" is the kernel's, plotted per "
                          "state beside)", "daemonphases.png", "Daemon phases of cpuctl batches")
        self.w("### The daemon's phases (cpuctl samples)")
        self.w()
        self.w("Each cpuctl sample's `phases` (the daemon's monotonic clock, each phase its own "
               "time; `write` is the kernel writes, `reread` the read of sysfs after them), "
               "median over the repetitions, in ms; `rest` is the sample's median wall time "
               "minus the phases: cpuctl's start, the bus round trip and the reply; `queued` "
               "(cpuctl's `queued_us`, where the daemon reported it) is the time from the "
               "daemon's receipt of the call to the batch's start: the machine read, the "
               "queue and the coalescing window (without it, `rest` has them).")
        self.w()
        self.w("| run | wall | " + " | ".join(order) + " | rest |")
        self.w("|---|---|" + "---|" * (len(order) + 1))
        for label, seg, wall in bars:
            rest = seg.get(OUTSIDE)
            self.w(f"| {label.replace(chr(10), ' ')} | "
                   f"{'-' if wall is None else f'{wall:.0f} ms'} | " +
                   " | ".join(f"{seg.get(p, 0):.2f}" for p in order) +
                   f" | {'-' if rest is None else f'{rest:.1f}'} |")
        self.w()
        self.client_cost()

    def client_cost(self):
        """What a cpuctl call costs without a batch, per guest and configuration: the part
        of `rest` that is the client process and the call itself."""
        if not self.client:
            return
        calls = defaultdict(lambda: defaultdict(list))
        for r in self.client:
            key = (r["kernel"], r["vcpus"], r["config"])
            calls[key][r["what"]].append(num(r["ms"]))
            if r["what"] == "noop" and r.get("queued_us"):
                calls[key]["queued"].append(num(r["queued_us"]) / 1000)
        self.w("### What a cpuctl call costs without a batch")
        self.w()
        self.w("Timed in the guest like a sample (10 ms clock steps), medians with the range: "
               "`exec` is `cpuctl --version` (the process, its shared libraries and the "
               "argument parser); `noop` is `cpuctl --json online CPU` for a CPU already "
               "online (that, the bus round trip, the daemon's authorization and admission, "
               "no batch and no coalescing window); `queued` is the noop's `queued_us`, the "
               "daemon's part of it from receipt to answer. A batch through cpuctl pays "
               "about `noop` plus the coalescing window on top of the daemon's phases.")
        self.w()
        self.w("| guest | config | exec ms | noop ms | noop queued ms |")
        self.w("|---|---|---|---|---|")
        for key in sorted(calls, key=lambda k: (k[0], vcpus_key(k[1]), config_size(k[2]))):
            c = calls[key]
            self.w(f"| {key[0][:12]} {key[1]} | {config_text(key[2])} | "
                   f"{span(c['exec'], plain_ms)} | {span(c['noop'], plain_ms)} | "
                   f"{span(c['queued'], plain_ms)} |")
        self.w()

    # Rebuild cost models: name, formula, features of (N, G). The first follows the kernel's
    # code (every CPU's runqueue is re-attached and each re-attach walks every task group);
    # the second is the plain alternative the data may prefer.
    MODELS = [
        ("per-CPU cgroup walk", "T = a + b*N + c*N*G/1000", lambda n, g: [1.0, n, n * g / 1000.0]),
        ("flat cgroup term", "T = a + b*N + c*G/1000", lambda n, g: [1.0, n, g / 1000.0]),
    ]

    def rebuild_fit(self):
        """Fits every model in MODELS to the median rebuild time per (N, G)."""
        pts = [(int(r["online_cpus"]), int(r["cgroups"]), num(r["ns"]) / 1e6, r["kernel"])
               for r in self.rebuilds if r["config"] != "part"]
        if not pts:
            return []
        # Medians per (N, G) so that noisy single rebuilds do not dominate.
        groups = defaultdict(list)
        for n, g, t, _k in pts:
            groups[(n, g)].append(t)
        keys = sorted(groups)
        y = np.array([med(groups[k]) for k in keys])
        fits = []  # (name, formula, coef, r2, features)
        if len({k[0] for k in keys}) >= 2:
            for name, formula, feat in self.MODELS:
                X = np.array([feat(n, g) for (n, g) in keys])
                cols = [0, 1, 2] if len({k[1] for k in keys}) >= 2 else [0, 1]
                coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
                full = np.zeros(3)
                full[cols] = coef
                ss_res = float(np.sum((y - X @ full) ** 2))
                ss_tot = float(np.sum((y - y.mean()) ** 2)) or 1.0
                fits.append((name, formula, full, 1 - ss_res / ss_tot, feat))
            fits.sort(key=lambda f: -f[3])
        self.w("## The cost of one sched-domain rebuild")
        self.w()
        self.w("Measured: `partition_sched_domains_locked` timed by a kprobe/kretprobe pair in the "
               "guest, rebuilds triggered by switching an empty cpuset partition (one CPU) between "
               "`root` and `member` with every CPU online; median per (vCPUs, cgroups) of "
               "the repetitions (TCG time).")
        self.w()
        self.w("| vCPUs | cpu cgroups | rebuilds | median | min | max |")
        self.w("|---|---|---|---|---|---|")
        for k in keys:
            xs = groups[k]
            self.w(f"| {k[0]} | {k[1]} | {len(xs)} | {med(xs):.2f} ms | {min(xs):.2f} ms | "
                   f"{max(xs):.2f} ms |")
        self.w()
        self.w("State model: a rebuild detaches and re-attaches every CPU's runqueue to a root "
               "domain (`rq_attach_root` -> `set_rq_offline`/`set_rq_online` per CPU) and builds "
               "the domains of N online CPUs; going offline and online, each runqueue walks every "
               "task group (`unthrottle_offline_cfs_rqs`, `update_runtime_enabled`), so the "
               "cgroup term should grow with N x G. Both that model and one with a cgroup term "
               "independent of N are fitted (least squares over the medians; N online CPUs, G cpu "
               "cgroups, T in ms of TCG time); the better fit is used for the projection, both are "
               "listed:")
        self.w()
        if fits:
            self.w("| model | a | b (per CPU) | c | R^2 |")
            self.w("|---|---|---|---|---|")
            for name, formula, co, r2, _f in fits:
                self.w(f"| {name}: {formula} | {co[0]:.3f} | {co[1]:.4f} | {co[2]:.4f} | "
                       f"{r2:.3f} |")
            self.w()
            if len(keys) <= 4:
                self.w(f"With {len(keys)} (N, G) points and 3 parameters each fit is barely "
                       "constrained; read it as an order of magnitude.")
                self.w()
        else:
            self.w("Fit: not enough guest sizes in this run (needs two or more).")
            self.w()
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, g in enumerate(sorted({k[1] for k in keys})):
            ns = [k[0] for k in keys if k[1] == g]
            raw = [(n, t) for n, gg, t, _ in pts if gg == g]
            ax.scatter([p[0] for p in raw], [p[1] for p in raw], s=10, alpha=0.35,
                       color=f"C{i}")
            ax.plot(ns, [med(groups[(n, g)]) for n in ns], "o", color=f"C{i}",
                    label=f"{g} cgroups, median")
            if fits:
                xx = np.linspace(min(ns), max(ns) * 1.1, 50)
                for j, (name, _fo, co, r2, feat) in enumerate(fits):
                    ax.plot(xx, [np.dot(co, feat(x, g)) for x in xx], ["--", ":"][j % 2],
                            color=f"C{i}", label=f"fit ({name}, R^2 {r2:.2f}), {g} cgroups")
        ax.set_xlabel("online CPUs (vCPUs)")
        ax.set_ylabel("ms per rebuild (TCG)")
        ax.set_title("Measured: one sched-domain rebuild vs CPUs and cgroups", fontsize=9)
        ax.legend(fontsize=6)
        fig.tight_layout()
        self.save(fig, "rebuild_fit.png", "Sched-domain rebuild cost and its fit")
        return fits

    def projection(self, fits):
        if not fits:
            return

        def T_of(co, feat):
            return lambda n, g: max(0.0, float(np.dot(co, feat(n, g)))) / 1000  # s

        def loop_rebuilds(T, n, g):
            # One rebuild per CPU each way, with N-1 ... 1 CPUs left going down and
            # 2 ... N coming up.
            return sum(T(k, g) for k in range(1, n)) + sum(T(k, g) for k in range(2, n + 1))

        def bulk_rebuilds(T, n, g):
            return T(1, g) + T(n, g)

        T = T_of(fits[0][2], fits[0][4])
        # The measured per-CPU remainder: the loop's time per CPU minus its rebuilds, from
        # the largest measured guest with no extra cgroups.
        per_cpu = None
        for (k, v) in reversed(self.guests()):
            x = self.offon(k, v, "cg0", "all", "loop")
            if x:
                n = int(v)
                per_cpu = (med(x) / 1000 - loop_rebuilds(T, n, 0)) / max(1, n - 1)
                per_cpu_src = f"{k}, {v} vCPUs"
                break
        self.w("## Projection to 480 and 1536 CPUs (a model, not a measurement)")
        self.w()
        self.w("From the measured counts (the loop does one rebuild per CPU each way, the bulk "
               "write one per batch; see the tables above) and the fitted rebuild cost T(N, G), "
               "extrapolated far beyond the measured sizes: rebuild time per all-AP off+on "
               "batch = sum of T(k, G) over the CPUs left online at each rebuild (loop) vs "
               "T(1, G) + T(N, G) (bulk). In TCG time units: real hardware is faster per "
               "operation; the ratio and the growth (O(N^2) vs O(N)) are what carry over. "
               + (f"The per-CPU remainder (everything but rebuilds) is the measured loop's, "
                  f"{per_cpu * 1000:.0f} ms per CPU ({per_cpu_src}), held constant: under TCG it "
                  f"grows with the vCPUs (stop_machine on 2 host cores), on hardware it does "
                  f"not, so the totals below are rough." if per_cpu else ""))
        self.w()
        self.w("| model | CPUs | cgroups | loop: rebuilds | bulk: rebuilds | loop total "
               "(+remainder) | bulk total | bulk/loop | published |")
        self.w("|---|---|---|---|---|---|---|---|---|")
        for name, _fo, co, _r2, feat in fits:
            Tm = T_of(co, feat)
            for n in [480, 1536]:
                pub = next((p for p in PUBLISHED if p[0] == n), None)
                for g in [0, 2000]:
                    lr, br = loop_rebuilds(Tm, n, g), bulk_rebuilds(Tm, n, g)
                    rem = per_cpu * (n - 1) if per_cpu else 0.0
                    pubtxt = (f"{pub[1]}: {pub[2]:g} s -> {pub[3]:g} s ({pub[3] / pub[2]:.3f}x)"
                              if pub and g == 0 and name == fits[0][0] else "")
                    self.w(f"| {name} | {n} | {g} | {lr:.0f} s | {br:.2f} s | {lr + rem:.0f} s | "
                           f"{br + rem:.0f} s | {(br + rem) / (lr + rem):.2f} | {pubtxt} |")
        self.w()
        self.w("Reading it: the rebuild term is where one batch wins by construction (N rebuilds "
               "-> 1); the rest of a CPU's hotplug (the grace period in `sched_cpu_deactivate`, "
               "`stop_machine` in `takedown_cpu`, INIT/SIPI) is still paid per CPU by the "
               "current series, which is why the published 480-CPU gain (21x) needs the "
               "per-CPU work cut too (expedited grace periods, parallel bring-up), and why one "
               "rcu_sync window alone gave 3.6x at 1536 CPUs.")
        self.w()
        ns = np.unique(np.geomspace(8, 2048, 40).astype(int))
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        for g, ls in [(0, "-"), (2000, "--")]:
            ax.plot(ns, [loop_rebuilds(T, n, g) for n in ns], ls, color="C3",
                    label=f"loop, rebuilds only, {g} cgroups")
            ax.plot(ns, [bulk_rebuilds(T, n, g) for n in ns], ls, color="C0",
                    label=f"bulk, rebuilds only, {g} cgroups")
            if per_cpu:
                ax.plot(ns, [loop_rebuilds(T, n, g) + per_cpu * (n - 1) for n in ns], ls,
                        color="C1", alpha=0.6, label=f"loop + per-CPU remainder, {g} cgroups")
                ax.plot(ns, [bulk_rebuilds(T, n, g) + per_cpu * (n - 1) for n in ns], ls,
                        color="C2", alpha=0.6, label=f"bulk + per-CPU remainder, {g} cgroups")
        for p in PUBLISHED:
            ax.scatter([p[0]], [p[2]], marker="x", color="k")
            ax.scatter([p[0]], [p[3]], marker="+", color="k")
            ax.annotate(f"published {p[0]}: {p[2]:g} -> {p[3]:g} s", (p[0], p[2]), fontsize=7,
                        xytext=(-120, 8), textcoords="offset points")
        measured = sorted({int(v) for (_k, v) in self.guests()})
        if measured:
            ax.axvspan(min(measured), max(measured), color="grey", alpha=0.15,
                       label="measured sizes")
        for n in (480, 1536):
            ax.axvline(n, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("CPUs")
        ax.set_ylabel("seconds per all-AP offline+online (TCG time units)")
        ax.set_title(f"PROJECTION ({fits[0][0]} model) from the fitted rebuild cost and the "
                     "counted rebuilds\n(not measured beyond the grey band; published figures "
                     "are real hardware)", fontsize=8)
        ax.legend(fontsize=6)
        fig.tight_layout()
        self.save(fig, "projection.png", "Projection (labelled as such)")

    def daemon_section(self):
        if not self.daemon:
            return
        self.w("## The daemon itself (host, fake sysfs tree, private bus)")
        self.w()
        self.w("| metric | measured | goal | met |")
        self.w("|---|---|---|---|")
        for r in self.daemon:
            self.w(f"| {r['metric']} | {r['value']} {r['unit']} | {r['goal']} | {r['met']} |")
        self.w()

    def stacked_bars(self, labels, series, ylabel, title, name, caption):
        """One bar per label, stacked from `series` [(legend, [value per bar], color)]."""
        fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(labels) + 3), 6))
        bottoms = np.zeros(len(labels))
        for legend, values, color in series:
            ys = np.array(values, dtype=float)
            ax.bar(range(len(labels)), ys, bottom=bottoms, label=legend, color=color)
            bottoms += ys
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
        fig.tight_layout()
        self.save(fig, name, caption)

    def save(self, fig, name, caption):
        fig.savefig(os.path.join(self.d, name), dpi=110)
        plt.close(fig)
        self.plots.append((name, caption))

    def run(self):
        self.header()
        self.summary()
        self.plot_ratios()
        self.plot_phases()
        self.plot_daemon_phases()
        self.projection(self.rebuild_fit())
        self.daemon_section()
        if self.plots:
            self.w("## Plots")
            self.w()
            for name, caption in self.plots:
                self.w(f"![{caption}]({name})")
                self.w()
        self.detail()
        with open(os.path.join(self.d, "report.md"), "w") as f:
            f.write("\n".join(self.out) + "\n")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    Report(sys.argv[1]).run()
    print(f"report: wrote {os.path.join(sys.argv[1], 'report.md')}", file=sys.stderr)


if __name__ == "__main__":
    main()
