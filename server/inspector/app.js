// The myelin inspector: a page over the HTTP API (docs/serve.md). It shows
// a conversation as turns, rounds and calls, and for each call what the tool
// produced, what the model was sent and what was stored, side by side. It
// holds no state the API does not give it, and converts no text: every text
// shown is the text the API served (a request body's strings decoded from
// its JSON, as the model reads them), set as the text of an element.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  current: null,     // the conversation shown
  events: null,      // the AbortController of its event stream
  lastEvent: 0,      // the sequence number of its last event read
  finished: {},      // call_id -> the tool.finished event's data
  running: null,     // the turn running on it, when one is
  pager: null,       // the spill page shown: {path, input, page}
  roundEnded: false, // the live turn's last round ended: its next text is another round's
  drawn: "",         // what the timeline was last drawn from (drawnFrom)
  rawShown: {},      // "conversation/request n/call_id" -> its block as sent is shown
  focus: null,       // what select was asked to show: {id, call or n, follow} (showFocus)
};

function token() { return $("token").value || sessionStorage.getItem("myelin-token") || ""; }

async function api(method, path, body) {
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = new Error((data.error && data.error.message) || resp.status + " " + resp.statusText);
    err.status = resp.status;
    err.data = data;
    throw err;
  }
  return data;
}

function status(text) { $("status").textContent = text; }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

// --- conversations ---

async function loadConversations() {
  const data = await api("GET", "/v1/conversations");
  state.convs = data.conversations;
  const ul = $("conversations");
  ul.replaceChildren();
  for (const c of data.conversations) {
    // a subagent's conversation (agent--delegate) names its parent
    const li = el("li", { "data-id": c.id, onclick: () => select(c.id) },
      (c.parent ? "↳ " : c.base ? "↱ " : "") + c.id, el("span", { class: "count" }, c.messages + (c.turn ? " ▶" : "")));
    if (c.id === state.current) li.classList.add("selected");
    ul.append(li);
  }
  status("connected");
}

// select shows conversation id; at, when given, is the call to scroll to
// (a subagent's parent call); n, when given, the message (a fork's point).
async function select(id, at, n) {
  if (state.events) state.events.abort();
  state.current = id;
  state.lastEvent = 0;
  state.finished = {};
  state.drawn = "";
  state.running = null;
  state.focus = at || n ? { id, call: at, n, follow: true } : null;
  $("empty").hidden = true;
  $("conversation").hidden = false;
  $("conversation-title").textContent = "Conversation " + id;
  try {
    const info = await api("GET", "/v1/conversations/" + encodeURIComponent(id));
    state.window = info.window;
    $("conversation-title").textContent = "Conversation " + id + " · " + info.model + ", a " + info.window.toLocaleString("en") + "-token window";
    if (info.parent) {
      $("conversation-title").append(" · ", el("button", { class: "link parent", type: "button", onclick: () => select(info.parent, info.parent_call) },
        "a subagent of " + info.parent + " (call " + info.parent_call + ")"));
    }
    showTree(info);
  } catch (e) { status(e.message); }
  $("live").hidden = true;
  $("tree-note").textContent = "";
  $("asks").replaceChildren();
  for (const li of $("conversations").children) li.classList.toggle("selected", li.dataset.id === id);
  await loadMessages();
  watch(id);
}

// showFocus marks the call (or the turn or round) select was asked to
// show, after every drawing of the timeline: the event stream's replay
// draws it again (with its tool.finished events) just after select drew
// it, which once wiped the mark a moment after it was set. It scrolls to
// it too, until the reader scrolls, types or clicks themselves.
function showFocus() {
  const f = state.focus;
  if (!f || f.id !== state.current) return;
  let e = null;
  if (f.call) {
    e = document.querySelector('.call[data-call="' + CSS.escape(f.call) + '"]');
  } else if (f.n) {
    // the last turn or round that begins at or before message n
    e = Array.from(document.querySelectorAll("#timeline [data-n]")).filter((m) => Number(m.dataset.n) <= f.n).pop();
  }
  if (!e) return;
  e.classList.add("focus");
  if (f.follow) e.scrollIntoView({ block: "center" });
}
for (const ev of ["wheel", "keydown", "mousedown", "touchstart"]) {
  window.addEventListener(ev, () => { if (state.focus) state.focus.follow = false; }, { passive: true });
}

// --- forks and branches ---

