// agentmux console: the view streamed from /api/stream, answers posted to /api/respond.
"use strict";

const state = { pending: new Map(), sessions: new Map(), me: "", role: "operator", focused: "", wanted: "",
  seen: null, // requests already told of: null until the first snapshot, whose backlog is not

  filter: { host: "", session: "", tool: "", risk: "" }, selected: new Set() };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function show(v) {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

// utc is a time as the CLI prints it: UTC, 24-hour, "2026-11-29 14:03:05 UTC"; with
// timeOnly, "14:03:05 UTC".
function utc(t, timeOnly) {
  const d = new Date(t);
  if (isNaN(d)) return "";
  const iso = d.toISOString(); // 2026-11-29T14:03:05.123Z
  return (timeOnly ? iso.slice(11, 19) : iso.slice(0, 10) + " " + iso.slice(11, 19)) + " UTC";
}

function seconds(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return s >= 120 ? Math.round(s / 60) + " min" : s + " s";
}

// ---- requests waiting for a person ----

function bodyOf(p) {
  try { return p.body ? (typeof p.body === "string" ? JSON.parse(p.body) : p.body) : {}; } catch (e) { return {}; }
}

function kindOf(p) {
  const b = bodyOf(p);
  if (p.type === "approval") return p.options && p.options.length ? "select" : "approval";
  if (p.type === "budget") return "budget";
  if (p.type === "question") {
    if (b.kind === "confirm") return "confirm";
    if (b.kind === "select") return b.multi ? "multi" : "select";
  }
  return "text";
}

async function answer(p, value, reason, scope) {
  const card = document.querySelector(`.request[data-id="${p.id}"]`);
  if (card) for (const b of card.querySelectorAll("button, input")) b.disabled = true;
  let reply;
  try {
    const r = await fetch("/api/respond", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id: p.id, value, reason: reason || "", scope: scope || "" }) });
    reply = await r.json();
  } catch (e) {
    reply = { ok: false, error: String(e) };
  }
  const out = card && card.querySelector(".outcome");
  if (!out) return;
  if (reply.ok) {
    out.className = "outcome";
    out.textContent = `answered ${JSON.stringify(value)} as human:${state.me}` + scopeText(scope, p.host);
    if (scope) loadGrants();
  } else {
    out.className = "outcome refused";
    out.textContent = "refused: " + reply.error;
    if (reply.pending) { state.pending.set(reply.pending.id, reply.pending); }
  }
}

function deny(p, card) {
  const actions = card.querySelector(".actions");
  if (actions.querySelector(".reason")) { actions.querySelector(".reason").focus(); return; }
  const reason = el("input", { type: "text", class: "reason", placeholder: "Why not? The agent is told." });
  const send = el("button", { class: "deny", onclick: () => answer(p, "no", reason.value) }, "Send deny");
  reason.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); send.click(); } e.stopPropagation(); });
  actions.append(reason, send);
  reason.focus();
}

function actionsFor(p, card) {
  const acts = el("div", { class: "actions" });
  if (state.role !== "operator") {
    acts.append(el("p", { class: "viewer" }, "You may look, not answer: answering takes one of the console's operator groups."));
    return acts;
  }
  switch (kindOf(p)) {
    case "approval":
      acts.append(el("button", { class: "approve", onclick: () => answer(p, "yes") }, "Approve"),
        el("button", { class: "approve-session", onclick: () => answer(p, "yes", "", "session") }, "Approve for session"),
        el("button", { class: "approve-host", onclick: () => answer(p, "yes", "", "host") }, `Approve for ${p.host}, 1 h`),
        el("button", { class: "always", onclick: () => always(p, card) }, "Always…"),
        el("button", { class: "deny", onclick: () => deny(p, card) }, "Deny"));
      break;
    case "budget": {
      const raise = (bodyOf(p).description || "").match(/go on with (.*)\?$/);
      acts.append(el("button", { class: "approve raise", onclick: () => answer(p, "yes") }, "Raise" + (raise ? " " + raise[1] : "") + " and go on"),
        el("button", { class: "deny end", onclick: () => answer(p, "no", "budget not raised") }, "End the session"));
      break;
    }
    case "confirm":
      acts.append(el("button", { class: "approve", onclick: () => answer(p, true) }, "Yes"),
        el("button", { class: "deny", onclick: () => answer(p, false) }, "No"));
      break;
    case "select":
      for (const o of p.options || []) acts.append(el("button", { class: "option", onclick: () => answer(p, o) }, o));
      break;
    case "multi": {
      const boxes = (p.options || []).map((o) => el("label", {}, el("input", { type: "checkbox", value: o }), " " + o));
      acts.append(...boxes, el("button", { onclick: () => answer(p, boxes.map((l) => l.firstChild).filter((c) => c.checked).map((c) => c.value)) }, "Answer"));
      break;
    }
    default: {
      const input = el("input", { type: "text", class: "answer", placeholder: "Your answer" });
      const send = el("button", { onclick: () => answer(p, input.value) }, "Answer");
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); send.click(); } e.stopPropagation(); });
      acts.append(input, send);
      for (const o of p.options || []) acts.append(el("button", { class: "option", onclick: () => answer(p, o) }, o));
    }
  }
  return acts;
}

