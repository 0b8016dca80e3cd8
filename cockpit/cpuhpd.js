/*
 * cpuhpd's Cockpit page. Everything comes from org.cpuhpd1 on the system bus through
 * cockpit.dbus(): the topology (GetTopology), the live state (the Online, Offline,
 * Protected, Holds, Profiles, ActiveProfile, ProfileCpus, Capabilities, SmtControl, Busy
 * properties and their PropertiesChanged), the HoldsChanged and BatchFinished signals, and
 * the changes (Offline, Online, ApplyProfile, RevertProfile, ReleaseHold). The daemon
 * decides who may change what (uid 0 or polkit); calls allow interactive authorization so
 * that polkit can ask the admin's password through Cockpit.
 */
"use strict";

(function () {
    const NAME = "org.cpuhpd1";
    const PATH = "/org/cpuhpd1";
    const IFACE = "org.cpuhpd1.Manager";
    const MAX_BATCHES = 20;
    // Changes wait for their batch: allow a long one (the daemon bounds its own work).
    const CALL_OPTIONS = { flags: "i", timeout: 15 * 60 * 1000 };

    const client = cockpit.dbus(NAME, { bus: "system", superuser: "try" });
    const busDaemon = cockpit.dbus("org.freedesktop.DBus", { bus: "system" });
    // The properties, as GetAll and PropertiesChanged give them. Not cockpit's props(): it
    // makes one JavaScript member of each method and property, and this interface has both a
    // method and a property called Offline (and Online).
    const props = { valid: false };

    const state = {
        topology: [], // [{cpu, package, die, core, node, siblings, online, hotpluggable}]
        selected: new Set(),
        batches: [], // newest first: {id, action, strategy, changed, failed, cancelled, ...}
        requests: new Map(), // batch id -> [{label, results, summary}] of this page's calls
        pending: 0,
    };

    const $ = (id) => document.getElementById(id);

    // ---- cpulists ----------------------------------------------------------------------

    // The CPUs of a kernel cpulist ("0-3,8,10-15"), as a Set of numbers.
    function parseCpulist(text) {
        const cpus = new Set();
        for (const part of String(text || "").split(",")) {
            const item = part.trim();
            if (!item)
                continue;
            const m = /^(\d+)(?:-(\d+))?$/.exec(item);
            if (!m)
                continue;
            const first = Number(m[1]);
            const last = m[2] === undefined ? first : Number(m[2]);
            for (let c = first; c <= last && c - first < 65536; c++)
                cpus.add(c);
        }
        return cpus;
    }

    function formatCpulist(cpus) {
        const sorted = Array.from(cpus).sort((a, b) => a - b);
        const parts = [];
        for (let i = 0; i < sorted.length;) {
            let j = i;
            while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1)
                j++;
            parts.push(j === i ? String(sorted[i]) : sorted[i] + "-" + sorted[j]);
            i = j + 1;
        }
        return parts.join(",");
    }

    // ---- small DOM helpers ---------------------------------------------------------------

    function el(tag, attrs, children) {
        const node = document.createElement(tag);
        for (const [key, value] of Object.entries(attrs || {})) {
            if (value === undefined || value === null || value === false)
                continue;
            if (key === "class")
                node.className = value;
            else if (key === "text")
                node.textContent = value;
            else if (key.startsWith("on"))
                node.addEventListener(key.substring(2), value);
            else
                node.setAttribute(key, value === true ? "" : String(value));
        }
        for (const child of [].concat(children || [])) {
            if (child !== null && child !== undefined)
                node.append(child instanceof Node ? child : document.createTextNode(String(child)));
        }
        return node;
    }

    function variant(value) {
        return value && typeof value === "object" && "v" in value ? value.v : value;
    }

    function errorText(error) {
        if (!error)
            return "unknown error";
        if (error.name && error.message)
            return error.name.replace(/^org\.cpuhpd1\.Error\./, "") + ": " + error.message;
        return cockpit.message(error);
    }

    function alertBox(kind, title, text) {
        const box = el("div", { class: "alert " + kind, role: kind === "danger" ? "alert" : "status" }, [
            el("strong", { text: title }),
            text ? " " + text : null,
            el("button", {
                type: "button",
                class: "plain close",
                "aria-label": "Dismiss",
                text: "×",
                onclick: () => box.remove(),
            }),
        ]);
        const alerts = $("alerts");
        alerts.prepend(box);
        while (alerts.children.length > 5)
            alerts.lastChild.remove();
        return box;
    }

    function duration(us) {
        const ms = Number(us) / 1000;
        if (ms < 1000)
            return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
        return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    }

    function since(us) {
        const when = new Date(Number(us) / 1000);
        const seconds = Math.max(0, Math.round((Date.now() - when.getTime()) / 1000));
        let ago;
        if (seconds < 90)
            ago = seconds + " s ago";
        else if (seconds < 90 * 60)
            ago = Math.round(seconds / 60) + " min ago";
        else
            ago = Math.round(seconds / 3600) + " h ago";
        return { text: when.toLocaleString(), ago };
    }

    // ---- what the daemon says ------------------------------------------------------------

    function holds() {
        return (props.Holds || []).map((h) => ({
            id: Number(h[0]),
            cpus: h[1],
            state: h[2],
            who: h[3],
            why: h[4],
            holder: h[5],
            since: h[6],
            restore: h[7],
        }));
    }

    // cpu -> hold, for every held CPU.
    function heldBy() {
        const map = new Map();
        for (const h of holds()) {
            for (const cpu of parseCpulist(h.cpus))
                map.set(cpu, h);
        }
        return map;
    }

    function loadTopology() {
        return client.call(PATH, IFACE, "GetTopology", [], { type: "" }).then((reply) => {
            state.topology = reply[0].map((t) => ({
                cpu: t[0],
                package: t[1],
                die: t[2],
                core: t[3],
                node: t[4],
                siblings: t[5],
                online: t[6],
                hotpluggable: t[7],
            }));
            render();
        });
    }

    // ---- the map -------------------------------------------------------------------------

    function cpuState(t, online, protectedCpus, held) {
        if (held.has(t.cpu))
            return "held";
        if (protectedCpus.has(t.cpu))
            return "protected";
        if (!t.hotpluggable)
            return "fixed";
        return online.has(t.cpu) ? "online" : "offline";
    }

    // The threads a core or package name selects: those that can change (as selectors
    // leave out protected CPUs and those without an online file; the daemon refuses them
    // when named by number).
    function changeable(threads) {
        const protectedCpus = parseCpulist(props.Protected);
        return threads.filter((t) => t.hotpluggable && !protectedCpus.has(t.cpu)).map((t) => t.cpu);
    }

    function toggle(cpus) {
        const all = cpus.every((c) => state.selected.has(c));
        for (const c of cpus) {
            if (all)
                state.selected.delete(c);
            else
                state.selected.add(c);
        }
        $("mask").value = formatCpulist(state.selected);
        renderMap();
    }

    function renderMap() {
        const map = $("map");
        const online = parseCpulist(props.Online);
        const protectedCpus = parseCpulist(props.Protected);
        const held = heldBy();
        const nodes = new Set(state.topology.map((t) => t.node));

        // package -> die -> core -> threads, in CPU order of their first thread.
        const packages = new Map();
        for (const t of state.topology) {
            if (!packages.has(t.package))
                packages.set(t.package, { node: t.node, dies: new Map(), cpus: [], threads: [] });
            const pkg = packages.get(t.package);
            pkg.cpus.push(t.cpu);
            pkg.threads.push(t);
            if (!pkg.dies.has(t.die))
                pkg.dies.set(t.die, new Map());
            const cores = pkg.dies.get(t.die);
            if (!cores.has(t.core))
                cores.set(t.core, []);
            cores.get(t.core).push(t);
        }

        const boxes = [];
        for (const [pkgId, pkg] of Array.from(packages).sort((a, b) => a[0] - b[0])) {
            const onlineHere = pkg.cpus.filter((c) => online.has(c)).length;
            const dieBoxes = [];
            for (const [dieId, cores] of Array.from(pkg.dies).sort((a, b) => a[0] - b[0])) {
                const coreBoxes = [];
                for (const [coreId, threads] of Array.from(cores).sort((a, b) => a[1][0].cpu - b[1][0].cpu)) {
                    threads.sort((a, b) => a.cpu - b.cpu);
                    const cells = threads.map((t) => {
                        const s = cpuState(t, online, protectedCpus, held);
                        const isOnline = online.has(t.cpu);
                        const hold = held.get(t.cpu);
                        const selected = state.selected.has(t.cpu);
                        let title = "CPU " + t.cpu + ": " + (isOnline ? "online" : "offline");
                        if (hold)
                            title += ", held " + hold.state + " by hold " + hold.id + " (" + hold.who +
                                (hold.why ? ": " + hold.why : "") + ")";
                        if (s === "protected")
                            title += ", protected";
                        if (!t.hotpluggable)
                            title += ", not hotpluggable";
                        title += "; package " + t.package + ", core " + t.core +
                            (t.node >= 0 ? ", node " + t.node : "");
                        return el("button", {
                            type: "button",
                            class: "cpu " + s + (isOnline ? " is-online" : " is-offline") + (selected ? " selected" : ""),
                            "data-cpu": t.cpu,
                            "data-state": s,
                            "data-online": isOnline ? "1" : "0",
                            "data-hold": hold ? hold.id : null,
                            "aria-pressed": selected ? "true" : "false",
                            title,
                            onclick: () => toggle([t.cpu]),
                        }, [
                            el("span", { class: "num", text: t.cpu }),
                            hold ? el("span", { class: "badge", text: "H" + hold.id }) : null,
                        ]);
                    });
                    coreBoxes.push(el("div", { class: "core" }, [
                        el("button", {
                            type: "button",
                            class: "core-label plain",
                            title: "Select the threads of core " + coreId,
                            text: "core " + coreId,
                            onclick: () => toggle(changeable(threads)),
                        }),
                        el("div", { class: "threads" }, cells),
                    ]));
                }
                const coresBox = el("div", { class: "cores" }, coreBoxes);
                dieBoxes.push(pkg.dies.size > 1
                    ? el("div", { class: "die" }, [el("div", { class: "die-label", text: "die " + dieId }), coresBox])
                    : coresBox);
            }
            boxes.push(el("div", { class: "package", "data-package": pkgId }, [
                el("div", { class: "package-head" }, [
                    el("button", {
                        type: "button",
                        class: "package-label plain",
                        title: "Select the threads of package " + pkgId,
                        onclick: () => toggle(changeable(pkg.threads)),
                    }, ["Package " + pkgId, nodes.size > 1 && pkg.node >= 0 ? " · node " + pkg.node : ""]),
                    el("span", { class: "package-count", text: onlineHere + " of " + pkg.cpus.length + " online" }),
                ]),
                ...dieBoxes,
            ]));
        }
        map.replaceChildren(...boxes);
    }

    function renderSummary() {
        const online = parseCpulist(props.Online);
        const offline = parseCpulist(props.Offline);
        const protectedCpus = parseCpulist(props.Protected);
        const held = heldBy();
        const fixed = state.topology.filter((t) => !t.hotpluggable).length;
        const parts = [
            state.topology.length + " CPUs",
            online.size + " online",
            offline.size + " offline",
        ];
        if (held.size)
            parts.push(held.size + " held");
        if (protectedCpus.size)
            parts.push(protectedCpus.size + " protected");
        if (fixed)
            parts.push(fixed + " not hotpluggable");
        const caps = props.Capabilities || [];
        if (caps.length)
            parts.push("strategies: " + caps.join(", "));
        if (props.SmtControl)
            parts.push("SMT " + props.SmtControl);
        if (props.ActiveProfile)
            parts.push("profile " + props.ActiveProfile + " in force");
        const summary = $("summary");
        summary.replaceChildren(parts.join(" · "));
        if (props.Busy || state.pending)
            summary.append(el("span", { class: "busy", text: "a batch is running" }));
    }

    function renderHolds() {
        const list = holds();
        $("holds-empty").hidden = list.length > 0;
        $("holds").hidden = list.length === 0;
        $("holds").tBodies[0].replaceChildren(...list.map((h) => {
            const when = since(h.since);
            return el("tr", { "data-hold": h.id }, [
                el("td", { text: h.id }),
                el("td", { class: "mono", text: h.cpus }),
                el("td", { text: h.state + (h.restore ? "" : " (no restore)") }),
                el("td", { class: "who nowrap", text: h.who }),
                el("td", { class: "why", text: h.why || "—" }),
                el("td", { class: "nowrap", title: when.text + " · holder " + h.holder, text: when.ago }),
                el("td", {}, el("button", {
                    type: "button",
                    class: "plain danger",
                    title: "End hold " + h.id + " now" + (h.restore ? " and restore its CPUs" : ""),
                    text: "Release",
                    onclick: (ev) => releaseHold(h, ev.currentTarget),
                })),
            ]);
        }));
    }

    function renderProfiles() {
        const profiles = props.Profiles || [];
        const active = props.ActiveProfile || "";
        $("profiles-empty").hidden = profiles.length > 0;
        $("profiles").hidden = profiles.length === 0;
        $("profiles").tBodies[0].replaceChildren(...profiles.map((p) => {
            const [name, mask, smtOff, minPerNode] = p;
            const what = [mask || null, smtOff ? "every SMT sibling" : null].filter(Boolean).join(" + ") || "—";
            const extra = minPerNode ? " (keeps " + minPerNode + " online per node)" : "";
            const isActive = name === active;
            const buttons = [];
            buttons.push(el("button", {
                type: "button",
                class: isActive ? "plain" : "",
                "data-profile": name,
                text: isActive ? "Re-apply" : "Apply",
                onclick: (ev) => applyProfile(name, ev.currentTarget),
            }));
            if (isActive) {
                buttons.push(el("button", {
                    type: "button",
                    "data-revert": name,
                    text: "Revert",
                    onclick: (ev) => revertProfile(ev.currentTarget),
                }));
            }
            return el("tr", { class: isActive ? "active" : "", "data-profile": name }, [
                el("td", { text: name }),
                el("td", { class: "mono", text: what + extra }),
                el("td", { text: isActive ? "in force, took " + (props.ProfileCpus || "nothing") : "—" }),
                el("td", { class: "actions" }, buttons),
            ]);
        }));
    }

    function renderBatches() {
        $("batches-empty").hidden = state.batches.length > 0;
        $("batches").hidden = state.batches.length === 0;
        $("batches").replaceChildren(...state.batches.map((b) => {
            const bad = b.failed || b.cancelled;
            const facts = [];
            if (b.changed)
                facts.push("changed " + b.changed);
            if (b.failed)
                facts.push("failed " + b.failed);
            if (b.cancelled)
                facts.push("cancelled " + b.cancelled);
            if (!facts.length)
                facts.push("nothing changed");
            const head = el("div", { class: "batch-head" }, [
                el("span", { class: "outcome " + (bad ? "bad" : "ok"), text: bad ? "✗" : "✓" }),
                el("strong", { text: b.title || "Batch " + b.id }),
                " " + b.action + (b.strategy ? " (" + b.strategy + ")" : "") + ": " + facts.join(", "),
                el("span", { class: "meta", text: [
                    b.requests !== undefined ? b.requests + (b.requests === 1 ? " request" : " requests") : null,
                    b.duration !== undefined ? duration(b.duration) : null,
                    b.time.toLocaleTimeString(),
                ].filter(Boolean).join(" · ") }),
            ]);
            const own = b.id ? state.requests.get(b.id) || [] : b.own || [];
            const details = own.map((r) => el("details", { class: "request" }, [
                el("summary", {}, r.label + ": " + (variant(r.summary.outcome) || "done")),
                resultsTable(r.results),
            ]));
            return el("li", { class: "batch", "data-batch": b.id }, [head, ...details]);
        }));
    }

    function resultsTable(results) {
        if (!results || !results.length)
            return el("p", { class: "empty", text: "No CPU had to change." });
        return el("table", { class: "table compact" }, [
            el("thead", {}, el("tr", {}, ["CPU", "Result", "Error", "Message"].map((h) => el("th", { text: h })))),
            el("tbody", {}, results.map((r) => el("tr", { class: "result-" + r[1] }, [
                el("td", { text: r[0] }),
                el("td", { text: r[1] }),
                el("td", { text: r[2] || "—" }),
                el("td", { text: r[4] }),
            ]))),
        ]);
    }

    function renderRecovery() {
        const r = props.LastRecovery || {};
        const outcome = variant(r.outcome);
        const box = $("recovery");
        box.hidden = !outcome || outcome === "none";
        if (!box.hidden)
            box.textContent = "At start-up, cpuhpd's recovery: " + (variant(r.summary) || outcome);
    }

    function render() {
        if (!props.valid)
            return;
        $("content").hidden = false;
        renderSummary();
        renderMap();
        renderHolds();
        renderProfiles();
        renderBatches();
        renderRecovery();
    }

    // ---- changes -------------------------------------------------------------------------

    function busy(button, on) {
        if (button)
            button.disabled = on;
        state.pending += on ? 1 : -1;
        renderSummary();
    }

    // A change call: disables `button` while it runs, reports errors, keeps the results.
    function change(label, method, args, type, button) {
        busy(button, true);
        return client.call(PATH, IFACE, method, args, { ...CALL_OPTIONS, type })
                .then((reply) => {
                    const results = reply.length > 1 ? reply[reply.length - 2] : reply[0];
                    const summary = reply.length > 1 ? reply[reply.length - 1] : {};
                    recordRequest(label, results, summary);
                    const outcome = variant(summary.outcome);
                    if (outcome && outcome !== "ok")
                        alertBox("warning", label + ": " + outcome, "see Last batches for each CPU");
                    return reply;
                })
                .catch((error) => {
                    alertBox("danger", label + " failed.", errorText(error));
                })
                .finally(() => busy(button, false));
    }

    function recordRequest(label, results, summary) {
        const id = Number(variant(summary.batch_id) || 0);
        const request = { label, results: results || [], summary: summary || {} };
        if (id) {
            if (!state.requests.has(id))
                state.requests.set(id, []);
            state.requests.get(id).push(request);
        }
        const cpus = (...kinds) => formatCpulist((results || []).filter((r) => kinds.includes(r[1])).map((r) => r[0]));
        if (id === 0) {
            // A profile change (its batches come as BatchFinished too), or a request answered
            // without a batch (nothing to change): a line of its own, with its results.
            addBatch({
                id: 0,
                title: label.startsWith("apply") || label.startsWith("revert") ? "Profile" : "No batch",
                action: label,
                strategy: variant(summary.strategy) || "",
                changed: cpus("changed"),
                failed: cpus("failed", "rolled-back", "refused"),
                cancelled: cpus("cancelled"),
                duration: variant(summary.duration_us),
                own: [request],
            });
        } else if (!state.batches.some((b) => b.id === id)) {
            // The reply came before the signal: the signal completes this line.
            addBatch({ id, action: variant(summary.action) || label, strategy: variant(summary.strategy) || "",
                       changed: cpus("changed"), failed: cpus("failed", "rolled-back"), cancelled: cpus("cancelled"),
                       duration: variant(summary.duration_us) });
        }
        renderBatches();
    }

    function addBatch(b) {
        b.time = new Date();
        const at = state.batches.findIndex((x) => x.id && x.id === b.id);
        if (at >= 0)
            state.batches[at] = { ...state.batches[at], ...b };
        else
            state.batches.unshift(b);
        state.batches.length = Math.min(state.batches.length, MAX_BATCHES);
        const kept = new Set(state.batches.map((x) => x.id));
        for (const id of Array.from(state.requests.keys())) {
            if (!kept.has(id))
                state.requests.delete(id);
        }
    }

    function maskOrSay() {
        const mask = $("mask").value.trim();
        if (!mask)
            alertBox("info", "Select CPUs first.", "Click threads in the map or type a mask.");
        return mask;
    }

    function offlineOnline(method, button) {
        const mask = maskOrSay();
        if (!mask)
            return;
        const options = { mode: cockpit.variant("s", $("mode").value) };
        change(method.toLowerCase() + " " + mask, method, [mask, options], "sa{sv}", button)
                .then((reply) => {
                    if (reply) {
                        state.selected.clear();
                        $("mask").value = "";
                        renderMap();
                    }
                });
    }

    function plan(button) {
        const mask = maskOrSay();
        if (!mask)
            return;
        const going = Array.from(parseCpulist(props.Online)).some((c) => state.selected.has(c)) ||
            state.selected.size === 0;
        const method = going ? "Offline" : "Online";
        const options = { mode: cockpit.variant("s", $("mode").value), dry_run: cockpit.variant("b", true) };
        busy(button, true);
        client.call(PATH, IFACE, method, [mask, options], { type: "sa{sv}" })
                .then((reply) => {
                    const summary = reply[1];
                    const order = variant(summary.order) || [];
                    const pinned = variant(summary.pinned_tasks) || [];
                    alertBox("info", "Plan: " + method.toLowerCase() + " " + mask + ".",
                             "Strategy " + variant(summary.strategy) + ", order " +
                             (order.length ? order.join(" ") : "nothing to do") +
                             (pinned.length ? "; " + pinned.length + " pinned task(s) would lose their CPUs" : "") + ".");
                })
                .catch((error) => alertBox("danger", "Plan failed.", errorText(error)))
                .finally(() => busy(button, false));
    }

    function applyProfile(name, button) {
        change("apply profile " + name, "ApplyProfile", [name, {}], "sa{sv}", button);
    }

    function revertProfile(button) {
        change("revert profile " + (props.ActiveProfile || ""), "RevertProfile", [{}], "a{sv}", button);
    }

    function releaseHold(h, button) {
        busy(button, true);
        client.call(PATH, IFACE, "ReleaseHold", [h.id], { ...CALL_OPTIONS, type: "t" })
                .then((reply) => {
                    const restored = reply[0] || [];
                    alertBox("info", "Hold " + h.id + " released.",
                             restored.length ? "Restored CPU " + formatCpulist(restored.map((r) => r[0])) + "." : "");
                })
                .catch((error) => alertBox("danger", "Release of hold " + h.id + " failed.", errorText(error)))
                .finally(() => busy(button, false));
    }

    // ---- start ---------------------------------------------------------------------------

    $("offline-btn").addEventListener("click", (ev) => offlineOnline("Offline", ev.currentTarget));
    $("online-btn").addEventListener("click", (ev) => offlineOnline("Online", ev.currentTarget));
    $("plan-btn").addEventListener("click", (ev) => plan(ev.currentTarget));
    $("clear-btn").addEventListener("click", () => {
        state.selected.clear();
        $("mask").value = "";
        renderMap();
    });
    $("change-form").addEventListener("submit", (ev) => ev.preventDefault());
    $("mask").addEventListener("input", () => {
        // A typed cpulist selects its CPUs in the map; a selector leaves the map alone.
        const text = $("mask").value.trim();
        if (/^[\d,\s-]*$/.test(text)) {
            state.selected = parseCpulist(text.replace(/\s+/g, ","));
            renderMap();
        }
    });

    function applyProperties(values) {
        for (const [key, value] of Object.entries(values))
            props[key] = variant(value);
    }

    // Everything again: the properties and the topology (at start, and when cpuhpd appears).
    function loadAll() {
        return client.call(PATH, "org.freedesktop.DBus.Properties", "GetAll", [IFACE], { type: "s" })
                .then((reply) => {
                    applyProperties(reply[0]);
                    props.valid = true;
                    return loadTopology();
                })
                .catch((error) => {
                    props.valid = false;
                    $("content").hidden = true;
                    $("summary").textContent = error && error.name === "org.freedesktop.DBus.Error.ServiceUnknown"
                        ? "cpuhpd is not running (no org.cpuhpd1 on the system bus)."
                        : "Cannot read cpuhpd: " + errorText(error);
                });
    }

    client.subscribe({ path: PATH, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged" },
                     (path, iface, signal, args) => {
                         const [changedIface, changed, invalidated] = args;
                         if (changedIface !== IFACE)
                             return;
                         applyProperties(changed || {});
                         if (invalidated && invalidated.length) {
                             loadAll();
                             return;
                         }
                         // A CPU the topology does not know yet (hot-added): read it again.
                         const present = parseCpulist(props.Present);
                         if (Array.from(present).some((c) => !state.topology.some((t) => t.cpu === c)))
                             loadTopology().catch(() => {});
                         render();
                     });

    // cpuhpd started (or restarted, or went away).
    busDaemon.subscribe({ interface: "org.freedesktop.DBus", member: "NameOwnerChanged", arg0: NAME },
                        (path, iface, signal, args) => {
                            if (args[2]) {
                                loadAll();
                            } else {
                                props.valid = false;
                                $("content").hidden = true;
                                $("summary").textContent = "cpuhpd stopped (org.cpuhpd1 left the system bus).";
                            }
                        });

    client.subscribe({ path: PATH, interface: IFACE, member: "BatchFinished" }, (path, iface, signal, args) => {
        const [id, action, strategy, changed, failed, requests, durationUs, cancelled] = args;
        addBatch({ id: Number(id), action, strategy, changed, failed, cancelled, requests, duration: durationUs });
        renderBatches();
        // Offline CPUs keep the topology they had; a CPU back online may report fresh siblings.
        loadTopology().catch(() => {});
    });

    client.subscribe({ path: PATH, interface: IFACE, member: "HoldsChanged" }, () => {
        // The Holds property follows with PropertiesChanged; render what the props has now.
        render();
    });

    client.addEventListener("close", (ev, options) => {
        $("content").hidden = true;
        $("summary").textContent = "Disconnected from the system bus: " + cockpit.message(options);
    });

    loadAll();

    // Refresh the "since" column of the holds now and then.
    window.setInterval(() => {
        if (props.valid && (props.Holds || []).length)
            renderHolds();
    }, 30000);
}());