// showTree shows where conversation info comes from (the conversation it
// was forked from at message N, or rewound from: a branch) and its
// branches, each a link with the point where it parts from it and a
// switch to it (docs/branches.md).
function showTree(info) {
  if (info.branch_of) {
    $("conversation-title").append(" · ", el("button", { class: "link branch-of", type: "button", onclick: () => select(info.branch_of, null, info.base_at) },
      "a branch of " + info.branch_of + " (kept by a rewind)"));
  } else if (info.base) {
    $("conversation-title").append(" · ", el("button", { class: "link fork-of", type: "button", onclick: () => select(info.base, null, info.base_at) },
      "forked from " + info.base + " at message " + info.base_at));
  }
  const brs = $("branches");
  brs.replaceChildren();
  if (!(info.branches || []).length) {
    brs.append(el("span", { class: "hint" }, "No branches."));
  } else {
    brs.append("Branches: ");
    for (const b of info.branches) {
      brs.append(el("span", { class: "branch", "data-branch": b.id },
        el("button", { class: "link branch-open", type: "button", onclick: () => select(b.id, null, b.at) }, b.id),
        " (parts at message " + b.at + ", " + b.messages + " messages) ",
        el("button", { class: "branch-switch", type: "button", onclick: () => changeHistory("switch", { branch: b.id }) }, "switch to it")));
    }
  }
}

// changeHistory posts an undo, a redo or a switch (what) of the shown
// conversation; its event (conversation.rewound or .switched) redraws
// the page.
async function changeHistory(what, body) {
  body = Object.assign({}, body || {});
  if ($("with-files").checked) body.files = true;
  try {
    const out = await api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/" + what, body);
    if (out.files) $("tree-note").textContent = filesWords(out.files);
  } catch (err) { $("tree-note").textContent = err.message; }
}

// filesWords says what a rewind did to the workspace's files.
function filesWords(f) {
  return "files: " + f.restored.length + " put back, " + f.removed.length + " removed, " + f.skipped.length + " left as they are" +
    f.skipped.map((s) => " (" + s.path + ": " + s.why + ")").join("") + "; " + f.not_tracked;
}

// reloadTree reads the shown conversation's record again, for its
// branches (after a rewind or a switch).
async function reloadTree() {
  const id = state.current;
  const info = await api("GET", "/v1/conversations/" + encodeURIComponent(id));
  if (id !== state.current) return;
  for (const b of $("conversation-title").querySelectorAll("button.branch-of, button.fork-of")) {
    b.previousSibling.remove(); // its " · "
    b.remove();
  }
  showTree(info);
}

// --- the timeline ---

async function loadMessages() {
  const id = state.current;
  const base = "/v1/conversations/" + encodeURIComponent(id);
  const data = await api("GET", base + "/messages");
  // the requests sent, by the number of the answer each produced (msg,
  // as /messages numbers it; none for a request that produced no answer;
  // a store that keeps none answers 501: the rounds then show their usage
  // alone)
  state.requests = {};
  state.requestList = [];
  // the subagents its calls started (agent--delegate), by the call that
  // started each, oldest first: a provider that repeats a call id gives
  // each of its calls a child of its own, in the order they ran
  state.children = {};
  try {
    for (const c of (await api("GET", base + "/children")).children) (state.children[c.parent_call] = state.children[c.parent_call] || []).push(c.id);
  } catch (e) { status(e.message); }
  try {
    state.requestList = (await api("GET", base + "/requests")).requests;
    for (const r of state.requestList) if (r.msg) state.requests[r.msg] = r;
  } catch (e) { /* no requests kept */ }
  // what each request, each turn and the conversation cost, as the server
  // prices them (none when it has no price table: no cost is shown, never
  // a $0)
  state.costs = null;
  try {
    const info = await api("GET", base);
    if (info.cost) state.costs = costsOf(info);
  } catch (e) { /* shown without costs */ }
  if (id !== state.current) return;
  // drawn again only when what it is drawn from changed: a drawing wipes
  // what the reader opened and where they scrolled
  const from = drawnFrom(id, data);
  if (from === state.drawn) return;
  state.drawn = from;
  render(data.messages.map((m) => m.message));
  showFocus();
}

// drawnFrom names what the timeline is drawn from: stored records only
// ever add to a conversation, so their count, and the requests', the
// subagents' and the tool.finished events' counts, say whether it changed
// (a rewind or a switch, which take records away, clears state.drawn).
function drawnFrom(id, data) {
  return JSON.stringify([id, data.messages.length, state.requestList.length, Object.values(state.children).flat().length, Object.keys(state.finished).length, state.costs && state.costs.total]);
}

// costsOf indexes a conversation's costs (GET …/{id}: cost, turn_costs):
// each turn's by its prompt's number (0: what came before the first
// prompt), each request's by the number of the record holding its usage
// and its kind.
function costsOf(info) {
  const c = { total: info.cost, turns: {}, requests: {} };
  for (const t of info.turn_costs || []) {
    c.turns[t.prompt || 0] = t;
    for (const r of t.requests) c.requests[r.msg + ":" + r.kind] = r.cost;
  }
  return c;
}

// costWords says a cost as the CLI does: "cost $0.0123"; "cost at least
// $0.0123 (why)" when part of a sum could not be priced; "cost unknown
// (why)" — never $0 for a cost that is not known.
function costWords(c) {
  const dollars = (d) => d > 0 && d < 0.00005 ? "under $0.0001" : "$" + (d >= 10 ? d.toFixed(2) : d.toFixed(4));
  if (c.known) return "cost " + dollars(c.usd);
  if (c.at_least_usd) return "cost at least " + dollars(c.at_least_usd) + " (" + c.why + ")";
  return "cost unknown (" + c.why + ")";
}