// "Always…": the rule proposed from the request, shown and editable before it is saved
// in a rule supervisor's rules file on every node; the request is answered by it.
async function always(p, card) {
  const acts = card.querySelector(".actions");
  if (acts.querySelector(".always-form")) { acts.querySelector(".always-form textarea").focus(); return; }
  const form = el("form", { class: "always-form" });
  acts.append(form);
  form.append(el("p", { class: "hint" }, "Proposing a rule…"));
  let prop;
  try { prop = await (await fetch("/api/rules/propose?id=" + encodeURIComponent(p.id))).json(); } catch (e) { prop = { error: String(e) }; }
  form.replaceChildren();
  if (prop.error && !(prop.rules && prop.rules.length)) {
    form.append(el("p", { class: "outcome refused" }, "No rule can be saved: " + prop.error));
    return;
  }
  const verdict = el("select", { class: "verdict", "aria-label": "verdict" },
    el("option", { value: "allow" }, "Always allow"), el("option", { value: "deny" }, "Always deny"));
  const sup = el("select", { class: "supervisor", "aria-label": "supervisor" },
    ...(prop.supervisors || []).map((n) => el("option", n === prop.supervisor ? { value: n, selected: "" } : { value: n }, n)));
  const rules = el("textarea", { class: "rules", rows: String(Math.max(1, (prop.rules || []).length)), "aria-label": "rules, one per line", spellcheck: "false" });
  rules.value = (prop.rules || []).join("\n");
  rules.addEventListener("keydown", (e) => e.stopPropagation());
  const note = el("input", { type: "text", class: "note", placeholder: "Why (kept beside the rule)", "aria-label": "note" });
  note.addEventListener("keydown", (e) => e.stopPropagation());
  const save = el("button", { type: "submit", class: "save-rule" }, "Save rule and answer");
  const out = el("p", { class: "rule-outcome", role: "status" });
  form.append(el("p", { class: "hint" }, "Saved in the rules file of supervisor ", sup,
    " on every node that runs it, and applied by their reload. Edit the rule, one per line:"),
    verdict, rules, note, save, out);
  if (prop.error) form.append(el("p", { class: "outcome refused" }, prop.error));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    save.disabled = true;
    out.textContent = "Saving on every node…";
    let reply;
    try {
      reply = await (await fetch("/api/rules", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: p.id, supervisor: sup.value, verdict: verdict.value, note: note.value,
          rules: rules.value.split("\n").map((r) => r.trim()).filter((r) => r) }) })).json();
    } catch (err) { reply = { ok: false, error: String(err) }; }
    if (!reply.ok) { save.disabled = false; out.className = "rule-outcome refused"; out.textContent = "refused: " + reply.error; return; }
    const nodes = (reply.nodes || []).map((n) => n.node).join(", ");
    out.className = "rule-outcome";
    out.textContent = `saved on ${nodes}; answered ${verdict.value === "allow" ? '"yes"' : '"no"'} as human:${state.me} by the rule`;
    loadRules();
  });
  rules.focus();
}

// ---- what the agent asks about: the tool's input, shown as text, never as HTML ----

// Characters that hide or reorder what a person reads (Trojan Source: bidirectional
// overrides, zero-width characters) and terminal controls (ANSI escapes): each is
// shown as a visible mark, and the card says the input holds them.
const hidden = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
const maxShown = 20000; // characters of one block; the audit holds all of it

function visible(s) {
  s = String(s);
  if (s.length > maxShown) s = s.slice(0, maxShown) + `\n… ${s.length - maxShown} more characters (the audit holds them all)`;
  return s.replace(hidden, (ch) => "⟨U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩");
}

// hiddenIn counts such characters in every string of v, shown or not.
function hiddenIn(v) {
  if (typeof v === "string") return (v.match(hidden) || []).length;
  if (v && typeof v === "object") return Object.entries(v).reduce((n, [k, e]) => n + hiddenIn(k) + hiddenIn(e), 0);
  return 0;
}

function block(cls, text) { return el("pre", { class: cls }, visible(text)); }

// diffBlock colours a unified diff (or -/+ lines) line by line.
function diffBlock(lines) {
  const pre = el("pre", { class: "diff" });
  for (const line of lines) {
    const cls = line.startsWith("+") ? "ins" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(el("span", cls ? { class: cls } : {}, visible(line)));
  }
  return pre;
}

function edit(oldText, newText) {
  return [...String(oldText || "").split("\n").map((l) => "-" + l), ...String(newText || "").split("\n").map((l) => "+" + l)];
}

// inputOf renders the tool and input a request names: a command, an edit as a diff, a
// file's new content, Codex's changes with their diffs; anything else as JSON. Each
// comes with the whole input as JSON, folded.
function inputOf(p) {
  const b = bodyOf(p);
  const input = b.input && typeof b.input === "object" ? b.input : null;
  if (!b.tool && !input) return null;
  const box = el("div", { class: "input" });
  const file = input && (input.file_path || input.notebook_path || input.path);
  box.append(el("div", { class: "tool" }, visible((b.tool || "input") + (file ? " " + file : ""))));
  if (input) {
    if (typeof input.command === "string") box.append(block("command", input.command));
    else if (Array.isArray(input.command)) box.append(block("command", input.command.join(" ")));
    if ("old_string" in input || "new_string" in input) box.append(diffBlock(edit(input.old_string, input.new_string)));
    for (const e of Array.isArray(input.edits) ? input.edits : []) box.append(diffBlock(edit(e.old_string, e.new_string)));
    if (typeof input.content === "string") box.append(block("content", input.content));
    for (const ch of Array.isArray(input.changes) ? input.changes : []) {
      box.append(el("div", { class: "tool" }, visible(ch.path || "")));
      if (ch.diff) box.append(diffBlock(String(ch.diff).split("\n")));
    }
  }
  const full = el("details", { class: "full" }, el("summary", {}, "Full input"));
  full.append(block("json", JSON.stringify(input !== null ? input : b, null, 2)));
  box.append(full);
  return box;
}

// ---- many at once: filter the requests, select approvals, answer them alike ----

function toolOf(p) { return bodyOf(p).tool || ""; }

function shown(p) {
  const f = state.filter;
  return (!f.host || p.host === f.host) && (!f.session || p.session.includes(f.session)) &&
    (!f.tool || toolOf(p) === f.tool) && (!f.risk || p.risk === f.risk);
}

function selectable(p) { return p.state === "pending" && p.type === "approval" && state.role === "operator"; }

function renderSelection() {
  for (const id of [...state.selected]) {
    const p = state.pending.get(id);
    if (!p || !selectable(p) || !shown(p)) state.selected.delete(id);
  }
  const n = state.selected.size;
  document.getElementById("bulk").hidden = n === 0; // the bulk bar comes with a selection
  document.getElementById("selected-count").textContent = n ? n + " selected" : "none selected";
  document.getElementById("bulk-approve").disabled = n === 0;
  document.getElementById("bulk-deny").disabled = n === 0;
  for (const box of document.querySelectorAll(".request input.pick")) box.checked = state.selected.has(box.closest(".request").dataset.id);
}

function options(select, values) {
  const keep = select.value;
  select.replaceChildren(select.firstElementChild, ...[...values].sort().map((v) => el("option", {}, v)));
  select.value = keep;
}

async function answerSelected(value, reason) {
  const ids = [...state.selected];
  const out = document.getElementById("bulk-outcome");
  out.textContent = `answering ${ids.length}…`;
  let results = [];
  try {
    const r = await fetch("/api/respond/bulk", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ids, value, reason: reason || "" }) });
    const reply = await r.json();
    if (!r.ok) { out.textContent = "refused: " + reply.error; return; }
    results = reply.results;
  } catch (e) { out.textContent = "refused: " + e; return; }
  const refused = results.filter((x) => !x.ok);
  out.textContent = `answered ${results.length - refused.length} of ${results.length} ${JSON.stringify(value)} as human:${state.me}` +
    (refused.length ? "; refused: " + refused.map((x) => x.id + " (" + x.error + ")").join(", ") : "");
  state.selected.clear();
  document.getElementById("select-shown").checked = false;
  renderSelection();
}

function scopeText(scope, host) {
  return scope === "session" ? " for the rest of the session" : scope === "host" ? ` for every session of ${host} for an hour` :
    scope === "rule" ? " and saved as a rule" : "";
}

// ---- standing answers: given for a session or a host, revocable ----

async function loadGrants() {
  let reply;
  try { reply = await (await fetch("/api/grants")).json(); } catch (e) { return; }
  const body = document.querySelector("#grants tbody");
  body.replaceChildren(...(reply.grants || []).map((g) => el("tr", { "data-id": g.id },
    el("td", {}, g.scope === "host" ? "host " + g.host : "session ", g.scope === "host" ? null : el("a", { href: "#/session/" + g.session }, g.session)),
    el("td", {}, visible(g.type + ": " + g.text)),
    el("td", {}, show(g.value)),
    el("td", {}, g.by),
    el("td", {}, g.expires ? utc(g.expires) : "the session's end"),
    el("td", {}, state.role === "operator" ? el("button", { class: "revoke", onclick: (e) => revoke(g, e.target) }, "Revoke") : null))));
  document.getElementById("grants").hidden = !reply.grants || reply.grants.length === 0;
  document.getElementById("grants-empty").hidden = !!(reply.grants && reply.grants.length);
  document.getElementById("grants-empty").textContent = reply.error ? "Not known: " + reply.error : "None.";
}

async function revoke(g, button) {
  button.disabled = true;
  let reply;
  try {
    reply = await (await fetch("/api/grants/" + encodeURIComponent(g.id) + "/revoke", { method: "POST" })).json();
  } catch (e) { reply = { ok: false, error: String(e) }; }
  if (!reply.ok) { button.disabled = false; button.textContent = "Revoke (" + reply.error + ")"; return; }
  loadGrants();
}

// ---- daily budgets: each host's day against [budgets.daily], raised by a person ----

const usd = (n, places) => "$" + (n || 0).toFixed(places);

async function loadBudgets() {
  let reply;
  try { reply = await (await fetch("/api/budgets")).json(); } catch (e) { return; }
  document.getElementById("budgets-section").hidden = !reply.limit_usd;
  document.getElementById("nav-budgets").hidden = !reply.limit_usd;
  const problem = document.getElementById("budgets-error");
  problem.hidden = !reply.error;
  problem.textContent = reply.error ? "Not known: " + reply.error : "";
  const body = document.querySelector("#budgets tbody");
  const typing = body.contains(document.activeElement); // a raise being written is not redrawn away
  if (typing) return;
  body.replaceChildren(...(reply.days || []).map((d) => el("tr", { "data-host": d.host, class: d.state },
    el("td", {}, d.host),
    el("td", {}, usd(d.cost_usd, 4), d.unpriced ? el("div", { class: "hint" }, d.unpriced + " unpriced") : null),
    el("td", {}, usd(d.limit_usd, 2)),
    el("td", { title: (d.raises || []).map((r) => `+${usd(r.usd, 2)} by ${r.by}${r.note ? ": " + r.note : ""}`).join("\n") },
      d.raised_usd ? "+" + usd(d.raised_usd, 2) + " (" + (d.raises || []).map((r) => r.by).join(", ") + ")" : "-"),
    el("td", { class: d.state === "held" ? "state refused" : "state" }, d.state === "held" ? "held: they wait in the queue" : "taken"),
    el("td", {}, state.role === "operator" ? raiseForm(d) : null))));
}