// costOf is "; cost …" for the request of kind whose usage record n holds,
// "" when the server gave no cost for it.
function costOf(n, kind) {
  const c = state.costs && state.costs.requests[n + ":" + kind];
  return c ? "; " + costWords(c) : "";
}

// turnCost is the line saying what the turn from prompt n cost (0: before
// the first prompt), null when the server gave none.
function turnCost(n) {
  const t = state.costs && state.costs.turns[n];
  if (!t || !t.requests.length) return null;
  return el("div", { class: "turn-cost" }, "turn " + costWords(t.cost) + " (" + t.requests.length + (t.requests.length === 1 ? " request)" : " requests)"));
}

// render draws the stored records as turns (a prompt and what followed),
// rounds (an answer and the results of its calls) and calls.
function render(messages) {
  const tl = $("timeline");
  tl.replaceChildren();
  if (state.costs) tl.append(el("div", { class: "conversation-cost", id: "conversation-cost" }, "Conversation " + costWords(state.costs.total)));
  let turn = null, round = null;
  const calls = {}; // call_id -> the element its result goes in
  const kids = {};  // call_id -> how many of its children are placed
  let n = 0;
  for (const m of messages) {
    n++;
    if (m.role === "context") {
      const e = m.edit || {};
      const what = e.refusal ? "withheld " + (e.cleared || []).length + " result(s) after the model refused (" + e.refusal.stop + ")" + (e.refusal.text ? ": " + e.refusal.text : "")
        : e.summary ? "summarised messages 1–" + e.summary.through // its places 0 to through-1
        : "cleared " + (e.cleared || []).length + " result(s) or input(s) from the requests";
      (turn || tl).append(el("div", { class: "context", "data-n": n }, "Context: " + what +
        (e.before ? " (next request " + e.before + " → " + e.after + " tokens)" : "") + (e.why ? " — " + e.why : "") +
        costOf(n, "summary") + costOf(n, "refusal")));
      continue;
    }
    const results = m.parts.filter((p) => p.type === "tool_result");
    if (m.role === "user" && results.length === 0) {
      turn = el("div", { class: "turn", "data-n": n }, el("div", { class: "prompt" }, "▸ " + m.parts.map((p) => p.text || "").join("")));
      const tc = turnCost(n);
      if (tc) turn.append(tc);
      tl.append(turn);
      round = null;
      continue;
    }
    if (!turn) {
      turn = el("div", { class: "turn" });
      const tc = turnCost(0);
      if (tc) turn.append(tc);
      tl.append(turn);
    }
    if (m.role === "assistant") {
      round = el("div", { class: "round", "data-n": n });
      turn.append(round);
      if (m.usage) round.append(requestLine(m.usage, n, state.requests[n]));
      const text = apart(m.parts.filter((p) => p.type === "text").map((p) => p.text));
      if (text) round.append(el("pre", { class: "answer" }, text));
      for (const p of m.parts.filter((p) => p.type === "tool_call")) {
        const slot = el("div", { class: "panes" });
        const head = el("div", { class: "call-head" }, p.name + " " + (p.input ? JSON.stringify(p.input) : p.text || "{}"));
        const k = kids[p.call_id] || 0;
        kids[p.call_id] = k + 1;
        const child = (state.children[p.call_id] || [])[k];
        if (child) head.append(" ", el("button", { class: "link subagent", type: "button", "data-child": child, onclick: () => select(child) }, "→ its subagent's conversation " + child));
        round.append(el("div", { class: "call", "data-call": p.call_id }, head, slot));
        calls[p.call_id] = { slot, head, permission: p.permission };
      }
      if (m.cut) round.append(el("div", { class: "hint" }, "(this answer was cut off mid-stream)"));
      continue;
    }
    for (const r of results) {
      const c = calls[r.call_id];
      if (c) {
        fillCall(c, r);
        showSent(c, r, n);
      }
    }
  }
  if (!messages.length) tl.append(el("p", { class: "hint" }, "No messages yet."));
}

// apart joins texts, each on lines of its own: an answer's text blocks
// (before and after its calls), or a turn's rounds, read as paragraphs, not
// glued into one sentence.
function apart(texts) {
  let out = "";
  for (const t of texts) {
    if (!t) continue;
    if (out && !out.endsWith("\n") && !t.startsWith("\n")) out += "\n\n";
    out += t;
  }
  return out;
}

function requestLine(u, n, req) {
  const input = u.input + u.cache_read + u.cache_write;
  const hit = input ? Math.round((100 * u.cache_read) / input) : 0;
  const line = el("div", { class: "request" });
  if (req) {
    line.append(el("button", { class: "link request-open", type: "button", onclick: () => openRequest(req) }, "request " + req.n), " (" + req.bytes + " bytes)");
  } else {
    line.append("request");
  }
  const share = state.window ? " (" + Math.round((100 * input) / state.window) + "% of the window)" : "";
  line.append(" → message " + n + ": " + input + " input tokens" + share + ", " + u.cache_read + " read from the cache (" + hit + "%), " +
    u.cache_write + " written to it; " + u.output + " output" + costOf(n, "answer"));
  return line;
}