function raiseForm(d) {
  const amount = el("input", { type: "number", class: "raise-usd", min: "0.01", step: "0.01", required: "", placeholder: "USD", "aria-label": "US dollars to raise " + d.host + "'s budget by" });
  const note = el("input", { type: "text", class: "raise-note", placeholder: "why", "aria-label": "why" });
  const out = el("span", { class: "raise-outcome", role: "status" });
  return el("form", { class: "raise", onsubmit: async (e) => {
    e.preventDefault();
    const button = e.target.querySelector("button");
    button.disabled = true;
    let reply;
    try {
      reply = await (await fetch("/api/budgets/" + encodeURIComponent(d.host) + "/raise", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ usd: Number(amount.value), note: note.value }) })).json();
    } catch (err) { reply = { error: String(err) }; }
    button.disabled = false;
    if (reply.error) { out.className = "raise-outcome refused"; out.textContent = "not raised: " + reply.error; return; }
    out.className = "raise-outcome"; out.textContent = `raised to ${usd(reply.limit_usd, 2)} (${reply.node})`;
    document.activeElement.blur();
    loadBudgets();
  } }, amount, note, el("button", { type: "submit", class: "raise-budget" }, "Raise"), out);
}

// ---- policy from history: shadow supervisors, and rules suggested from approvals ----

const pct = (x) => Math.round(100 * x) + "%";

async function loadShadows() {
  let reply;
  try { reply = await (await fetch("/api/policy/shadow")).json(); } catch (e) { return; }
  const shadows = reply.shadows || [];
  document.querySelector("#shadows tbody").replaceChildren(...shadows.map((s) => el("tr", { "data-shadow": s.supervisor },
    el("td", {}, s.supervisor), el("td", {}, String(s.decided)), el("td", {}, String(s.agreed)),
    el("td", {}, String(s.disagreed)), el("td", {}, String(s.no_answer)), el("td", {}, pct(s.agreement)),
    el("td", {}, String(s.allows_denied)),
    el("td", { class: "promoted" }, s.promoted ? `by ${s.promoted.by.replace(/^human:/, "")} ${utc(s.promoted.at)}` : ""),
    el("td", {}, state.role === "operator" ? shadowAction(s) : null))));
  document.getElementById("shadows").hidden = shadows.length === 0;
  document.getElementById("shadows-empty").hidden = shadows.length > 0;
  if (reply.error) { document.getElementById("shadows-empty").hidden = false; document.getElementById("shadows-empty").textContent = "Not known: " + reply.error; }
  const off = reply.disagreed || [];
  document.querySelector("#disagreements tbody").replaceChildren(...off.map((r) => el("tr", { "data-session": r.session, "data-request": r.request },
    el("td", {}, utc(r.time)),
    el("td", {}, el("a", { href: "#/session/" + r.session }, r.session)),
    el("td", {}, visible(r.text || r.request)),
    el("td", {}, show(r.value) + " by " + r.decider),
    el("td", {}, r.reason || ""))));
  document.getElementById("disagreements").hidden = off.length === 0;
}

// shadowAction promotes a shadow that clears the bar, or demotes a promoted one; the
// outcome stays below the table as the table is read again.
function shadowAction(s) {
  const act = s.promoted ? "demote" : "promote";
  if (!s.promoted && s.not_promotable) return el("span", { class: "hint not-promotable" }, "not promotable: " + s.not_promotable);
  return el("button", { type: "button", class: act, onclick: async (e) => {
    e.target.disabled = true;
    let reply;
    try {
      reply = await (await fetch(`/api/policy/shadow/${encodeURIComponent(s.supervisor)}/${act}`, { method: "POST",
        headers: { "Content-Type": "application/json" }, body: "{}" })).json();
    } catch (err) { reply = { error: String(err) }; }
    e.target.disabled = false;
    const out = document.getElementById("shadows-outcome");
    out.className = reply.error ? "refused" : "";
    out.textContent = reply.error ? `${s.supervisor} not ${act}d: ${reply.error}` :
      act === "promote" ? `${s.supervisor} promoted: ${(reply.routes || []).join("; ")}` : `${s.supervisor} demoted`;
    if (!reply.error) loadShadows();
  } }, act === "promote" ? "Promote" : "Demote");
}

async function loadSuggestions() {
  const note = document.getElementById("suggestions-note");
  note.textContent = "Reading the audit…";
  let reply;
  try { reply = await (await fetch("/api/policy/suggest")).json(); } catch (e) { note.textContent = "Not known: " + e; return; }
  const list = reply.suggestions || [];
  document.querySelector("#suggestions tbody").replaceChildren(...list.map((s) => el("tr", { "data-rule": s.rule },
    el("td", {}, el("code", {}, s.rule)),
    el("td", {}, String(s.support)),
    el("td", {}, pct(s.agreement)),
    el("td", {}, (s.deciders || []).map((d) => `${d.decider} (${d.n})`).join(", ")),
    el("td", {}, visible(s.example || "")),
    el("td", {}, state.role === "operator" && (reply.supervisors || []).length ? promoteForm(s, reply.supervisors) : null))));
  document.getElementById("suggestions").hidden = list.length === 0;
  note.textContent = reply.error ? "Not known: " + reply.error :
    list.length ? (reply.supervisors || []).length ? "" : "No rule supervisor has a rules_file to promote them to." : "No rule is suggested: too few approvals agree.";
  document.getElementById("refused").replaceChildren(...(reply.refused || []).map((r) => el("li", {}, el("code", {}, r.rule), " not suggested: " + r.why)));
}

function promoteForm(s, supervisors) {
  const pick = el("select", { class: "promote-to", "aria-label": "the rule supervisor whose rules file takes it" }, ...supervisors.map((n) => el("option", { value: n }, n)));
  const out = el("span", { class: "promote-outcome", role: "status" });
  const note = `allows ${s.support} past requests, ${pct(s.agreement)} approved (${(s.deciders || []).map((d) => d.decider + " " + d.n).join(", ")}); e.g. ${s.example || ""}`;
  return el("span", {}, pick, el("button", { type: "button", class: "promote", onclick: async (e) => {
    e.target.disabled = true;
    let reply;
    try {
      reply = await (await fetch("/api/rules", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ supervisor: pick.value, verdict: "allow", rules: [s.rule], note: note.slice(0, 500) }) })).json();
    } catch (err) { reply = { ok: false, error: String(err) }; }
    e.target.disabled = false;
    out.className = reply.ok ? "promote-outcome" : "promote-outcome refused";
    out.textContent = reply.ok ? `promoted to ${pick.value}'s rules file` : "not promoted: " + reply.error;
    if (reply.ok) loadRules();
  } }, "Promote"), out);
}

// ---- rules: the rules files of the fleet's rule supervisors ----

async function loadRules() {
  let reply;
  try { reply = await (await fetch("/api/rules")).json(); } catch (e) { return; }
  const rows = [];
  for (const f of reply.files || []) {
    const where = f.nodes.join(", ") + (f.differs && f.differs.length ? " (differs on " + f.differs.join(", ") + ")" : "");
    if (f.error) rows.push(el("tr", {}, el("td", {}, f.supervisor), el("td", { colspan: "5", class: "refused" }, f.error)));
    for (const v of ["deny", "ask", "allow"]) {
      for (const e of (f.rules && f.rules[v]) || []) {
        rows.push(el("tr", { "data-rule": e.rule, "data-supervisor": f.supervisor },
          el("td", { title: f.path + " on " + where }, f.supervisor,
            f.differs && f.differs.length ? el("div", { class: "refused" }, "other rules on " + f.differs.join(", ")) : null),
          el("td", {}, v),
          el("td", {}, el("code", {}, visible(e.rule)), e.note ? el("div", { class: "hint" }, visible(e.note)) : null),
          el("td", {}, e.by || "the file"),
          el("td", {}, e.at ? utc(e.at) : ""),
          el("td", {}, state.role === "operator" ? el("button", { class: "remove-rule", onclick: (ev) => removeRule(f.supervisor, v, e.rule, ev.target) }, "Remove") : null)));
      }
    }
  }
  document.querySelector("#rules tbody").replaceChildren(...rows);
  document.getElementById("rules").hidden = rows.length === 0;
  document.getElementById("rules-empty").hidden = rows.length > 0;
  document.getElementById("rules-empty").textContent = reply.error ? "Not known: " + reply.error : "None.";
}

async function removeRule(supervisor, verdict, rule, button) {
  button.disabled = true;
  let reply;
  try {
    reply = await (await fetch("/api/rules", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ supervisor, verdict, rules: [rule], remove: true }) })).json();
  } catch (e) { reply = { ok: false, error: String(e) }; }
  if (!reply.ok) { button.disabled = false; button.textContent = "Remove (" + reply.error + ")"; return; }
  loadRules();
}

function settledText(p) {
  switch (p.state) {
    case "answered": case "delivered": return `answered ${JSON.stringify(p.value)} by ${p.via === "token" ? "token" : "human"}:${p.responder}` +
      scopeText(p.scope, p.host) + (p.reason ? ` (${p.reason})` : "");
    case "cancelled": {
      const why = (p.cancelled || "").replace(/^cancelled:?\s*/, ""); // said once, however the node worded it
      return why ? "cancelled: " + why : "cancelled";
    }
    default: return "";
  }
}

function card(p) {
  const settled = p.state !== "pending";
  const c = el("article", { class: "request" + (settled ? " settled" : ""), "data-id": p.id, tabindex: "0" });
  c.addEventListener("focus", () => { state.focused = p.id; });
  const created = Date.parse(p.created), deadline = Date.parse(p.deadline);
  const pick = selectable(p) ? el("input", { type: "checkbox", class: "pick", "aria-label": "select " + p.id, onchange: (e) => {
    if (e.target.checked) state.selected.add(p.id); else state.selected.delete(p.id);
    renderSelection();
  } }) : null;
  c.append(
    el("div", { class: "meta" }, pick,
      el("span", {}, p.type + " · " + p.host),
      el("a", { href: "#/session/" + p.session }, p.session),
      p.node ? el("span", {}, "node " + p.node) : null,
      el("span", { class: "age", "data-since": String(created) }, "asked " + seconds(Date.now() - created) + " ago"),
      settled ? null : el("span", { class: "countdown", "data-deadline": String(deadline) }, seconds(deadline - Date.now()) + " left"),
      p.risk ? el("span", { class: "risk risk-" + p.risk }, "risk " + p.risk) : null,
      el("span", { class: "default" }, "then the default: " + (show(p.default) || "none"))));
  c.append(el("div", { class: "text" }, visible(p.text)));
  const input = inputOf(p);
  if (input) c.append(input);
  const marked = hiddenIn(p.text) + hiddenIn(bodyOf(p).input);
  if (marked) {
    c.append(el("div", { class: "hidden-chars", role: "alert" }, `Beware: this request holds ${marked} invisible, ` +
      "direction-changing or control characters, shown as ⟨U+…⟩: what you read may not be what runs."));
  }
  if (p.suggestion || p.escalation) {
    c.append(el("div", { class: "suggestion" },
      p.suggestion ? "Suggested: " + show(p.suggestion) + ". " : "", p.escalation ? "Escalated: " + p.escalation : ""));
  }
  for (const k of p.conflicts || []) {
    c.append(el("div", { class: "conflict" }, `Beware: session ${k.session} (host ${k.host}, branch ${k.branch}) ` +
      (k.kind === "changed" ? "has changed " : "is about to change ") + k.paths.join(", ") + ", " + seconds(Date.now() - k.time) + " ago."));
  }
  if (!settled) c.append(actionsFor(p, c));
  c.append(el("div", { class: "outcome" }, settledText(p)));
  return c;
}