// openRequest shows a request in the side panel: its size, what it cost,
// where it first differs from the one before and why the cached prefix
// ended there, and its body as sent.
async function openRequest(req) {
  const base = "/v1/conversations/" + encodeURIComponent(state.current) + "/requests/" + req.n;
  $("pager").hidden = false;
  $("pager-path").textContent = "request " + req.n + " (" + req.wire + ", " + req.bytes + " bytes)";
  $("pager-info").textContent = "";
  $("pager-next").disabled = true;
  $("pager-prev").disabled = true;
  state.pager = null;
  $("pager-label").textContent = "First difference from the request before:";
  let head = "";
  if (req.n > 1) {
    const d = await api("GET", base + "/diff");
    head = "Against request " + d.against + ": " + d.kind + (d.path ? " at " + d.path : "") +
      (d.markers_moved ? " (cache markers moved)" : "") + "; " + d.common_bytes + " bytes in common.\n" + d.why + "\n\n";
    $("pager-call").textContent = d.path || "(the same prompt)";
  } else {
    $("pager-call").textContent = "(the first request)";
  }
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  const body = await (await fetch(base + "/body", { headers })).text();
  $("pager-text").textContent = head + body;
}

// fillCall puts a call's three panes in place: what the tool produced (from
// its tool.finished event, when this server ran it, and its spill file),
// what the model was sent, and what is stored, with the check that the last
// two are the same bytes.
function fillCall(c, stored) {
  const ev = state.finished[stored.call_id];
  if (stored.is_error) c.head.append(" ", el("span", { class: "error" }, "error"));
  const perm = stored.permission || c.permission;
  if (perm) c.head.append(" ", el("span", { class: "permission " + (perm.decision === "allow" ? "allowed" : "denied") }, permissionWords(perm)));
  const produced = el("div", { class: "pane produced" }, el("h4", {}, "Tool produced"));
  if (ev) {
    produced.append(el("div", {}, ev.chars + " characters" + (ev.elapsed_ms !== undefined ? " in " + ev.elapsed_ms.toFixed(1) + " ms" : "")));
    if (ev.reply) {
      produced.append(el("div", {}, "the server's reply (" + ev.reply_bytes + " bytes" + (ev.reply_bytes > ev.reply.length ? ", its head" : "") + "):"),
        el("pre", { class: "reply" }, ev.reply));
    }
    if (ev.structured) produced.append(el("div", {}, "structured content:"), el("pre", {}, JSON.stringify(ev.structured, null, 1)));
    if (ev.files) produced.append(el("div", {}, "files: " + ev.files.join(", ")));
    if (ev.images) produced.append(el("div", {}, ev.images + " image(s)"));
    produced.append(el("div", { class: "repaired" }, ev.repaired
      ? ev.repaired + " ill-formed sequence(s) made well formed (U+FFFD)" : "well formed as produced: nothing repaired"));
  } else {
    produced.append(el("div", { class: "hint" }, "ran before this server started: its own event is not kept"));
  }
  if (stored.spill_path) {
    produced.append(el("div", {}, "whole in ", el("button", { class: "link spill", type: "button", onclick: () => openPager(stored.spill_path) }, stored.spill_path)));
  }
  const sent = ev ? ev.text : stored.text;
  const saw = el("div", { class: "pane saw" }, el("h4", {}, "Model saw"), el("pre", {}, sent));
  const kept = el("div", { class: "pane stored" }, el("h4", {}, "Stored"), el("pre", {}, stored.text),
    stored.images ? el("div", {}, stored.images.length + " image(s)") : null);
  let check;
  if (!ev) check = el("div", { class: "hint" }, "the model's text is the stored text (replayed as stored)");
  else if (ev.text === stored.text) check = el("div", { class: "same" }, "✓ the model's text and the stored text are the same bytes (" + stored.text.length + " UTF-16 units)");
  else check = el("div", { class: "differ" }, "✗ the model's text and the stored text differ");
  saw.append(check);
  c.slot.replaceChildren(produced, saw, kept);
}