// renderPending puts the requests that can still be answered under "Waiting for a
// person", soonest deadline first, and the settled ones, latest first, in the collapsed
// "Recently settled". A card keeps its element (and focus) while its state holds.
function renderPending() {
  const waiting = document.getElementById("pending"), settled = document.getElementById("settled-list");
  const all = [...state.pending.values()];
  const open = all.filter((p) => p.state === "pending")
    .sort((a, b) => Date.parse(a.deadline) - Date.parse(b.deadline) || a.id.localeCompare(b.id));
  const done = all.filter((p) => p.state !== "pending")
    .sort((a, b) => Date.parse(b.answered_at || b.deadline) - Date.parse(a.answered_at || a.deadline) || a.id.localeCompare(b.id));
  place(waiting, open);
  place(settled, done);
  const wanted = state.wanted && waiting.querySelector(`.request[data-id="${state.wanted}"]`);
  if (wanted) { state.wanted = ""; wanted.scrollIntoView({ block: "center" }); wanted.focus(); }
  for (const c of waiting.children) c.hidden = !shown(state.pending.get(c.dataset.id));
  const form = document.getElementById("filter");
  options(form.elements.host, new Set(open.map((p) => p.host)));
  options(form.elements.tool, new Set(open.map(toolOf).filter(Boolean)));
  renderSelection();
  const count = String([...waiting.children].filter((c) => !c.hidden).length); // what it shows
  document.getElementById("pending-count").textContent = count;
  document.getElementById("nav-count").textContent = count;
  document.getElementById("settled-count").textContent = String(done.length);
  document.getElementById("settled").hidden = done.length === 0;
  document.getElementById("pending-empty").hidden = open.length > 0;
}

// place makes box hold the cards of list, in its order, reusing a card (from either
// list) whose request's state has not changed.
function place(box, list) {
  const keep = new Set(list.map((p) => p.id));
  for (const old of [...box.children]) if (!keep.has(old.dataset.id)) old.remove();
  list.forEach((p, i) => {
    let c = document.querySelector(`.request[data-id="${p.id}"]`);
    const want = p.state + "|" + (p.responder || "");
    if (!c || c.dataset.rendered !== want) {
      const fresh = card(p);
      fresh.dataset.rendered = want;
      const refused = c && c.querySelector(".outcome.refused");
      if (refused) { const out = fresh.querySelector(".outcome"); out.className = "outcome refused"; out.textContent = refused.textContent; }
      const hadFocus = c && c.contains(document.activeElement);
      if (c) c.remove();
      c = fresh;
      box.insertBefore(c, box.children[i] || null);
      if (hadFocus) c.focus();
    }
    if (box.children[i] !== c) box.insertBefore(c, box.children[i] || null);
  });
}

function tick() {
  const now = Date.now();
  for (const e of document.querySelectorAll(".countdown")) e.textContent = seconds(Number(e.dataset.deadline) - now) + " left";
  for (const e of document.querySelectorAll(".age")) e.textContent = "asked " + seconds(now - Number(e.dataset.since)) + " ago";
  for (const e of document.querySelectorAll("td.duration[data-started]")) e.textContent = seconds(now - Number(e.dataset.started));
}

// ---- sessions ----

function renderSessions() {
  const body = document.querySelector("#sessions tbody");
  const q = document.getElementById("search").value.trim().toLowerCase();
  const rows = [...state.sessions.values()]
    .filter((s) => !q || [s.id, s.host, s.node, s.state, s.last, s.pipeline, s.stage].some((f) => (f || "").toLowerCase().includes(q)))
    .sort((a, b) => ((a.state === "running") === (b.state === "running") ? b.last_at - a.last_at : a.state === "running" ? -1 : 1));
  body.replaceChildren(...rows.map((s) => el("tr", { "data-session": s.id },
    el("td", {}, el("a", { href: "#/session/" + s.id }, s.id)),
    el("td", {}, s.host + (s.stage ? ` (${s.pipeline}/${s.stage})` : "")),
    el("td", {}, s.node || ""),
    el("td", { class: "state-" + (s.paused ? "paused" : s.state) }, s.paused ? "paused: " + s.paused : s.state + (s.error ? ": " + s.error : "")),
    s.state === "running" ? el("td", { class: "duration", "data-started": String(s.started) }, seconds(Date.now() - s.started))
      : el("td", { class: "duration" }, seconds(s.duration_ms || 0)),
    el("td", { class: "cost", title: spendText(s.spend) }, s.spend ? "$" + s.spend.cost_usd.toFixed(4) + (s.spend.unpriced ? "+" : "") : ""),
    el("td", {}, s.last, s.conflict && s.state === "running" ? el("span", { class: "conflict" }, " ⚠ " + s.conflict) : null))));
}

// spendText says what a session's model calls cost, model by model.
function spendText(sp) {
  if (!sp) return "";
  return (sp.models || []).map((m) => `${m.model || "(unnamed model)"}: ${m.input_tokens} in, ${m.output_tokens} out` +
    (m.cache_read_tokens ? `, ${m.cache_read_tokens} cache reads` : "") + (m.priced_by ? `, $${m.cost_usd.toFixed(4)} (${m.priced_by})` : ", unpriced")).join("\n");
}

// ---- one session ----

let sessionStream = null;

function trailRow(r) {
  let text = r.text || "";
  if (r.value !== undefined && r.value !== null) text = (text ? text + " → " : "") + show(r.value);
  if (r.reason) text = text ? text + " — " + r.reason : r.reason; // an answer's, a resume's, a pause's
  if (r.error) text = (text ? text + " " : "") + r.error;
  return el("tr", { "data-kind": r.kind },
    el("td", {}, utc(r.time, true)), el("td", {}, String(r.attempt)), el("td", { class: "node" }, r.node || ""), el("td", {}, r.kind),
    el("td", {}, r.request || ""), el("td", {}, text), el("td", {}, r.outcome || ""),
    el("td", {}, r.decider ? r.decider + (r.claimed ? ` (claims ${r.claimed})` : "") : ""),
    el("td", {}, r.latency_ms ? r.latency_ms.toFixed(1) + " ms" : ""));
}

// ---- the audit, across sessions ----

async function searchAudit(form) {
  const q = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (v) q.set(k, v);
  const status = document.getElementById("audit-status");
  status.textContent = "searching…";
  const r = await fetch("/api/audit?" + q.toString());
  if (!r.ok) {
    const body = await r.text();
    let why = body.trim();
    try { why = JSON.parse(body).error || why; } catch { /* not JSON: say it as it is */ }
    status.textContent = why || r.statusText;
    return;
  }
  const res = await r.json();
  const table = document.getElementById("audit-results");
  table.tBodies[0].replaceChildren(...res.records.map((rec) => {
    const row = trailRow(rec);
    const link = el("a", { href: "#/session/" + encodeURIComponent(rec.session) }, rec.session);
    row.cells[1].replaceWith(el("td", { class: "session" }, link)); // the attempt's cell holds the session here
    row.cells[8].remove(); // no latency column
    return row;
  }));
  table.hidden = res.records.length === 0;
  status.textContent = res.records.length === 0 ? "No record matches." :
    res.records.length + " records" + (res.more ? ", and more: narrow the search to see them" : "");
}

async function loadTrail(id) {
  const r = await fetch("/api/sessions/" + encodeURIComponent(id));
  const records = r.ok ? await r.json() : [];
  document.querySelector("#trail tbody").replaceChildren(...records.map(trailRow));
}

// loadCheckpoints lists the session's checkpoints: where it can be brought back from.
async function loadCheckpoints(id) {
  const r = await fetch("/api/sessions/" + encodeURIComponent(id) + "/checkpoints");
  const list = r.ok ? await r.json() : [];
  document.getElementById("checkpoints-section").hidden = list.length === 0;
  document.querySelector("#checkpoints tbody").replaceChildren(...list.map((c) => el("tr", { "data-seq": String(c.seq) },
    el("td", {}, String(c.seq)), el("td", {}, utc(c.time, true)), el("td", {}, String(c.attempt)), el("td", {}, c.node),
    el("td", {}, c.why), el("td", {}, (c.parts || []).map((p) => p.name).join(", ")), el("td", {}, String(c.bytes)))));
}

// renderResult shows how a session ended, its result's text as text and its other
// fields (a typed result's data too) as a table, not as raw JSON.
function renderResult(ended) {
  const section = document.getElementById("result-section");
  section.hidden = false;
  const how = ended.outcome === "ok" ? "ok" : (ended.outcome || "error") + (ended.error ? ": " + ended.error : "");
  document.getElementById("result-outcome").textContent = how + (ended.duration_ms ? ", in " + seconds(ended.duration_ms) : "") +
    (ended.node ? ", on node " + ended.node : "") + (ended.attempt ? ", attempt " + ended.attempt : "");
  const box = document.getElementById("result");
  box.replaceChildren();
  const fields = Object.assign({}, ended.data && typeof ended.data === "object" ? ended.data : {},
    ended.result && typeof ended.result === "object" ? ended.result : {});
  if (ended.result !== undefined && (typeof ended.result !== "object" || ended.result === null)) fields.result = ended.result;
  delete fields.type;
  if (typeof fields.text === "string") { box.append(el("p", { class: "result-text" }, visible(fields.text))); delete fields.text; }
  const rows = Object.entries(fields).map(([k, v]) => el("tr", {}, el("th", {}, k),
    el("td", {}, typeof v === "object" && v !== null ? el("code", {}, JSON.stringify(v)) : visible(String(v)))));
  if (rows.length) box.append(el("table", { class: "result-fields" }, el("tbody", {}, ...rows)));
}

function openSession(id) {
  document.getElementById("home").hidden = true;
  document.getElementById("session").hidden = false;
  document.getElementById("result-section").hidden = true;
  document.getElementById("session-id").textContent = id;
  document.getElementById("events").replaceChildren();
  document.querySelector("#trail tbody").replaceChildren();
  document.querySelector("#checkpoints tbody").replaceChildren();
  document.getElementById("checkpoints-section").hidden = true;
  if (sessionStream) sessionStream.close();
  sessionStream = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/stream");
  // Each (re)connection sends the session's kept events first: start the list afresh.
  sessionStream.onopen = () => document.getElementById("events").replaceChildren();
  sessionStream.onmessage = (m) => {
    const e = JSON.parse(m.data);
    document.getElementById("events").append(el("li", { "data-type": e.type }, utc(e.time, true) + " " + e.type + " " + JSON.stringify(e.data)));
    if (e.type === "session.ended") renderResult(e.data);
    if (e.type === "request.answered" || e.type === "session.ended" || e.type === "session.started" ||
      e.type === "session.resumed" || e.type === "session.paused") loadTrail(id);
    if (e.type === "checkpoint.saved") loadCheckpoints(id);
  };
  loadTrail(id);
  loadCheckpoints(id);
}