// showSent replaces the "Model saw" pane's text with the tool result as
// the request after it carried it (from the body as sent), when the store
// keeps requests, and checks its text against the stored text. The pane
// shows the text as the model reads it (the block's strings decoded), and
// the block itself (cache marker and all) on a toggle. n is the number of
// the results' message: the request after it is the first whose answer
// comes later.
async function showSent(c, stored, n) {
  const req = state.requestList.find((r) => r.msg > n);
  if (!req) return;
  state.bodies = state.bodies || {};
  const key = state.current + "/" + req.n;
  if (!state.bodies[key]) {
    const headers = {};
    if (token()) headers["Authorization"] = "Bearer " + token();
    state.bodies[key] = fetch(req.body, { headers }).then((r) => r.json());
  }
  const block = findResult(await state.bodies[key], stored.call_id);
  const saw = c.slot.querySelector(".pane.saw");
  if (!block || !saw) return;
  const text = resultText(block);
  const raw = el("pre", { class: "sent-block" }, JSON.stringify(block, null, 1));
  const extras = blockExtras(block);
  saw.replaceChildren(el("h4", {}, "Model saw (request " + req.n + ")"));
  if (text === undefined) {
    saw.append(raw); // a shape this page does not know: the block itself
  } else {
    const shown = state.current + "/" + req.n + "/" + stored.call_id;
    const toggle = el("button", { class: "link raw-toggle", type: "button" });
    const show = (on) => {
      raw.hidden = !on;
      toggle.textContent = on ? "hide the block as sent" : "show the block as sent";
      state.rawShown[shown] = on;
    };
    show(!!state.rawShown[shown]);
    toggle.addEventListener("click", () => show(raw.hidden));
    saw.append(el("pre", { class: "sent-text" }, text));
    if (extras) saw.append(el("div", { class: "hint" }, extras));
    saw.append(toggle, raw);
  }
  if (text === stored.text) saw.append(el("div", { class: "same sent-same" }, "✓ the text sent in request " + req.n + " and the stored text are the same bytes"));
  else if (text !== undefined) saw.append(el("div", { class: "differ" }, "✗ the text sent in request " + req.n + " differs from the stored text"));
}

// findResult is the block or item of a request body that carries call id's
// result, on every wire's shape.
function findResult(v, id) {
  if (Array.isArray(v)) {
    for (const x of v) { const f = findResult(x, id); if (f) return f; }
    return null;
  }
  if (!v || typeof v !== "object") return null;
  if ((v.type === "tool_result" && v.tool_use_id === id) || (v.role === "tool" && v.tool_call_id === id) ||
      (v.type === "function_call_output" && v.call_id === id) || (v.functionResponse && v.functionResponse.id === id)) return v;
  for (const k of Object.keys(v)) { const f = findResult(v[k], id); if (f) return f; }
  return null;
}

// blockExtras says what a result block carries besides its text: images,
// a cache marker; "" when nothing.
function blockExtras(b) {
  const out = [];
  const parts = Array.isArray(b.content) ? b.content : [];
  const images = parts.filter((x) => x && (x.type === "image" || x.type === "input_image")).length;
  if (images) out.push("and " + images + " image(s)");
  if (b.cache_control || parts.some((x) => x && x.cache_control)) out.push("a cache marker ends the prompt here");
  return out.join("; ");
}

// resultText is the text a result block carries, as the wire sends it.
function resultText(b) {
  if (typeof b.content === "string") return b.content;
  if (Array.isArray(b.content)) return b.content.filter((x) => x.type === "text").map((x) => x.text).join("");
  if (typeof b.output === "string") return b.output;
  if (b.functionResponse && b.functionResponse.response) {
    const r = b.functionResponse.response;
    return r.output !== undefined ? r.output : r.error;
  }
  return undefined;
}

// --- live events ---