function route() {
  const m = location.hash.match(/^#\/session\/([A-Za-z0-9_-]+)$/);
  if (m) { openSession(m[1]); return; }
  const r = location.hash.match(/^#\/request\/([A-Za-z0-9_-]+)$/);
  state.wanted = r ? r[1] : ""; // a notification's link: focus that request once it is shown
  if (sessionStream) { sessionStream.close(); sessionStream = null; }
  document.getElementById("session").hidden = true;
  document.getElementById("home").hidden = false;
  const anchor = /^#[a-z-]+$/.test(location.hash) && document.querySelector(location.hash); // a section's link
  if (anchor) anchor.scrollIntoView();
}

// ---- the stream ----

// ---- notifications: a request that arrives while one is elsewhere ----

function tell(list) {
  const fresh = list.filter((p) => p.state === "pending" && !(state.seen && state.seen.has(p.id)));
  const first = state.seen === null;
  state.seen = state.seen || new Set();
  for (const p of fresh) state.seen.add(p.id);
  if (first || state.role !== "operator" || !("Notification" in window) || Notification.permission !== "granted" || !("serviceWorker" in navigator)) return;
  navigator.serviceWorker.ready.then((reg) => {
    for (const p of fresh) {
      reg.showNotification(`${p.type} on ${p.host}`, { body: visible(p.text).slice(0, 240), tag: p.id,
        data: { url: "/#/request/" + p.id }, requireInteraction: true });
    }
  });
}

function offerNotifications() {
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => { /* no notifications then */ });
  const button = document.getElementById("notify");
  if (state.role !== "operator" || !("Notification" in window) || Notification.permission !== "default") return;
  button.hidden = false;
  button.addEventListener("click", async () => {
    await Notification.requestPermission();
    button.hidden = Notification.permission === "default";
  });
}

function connect() {
  const status = document.getElementById("status");
  const es = new EventSource("/api/stream");
  es.onopen = () => { status.textContent = "live"; status.className = "status live"; };
  es.onerror = () => { status.textContent = "reconnecting…"; status.className = "status"; };
  es.onmessage = (m) => {
    const u = JSON.parse(m.data);
    if (u.type === "snapshot") { state.pending.clear(); state.sessions.clear(); }
    for (const p of u.pending || []) state.pending.set(p.id, p);
    for (const s of u.sessions || []) state.sessions.set(s.id, s);
    tell(u.pending || []);
    if ((u.pending || []).some((p) => p.state === "delivered" && p.scope)) loadGrants(); // a grant, stored as it was delivered
    if (u.pending || u.type === "snapshot") renderPending();
    if (u.sessions || u.type === "snapshot") renderSessions();
  };
}

document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
  const c = document.activeElement && document.activeElement.closest && document.activeElement.closest(".request");
  if (!c) return;
  const p = state.pending.get(c.dataset.id);
  if (!p || p.state !== "pending" || state.role !== "operator") return;
  const key = e.key.toLowerCase();
  if (key === "a" && kindOf(p) === "approval") { e.preventDefault(); answer(p, "yes"); }
  if (key === "d" && kindOf(p) === "approval") { e.preventDefault(); deny(p, c); }
});

document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("search").addEventListener("input", renderSessions);
  document.getElementById("search").addEventListener("keydown", (e) => {
    const q = e.target.value.trim();
    if (e.key === "Enter" && /^[A-Za-z0-9_-]+$/.test(q)) location.hash = "#/session/" + q;
  });
  window.addEventListener("hashchange", route);
  document.getElementById("audit-search").addEventListener("submit", (e) => { e.preventDefault(); searchAudit(e.target); });
  const filter = document.getElementById("filter");
  filter.addEventListener("submit", (e) => e.preventDefault());
  filter.addEventListener("input", (e) => {
    if (e.target.id === "select-shown") {
      for (const p of state.pending.values()) if (selectable(p) && shown(p)) { if (e.target.checked) state.selected.add(p.id); else state.selected.delete(p.id); }
      renderSelection();
      return;
    }
    if (!(e.target.name in state.filter)) return;
    for (const k of Object.keys(state.filter)) state.filter[k] = filter.elements[k].value.trim();
    renderPending();
  });
  document.getElementById("bulk-approve").addEventListener("click", () => answerSelected("yes"));
  document.getElementById("bulk-deny").addEventListener("click", () => answerSelected("no", document.getElementById("bulk-reason").value));
  try {
    const me = await (await fetch("/api/me")).json();
    state.me = me.name;
    state.role = me.role;
    document.getElementById("me").textContent = me.role === "operator" ? "answering as " + me.decider : me.name + " (viewer)";
    document.body.classList.toggle("viewer", me.role !== "operator");
    offerNotifications();
  } catch (e) { /* the stream says whether the console is reachable */ }
  connect();
  route();
  loadGrants();
  loadRules();
  loadBudgets();
  loadShadows();
  document.getElementById("shadows-refresh").addEventListener("click", loadShadows);
  document.getElementById("suggest").addEventListener("click", loadSuggestions);
  setInterval(tick, 1000);
  setInterval(loadGrants, 10000);
  setInterval(loadRules, 30000);
  setInterval(loadBudgets, 10000);
});