async function watch(id) {
  const ctl = new AbortController();
  state.events = ctl;
  while (!ctl.signal.aborted && state.current === id) {
    try {
      const headers = { "Last-Event-ID": String(state.lastEvent) };
      if (token()) headers["Authorization"] = "Bearer " + token();
      const resp = await fetch("/v1/conversations/" + encodeURIComponent(id) + "/events", { headers, signal: ctl.signal });
      if (!resp.ok) throw new Error("events: " + resp.status);
      status("watching " + id);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = { id: 0, type: "", data: "" };
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) ev.id = Number(line.slice(4));
            else if (line.startsWith("event: ")) ev.type = line.slice(7);
            else if (line.startsWith("data: ")) ev.data += line.slice(6);
          }
          if (!ev.type) continue;
          state.lastEvent = ev.id;
          handle(ev.type, JSON.parse(ev.data));
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      status("events: " + e.message + "; reconnecting");
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

let reloadTimer = null;
function reloadSoon() {
  clearTimeout(reloadTimer);
  // the list's counts, then the timeline (with the subagents started)
  reloadTimer = setTimeout(() => { loadConversations().then(loadMessages).catch((e) => status(e.message)); }, 100);
}

function handle(type, d) {
  switch (type) {
    case "turn.started":
      state.running = d.turn;
      $("live").hidden = false;
      $("live-turn").textContent = d.turn;
      $("live-state").textContent = "running";
      $("live-text").textContent = "";
      state.roundEnded = false;
      $("cancel-turn").disabled = false;
      reloadSoon();
      break;
    case "model.delta":
      if (d.kind === "thinking") break;
      // a round's text starts a paragraph of its own (apart)
      if (state.roundEnded) $("live-text").textContent = apart([$("live-text").textContent, d.text]);
      else $("live-text").append(d.text);
      state.roundEnded = false;
      break;
    case "message.stored":
      state.roundEnded = true; // an answer, its results or a record: the next text is another round's
      reloadSoon();
      break;
    case "tool.started":
      $("live-state").textContent = "running " + d.name;
      break;
    case "tool.finished":
      state.finished[d.call_id] = d;
      $("live-state").textContent = d.name + " finished";
      reloadSoon();
      break;
    case "usage":
      $("live-state").textContent = "answer: " + d.usage.output + " tokens out, " + d.usage.cache_read + " read from the cache";
      reloadSoon();
      break;
    case "context.cleared":
    case "context.summarised":
    case "context.withheld":
    case "notice":
    case "waiting": // a request held at its key's rate limit: until when and why
      $("live-state").textContent = d.text;
      break;
    case "error":
      $("live-state").textContent = "error: " + d.message;
      break;
    case "turn.finished":
      if (state.running === d.turn) state.running = null;
      $("live-state").textContent = "finished: " + d.reason + (d.error ? " (" + d.error + ")" : "");
      $("cancel-turn").disabled = true;
      reloadSoon();
      break;
    case "conversation.rewound":
    case "conversation.switched":
      // its history changed: what is drawn may be gone from it
      state.drawn = "";
      if (!state.running) $("live").hidden = true; // the last turn shown may be a branch's now
      $("tree-note").textContent = (type === "conversation.rewound"
        ? (d.by === "undo" ? "last turn undone" : "rewound to message " + d.at) + "; what followed is kept as branch " + d.branch
        : (d.by === "redo" ? "redone" : "switched") + " to branch " + d.branch + " from message " + d.at) + (d.files ? "; " + filesWords(d.files) : "");
      reloadSoon();
      reloadTree().catch((e) => status(e.message));
      break;
    case "events.lost":
      status(d.message);
      reloadSoon();
      break;
    case "elicitation":
      showAsk(d);
      break;
    case "elicitation.answered":
    case "elicitation.expired": {
      const box = document.querySelector('.ask[data-id="' + CSS.escape(d.id) + '"]');
      if (box) box.remove();
      $("live-state").textContent = "MCP server " + d.server + " was sent " + d.action + (d.reason ? ": " + d.reason : "");
      break;
    }
    case "approval":
      showApproval(d);
      $("live-state").textContent = d.tool + " waits for your decision";
      break;
    case "approval.answered":
    case "approval.expired": {
      const box = document.querySelector('.approval[data-id="' + CSS.escape(d.id) + '"]');
      if (box) box.remove();
      $("live-state").textContent = d.tool + ": " + decisionWords(d.decision) + (type === "approval.expired" ? " (no answer: " + d.reason + ")" : d.reason ? ": " + d.reason : "");
      break;
    }
    case "sampling":
      $("live-state").textContent = "MCP server " + d.server + " asks " + d.model + " to complete (up to " + d.max_tokens + " tokens)";
      break;
    case "sampling.finished":
      $("live-state").textContent = "MCP server " + d.server + " got " + (d.error ? "an error: " + d.error : d.text.length + " chars (" + d.tokens + " tokens)");
      break;
    case "wake":
      $("live-state").textContent = "background script " + d.script + (d.died ? " ended without waking the agent" : " woke the agent (wake " + d.n + " of " + d.of + ")");
      reloadSoon();
      break;
  }
}

// --- what MCP servers ask ---

// showAsk shows an elicitation as a form whose answer is posted to the API
// (which checks it against the fields and says what was wrong).
function showAsk(d) {
  if (document.querySelector('.ask[data-id="' + CSS.escape(d.id) + '"]')) return;
  const inputs = {};
  const box = el("div", { class: "ask", "data-id": d.id },
    el("div", {}, el("strong", {}, "MCP server " + d.server + " asks: "), d.message));
  if (d.mode === "url") {
    box.append(el("div", {}, "Open ", el("a", { href: d.url, target: "_blank", rel: "noopener noreferrer" }, d.url), ", then accept when you are done there."));
  }
  for (const f of d.fields || []) {
    let input;
    if (f.enum) {
      input = el("select", {}, ...(f.required ? [] : [el("option", { value: "" }, "")]), ...f.enum.map((v) => el("option", { value: v }, v)));
      if (f.default !== undefined) input.value = f.default;
    } else if (f.type === "boolean") {
      input = el("input", { type: "checkbox" });
      input.checked = f.default === true;
    } else {
      input = el("input", { type: f.type === "integer" || f.type === "number" ? "number" : "text" });
      if (f.default !== undefined) input.value = String(f.default);
    }
    inputs[f.name] = { f, input };
    box.append(el("label", {}, (f.title || f.name) + (f.required ? " *" : "") + (f.description ? " — " + f.description : "") + " ", input));
  }
  const error = el("div", { class: "ask-error" });
  const answer = async (action) => {
    const body = { action };
    if (action === "accept" && d.mode !== "url") {
      body.content = {};
      for (const [name, { f, input }] of Object.entries(inputs)) {
        if (f.type === "boolean") body.content[name] = input.checked;
        else if (input.value === "") continue; // left out: its default, or the API says it is required
        else if (f.type === "integer" || f.type === "number") body.content[name] = Number(input.value);
        else body.content[name] = input.value;
      }
    }
    try {
      await api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/elicitations/" + encodeURIComponent(d.id), body);
      box.remove();
    } catch (err) { error.textContent = err.message; }
  };
  box.append(el("div", { class: "ask-buttons" },
    el("button", { type: "button", onclick: () => answer("accept") }, d.mode === "url" ? "Done" : "Accept"),
    el("button", { type: "button", onclick: () => answer("decline") }, "Decline"),
    el("button", { type: "button", onclick: () => answer("cancel") }, "Cancel")), error);
  $("asks").append(box);
}

// --- what the permission policy asks ---

// visible is what the model wrote as a person is to see it in a
// question, as approval.Visible writes it for a terminal: every character
// that would not show as itself (Go's unicode.IsPrint: control and format
// characters, bidi controls, line and paragraph separators, spaces other
// than " "), but line breaks and tabs, written as an escape (\u202e;
// \U000e0041 past U+FFFF), so that a command cannot reorder or hide what
// the question shows.
function visible(s) { return escapeShown(s, false); }

// visibleLine is visible on one line: a line break written "\n".
function visibleLine(s) { return escapeShown(s, true); }

// hidden matches a character that would not show as itself (what
// approval.Visible escapes): any of Unicode's categories C and Z but a
// space, a tab and a line break (a line break is kept over lines only).
const hidden = /(?![ \t\n])[\p{C}\p{Z}]/gu;

// escapeShown is what visible and visibleLine show. A run of backslashes
// the model wrote is doubled whole where what follows the run would read
// as an escape they write (\uXXXX, \UXXXXXXXX, \n on one line) or is
// itself written as one, so that no two texts are shown alike: a line
// break cannot pass for the characters \n, nor a bidi override for its
// name, and a line that ends in \\ does not read as a continuation (as
// approval.Visible does); any other backslash is kept (C:\Users, \d+,
// \\server).
function escapeShown(s, oneLine) {
  const chars = Array.from(String(s));
  let out = "";
  for (let i = 0; i < chars.length;) {
    const c = chars[i];
    if (c === "\\") {
      let j = i;
      while (chars[j] === "\\") j++;
      const run = chars.slice(i, j).join(""), next = chars[j] || "", rest = chars.slice(j, j + 9).join("");
      const escape = (oneLine && (next === "n" || next === "\n")) || isHidden(next) || /^u[0-9a-fA-F]{4}/.test(rest) || /^U[0-9a-fA-F]{8}/.test(rest);
      out += escape ? run + run : run;
      i = j;
      continue;
    }
    if (oneLine && c === "\n") out += "\\n";
    else if (isHidden(c)) out += escapeOf(c);
    else out += c;
    i++;
  }
  return out;
}

// printable is myelin's own words (the reason a question gives, the rule
// an answer adds), which quote the model's already: what would not show
// as itself escaped, on one line, every backslash kept (as
// approval.Printable).
function printable(s) {
  return Array.from(String(s)).map((c) => c === "\n" ? "\\n" : isHidden(c) ? escapeOf(c) : c).join("");
}

// isHidden says whether character c would not show as itself.
function isHidden(c) { hidden.lastIndex = 0; return c !== "" && hidden.test(c); }

// escapeOf is hidden character c as an escape: \uXXXX, or \UXXXXXXXX past
// U+FFFF.
function escapeOf(c) {
  const n = c.codePointAt(0);
  return n > 0xffff ? "\\U" + n.toString(16).padStart(8, "0") : "\\u" + n.toString(16).padStart(4, "0");
}

// visibleJSON is a call's input shown as JSON of the same value, with
// any character that would not show as itself (only inside a string)
// written as a JSON escape (a pair of them past U+FFFF), as
// approval.VisibleJSON: JSON's own escapes need no doubling.
function visibleJSON(v) {
  return JSON.stringify(v === undefined ? {} : v, null, 1).replace(hidden, (c) =>
    Array.from({ length: c.length }, (_, i) => "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
}

// decisionWords says a decision of an approval (allow_once,
// allow_session, deny) in words.
function decisionWords(d) {
  return { allow_once: "allowed once", allow_session: "allowed for this conversation", deny: "denied" }[d] || d;
}

// showApproval shows a tool call waiting for a person's decision — the
// call, the command and the part of it asked about, why it is asked —
// with Allow once, Allow for this conversation (when a rule covers the
// call beyond itself: the rule it adds is named) and Deny with a reason
// for the model. The API checks the answer and says what was wrong.
function showApproval(d) {
  if (document.querySelector('.approval[data-id="' + CSS.escape(d.id) + '"]')) return;
  const box = el("div", { class: "ask approval", "data-id": d.id, "data-call": d.call_id || "" },
    el("div", {}, el("strong", {}, "Allow " + visibleLine(d.tool) + "?"), d.reason ? " — " + printable(d.reason) : ""));
  if (d.command) {
    box.append(el("pre", { class: "approval-command" }, visible(d.command)));
    if (d.part && d.part !== d.command) box.append(el("div", {}, "asked about: ", el("code", { class: "approval-part" }, visibleLine(d.part))));
  } else {
    box.append(el("pre", { class: "approval-input" }, visibleJSON(d.input)));
  }
  const expires = new Date(d.expires);
  box.append(el("div", { class: "hint" }, "call " + (d.call_id || "?") + "; denied by itself at " + expires.toLocaleTimeString() + " if no one answers"));
  const reason = el("input", { type: "text", class: "deny-reason", placeholder: "why (sent to the model)" });
  const error = el("div", { class: "ask-error" });
  const answer = async (decision) => {
    const body = { decision };
    if (decision === "deny" && reason.value.trim()) body.reason = reason.value.trim();
    try {
      await api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/approvals/" + encodeURIComponent(d.id), body);
      box.remove();
    } catch (err) { error.textContent = err.message; }
  };
  const buttons = el("div", { class: "ask-buttons" },
    el("button", { type: "button", class: "allow-once", onclick: () => answer("allow_once") }, "Allow once"));
  if ((d.decisions || []).includes("allow_session")) {
    buttons.append(el("button", { type: "button", class: "allow-session", title: "allows " + printable(d.rule) + " for the rest of this conversation", onclick: () => answer("allow_session") },
      "Allow for this conversation (" + printable(d.rule) + ")"));
  }
  buttons.append(el("button", { type: "button", class: "deny", onclick: () => answer("deny") }, "Deny"), reason);
  box.append(buttons, error);
  $("asks").append(box);
}

// permissionWords says what was decided of a call (its stored
// permission record) and by whom: the audit trail, on the call's line.
function permissionWords(p) {
  const by = { rule: "by a rule", default: "by default", yes: "by --yes", person: "by a person", session: "by an earlier answer for this session", timeout: "as no answer came in time", nobody: "as no one could be asked" }[p.by] || "by " + p.by;
  let out = (p.decision === "allow" ? "allowed " : "denied ") + by;
  if (p.answer) out += " (" + p.answer.replace("_", " ") + ")";
  if (p.rule) out += ": " + p.rule;
  if (p.reason) out += " — " + p.reason;
  if (p.at) out += " at " + new Date(p.at).toLocaleString();
  return out;
}

// --- the pager ---

async function openPager(path, input) {
  input = input || { path };
  const q = new URLSearchParams();
  for (const k of ["offset", "limit", "offsetChars", "limitChars"]) if (input[k] !== undefined) q.set(k, input[k]);
  const out = await api("GET", "/v1/spills/" + path.split("/").map(encodeURIComponent).join("/") + (q.toString() ? "?" + q : ""));
  const page = out.structured || {};
  state.pager = { path, input, page };
  $("pager").hidden = false;
  $("pager-path").textContent = path;
  $("pager-text").textContent = out.text;
  $("pager-info").textContent = page.mode === "lines"
    ? "lines " + page.firstLine + "–" + page.lastLine + " of " + page.totalLines
    : "characters " + page.offsetChars + "–" + (page.offsetChars + page.chars) + " of " + page.totalChars;
  $("pager-label").textContent = "The model's next call:";
  $("pager-call").textContent = page.next ? "workspace--read " + JSON.stringify(page.next) : "(the end of the file)";
  $("pager-next").disabled = !page.next;
  $("pager-prev").disabled = page.mode !== "lines" || page.firstLine <= 1;
}

// --- actions ---

$("turn-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const prompt = $("prompt").value.trim();
  if (!prompt || !state.current) return;
  try {
    await api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/turns", { prompt });
    $("prompt").value = "";
  } catch (err) {
    status(err.message);
  }
});
$("cancel-turn").addEventListener("click", async () => {
  if (!state.running) return;
  try {
    await api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/turns/" + state.running + "/cancel");
  } catch (err) { status(err.message); }
});
$("new-conversation").addEventListener("click", async () => {
  try {
    const c = await api("POST", "/v1/conversations");
    await loadConversations();
    await select(c.id);
  } catch (err) { status(err.message); }
});
$("undo-turn").addEventListener("click", () => changeHistory("undo"));
$("redo-turn").addEventListener("click", () => changeHistory("redo"));
$("pager-close").addEventListener("click", () => { $("pager").hidden = true; });
$("pager-next").addEventListener("click", () => { const p = state.pager; if (p && p.page.next) openPager(p.path, p.page.next); });
$("pager-prev").addEventListener("click", () => {
  const p = state.pager;
  if (!p) return;
  const limit = p.page.lastLine - p.page.firstLine + 1;
  openPager(p.path, { path: p.path, offset: Math.max(1, p.page.firstLine - limit), limit });
});
$("token").addEventListener("change", () => { sessionStorage.setItem("myelin-token", $("token").value); loadConversations().catch((e) => status(e.message)); });

loadConversations().then(() => {
  const want = new URLSearchParams(location.search).get("conversation");
  if (want) select(want);
}).catch((e) => status(e.message));
