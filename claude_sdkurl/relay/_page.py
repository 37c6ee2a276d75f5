"""The relay's page: one HTML file with its script inline (no build step, nothing fetched from
elsewhere). It talks to ``/events`` on the same origin; the cookie the relay set when the page
was opened with its token authorizes that connection. When the connection drops it asks
``/ping`` (same cookie) whether it may come back: a relay restarted with the same token is
rejoined (the page starts afresh if it is another run), one with a new token is named as such,
with where the new link is."""

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>claude_sdkurl relay</title>
<style>
:root { --fg:#1d1d1f; --muted:#6e6e73; --line:#d2d2d7; --bg:#fafafa; --panel:#fff; --soft:#f4f4f4; --chosen:#e8f0fe;
        --prompt:#eef; --ask:#fff8c5; --askline:#d4a72c; --ok:#1a7f37; --bad:#cf222e; --run:#0969da; --wait:#bc4c00;
        --park:#8250df; --stop:#9a6700; --idle:#6e7781; color-scheme: light; }
:root[data-theme="dark"] { --fg:#e6edf3; --muted:#8d96a0; --line:#30363d; --bg:#0d1117; --panel:#161b22; --soft:#1f242c;
        --chosen:#1f3a5f; --prompt:#1c2540; --ask:#3b2e00; --askline:#9e6a03; --ok:#3fb950; --bad:#f85149; --run:#4493f8;
        --wait:#f0883e; --park:#a371f7; --stop:#d29922; --idle:#6e7681; color-scheme: dark; }
@media (prefers-color-scheme: dark) { :root:not([data-theme="light"]) { --fg:#e6edf3; --muted:#8d96a0; --line:#30363d;
        --bg:#0d1117; --panel:#161b22; --soft:#1f242c; --chosen:#1f3a5f; --prompt:#1c2540; --ask:#3b2e00; --askline:#9e6a03;
        --ok:#3fb950; --bad:#f85149; --run:#4493f8; --wait:#f0883e; --park:#a371f7; --stop:#d29922; --idle:#6e7681; color-scheme: dark; } }
* { box-sizing: border-box; } [hidden] { display:none !important; }
html, body { height:100%; }
body { margin:0; font:14px/1.45 system-ui, sans-serif; color:var(--fg); background:var(--bg); display:flex; flex-direction:column;
       height:100vh; height:100dvh; overflow:hidden; }
header { flex:none; padding:8px 14px; border-bottom:1px solid var(--line); display:flex; gap:10px; align-items:center; min-width:0; }
header b { font-size:15px; white-space:nowrap; } #conn { color:var(--muted); white-space:nowrap; }
#notice { color:var(--bad); flex:1; min-width:0; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
#mode { color:var(--muted); white-space:nowrap; }
#badge { background:var(--wait); color:#fff; border-radius:10px; padding:1px 8px; font-size:12px; white-space:nowrap; cursor:pointer; }
#banner { flex:none; padding:10px 14px; background:var(--ask); border-bottom:1px solid var(--askline); }
#content { flex:1; min-height:0; display:flex; }
#left { flex:none; width:280px; border-right:1px solid var(--line); overflow:auto; background:var(--bg); }
#sessions { list-style:none; margin:0; padding:0; }
#sessions li { padding:8px 12px; border-bottom:1px solid var(--line); cursor:pointer; overflow-wrap:anywhere; }
#sessions li.chosen { background:var(--chosen); }
.meta { color:var(--muted); font-size:12px; }
.state { font-size:11px; padding:1px 6px; border-radius:8px; color:#fff; background:var(--idle); white-space:nowrap; }
.state.running, .state.starting { background:var(--run); } .state.ended { background:var(--ok); } .state.failed { background:var(--bad); }
.state.interrupted { background:var(--stop); } .state.waiting { background:var(--wait); } .state.parked { background:var(--park); }
.state.stored { background:#57606a; }
#asks, #parked { padding:8px 12px; }
.ask { border:1px solid var(--askline); background:var(--ask); border-radius:6px; padding:8px; margin:6px 0; overflow-wrap:anywhere; }
.ask pre, .parked pre { max-height:160px; overflow:auto; margin:6px 0; background:var(--panel); }
.ask textarea { width:100%; min-height:90px; font:12px/1.4 ui-monospace, monospace; background:var(--panel); color:var(--fg); }
.ask .buttons { display:flex; flex-wrap:wrap; gap:6px; }
#parked .parked { border:1px solid #8c959f; background:var(--soft); border-radius:6px; padding:8px; margin:6px 0; overflow-wrap:anywhere; }
button, select, input { font:inherit; padding:3px 10px; border-radius:6px; border:1px solid var(--line); background:var(--panel); color:var(--fg); cursor:pointer; }
button.allow { border-color:var(--ok); color:var(--ok); } button.deny, .interrupt { border-color:var(--bad); color:var(--bad); }
.pane { flex:1 1 0; min-width:0; display:flex; flex-direction:column; border-right:1px solid var(--line); }
#beside { display:contents; }
.pane-bar { flex:none; padding:6px 12px; border-bottom:1px solid var(--line); display:flex; gap:8px; align-items:center; min-height:44px; flex-wrap:wrap; }
.titles { flex:1 1 160px; min-width:0; } .title { font-weight:600; overflow-wrap:anywhere; }
.controls { display:flex; gap:6px; flex-wrap:wrap; align-items:center; }
.context { color:var(--muted); font-size:12px; }
.pane-asks { flex:none; max-height:40%; overflow:auto; padding:0 12px; }
.transcript { flex:1; min-height:0; overflow:auto; padding:10px 18px; overflow-wrap:anywhere; }
.compose { flex:none; display:flex; gap:8px; padding:8px 12px; border-top:1px solid var(--line); }
.compose textarea { flex:1; font:inherit; padding:6px; min-height:38px; background:var(--panel); color:var(--fg); border:1px solid var(--line); border-radius:6px; }
.turn { margin:8px 0; } .who { color:var(--muted); font-size:12px; }
.prompt { background:var(--prompt); padding:6px 10px; border-radius:6px; }
.note { color:var(--muted); font-style:italic; }
.error { color:var(--bad); }
.result { border-top:1px dashed var(--line); color:var(--muted); font-size:12px; padding-top:4px; }
details { margin:4px 0; } summary { cursor:pointer; color:var(--muted); }
pre, code { font:12px/1.4 ui-monospace, monospace; } pre { background:var(--soft); padding:6px; overflow:auto; white-space:pre-wrap; }
.live { white-space:pre-wrap; }
.sub { border-left:3px solid var(--line); margin:4px 0 4px 6px; padding-left:10px; }
.progress { color:var(--muted); font-size:12px; }
#new-form { position:fixed; inset:60px auto auto 50%; transform:translateX(-50%); width:min(520px, 94vw); z-index:10;
            background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:14px; box-shadow:0 8px 30px rgba(0,0,0,.25); }
#new-form label { display:block; margin:6px 0; } #new-form textarea, #new-form input, #new-form select { width:100%; }
#new-form textarea { min-height:70px; background:var(--panel); color:var(--fg); }
#sessions-toggle { display:none; }
@media (max-width: 700px) {  /* a phone: the watched session fills the screen; the list is a drawer */
  header { padding:6px 8px; gap:6px; } header b { display:none; } #mode { display:none; } #conn.ok { display:none; }
  #new-session .words { display:none; } #new-session::before { content:"+"; }
  #sessions-toggle { display:inline-block; }
  #left { display:none; position:fixed; left:0; right:0; top:var(--top, 48px); bottom:0; width:auto; z-index:5; border-right:none; }
  body.drawer #left { display:block; }
  #beside { display:none; } .sid, #bind-ide, #unbind-ide { display:none !important; }
  .controls select { max-width:46vw; }
  .pane { border-right:none; }
  .transcript { padding:8px 10px; }
  .pane-asks { max-height:35%; padding:0 8px; }
  button, select { min-height:40px; padding:6px 14px; font-size:15px; }
  .ask button { min-width:88px; }
}
</style></head>
<body>
<header><button id="sessions-toggle" title="the sessions">☰ <span id="count">0</span></button><b>claude_sdkurl relay</b>
  <span id="conn">connecting…</span><span id="badge" hidden></span><span id="notice"></span>
  <button id="new-session" hidden title="start a new session"><span class="words">New session</span></button><button id="theme" title="light, dark, or as the system says">◐</button>
  <span id="mode"></span></header>
<div id="banner" hidden></div>
<div id="content">
<div id="left"><ul id="sessions"></ul><div id="asks"></div><div id="parked"></div></div>
<main class="pane" id="main">
  <div class="pane-bar" id="bar"><div class="titles"><div class="title" id="chosen-title">No session chosen</div>
      <div class="context" id="context"></div></div>
    <div class="controls">
    <button id="bind-ide" hidden>Bind IDE</button><button id="unbind-ide" hidden>Unbind IDE</button>
    <select id="model-select" hidden title="the session's model"></select>
    <select id="mode-select" hidden title="the session's permission mode">
      <option>default</option><option>acceptEdits</option><option>plan</option><option>dontAsk</option><option>auto</option><option>bypassPermissions</option>
    </select>
    <button id="interrupt" class="interrupt" hidden>Interrupt</button><button id="end" hidden title="end this session (started from the page)">End</button>
    <button id="pin" hidden title="keep this session open beside the next one you choose">Open beside</button></div></div>
  <div class="pane-asks" id="main-asks"></div>
  <div class="transcript" id="transcript"></div>
  <form class="compose" id="compose" hidden><textarea id="message" placeholder="Message to this session"></textarea><button id="send">Send</button></form>
</main>
<div id="beside"></div>
</div>
<form id="new-form" hidden><b>New session</b>
  <label>Folder <input id="new-cwd" list="new-roots" placeholder="a folder inside an allowed root"></label><datalist id="new-roots"></datalist>
  <label>Model <select id="new-model"></select></label>
  <label>Permission mode <select id="new-mode"></select></label>
  <label>First message <textarea id="new-prompt" placeholder="(optional) what to do first"></textarea></label>
  <button id="new-start" class="allow">Start</button> <button id="new-cancel" type="button">Cancel</button></form>
<script>
"use strict";
if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);
const $ = (id) => document.getElementById(id);
const LABEL = { waiting:"waiting for you" };
const state = { steer:false, sessions:new Map(), lines:new Map(), chosen:null, asks:[], stored:[], parked:[], resumable:false,
                pinned:[], before:new Map(), instance:null, hello:{}, catalog:false, asked:new Set() };
// before: a resumed session's stored turns (those written before its CLI started), shown above its live lines
const main = { view:null };  // the chosen session's transcript (each pinned pane has its own view)
let ws = null, ops = 0, retries = 0;

function esc(s) { return String(s).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c])); }
function markdown(text) {
  const parts = String(text).split(/```/);
  return parts.map((part, i) => {
    if (i % 2) { const nl = part.indexOf("\n"); return "<pre><code>" + esc(nl >= 0 ? part.slice(nl + 1) : part) + "</code></pre>"; }
    return esc(part).split(/\n{2,}/).map(p => {
      let h = p.replace(/`([^`]+)`/g, "<code>$1</code>").replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>");
      const m = h.match(/^(#{1,6})\s+(.*)$/);
      if (m) return "<h4>" + m[2] + "</h4>";
      if (/^\s*[-*] /.test(h)) return "<ul>" + h.split(/\n/).map(l => "<li>" + l.replace(/^\s*[-*] /, "") + "</li>").join("") + "</ul>";
      return "<p>" + h.replace(/\n/g, "<br>") + "</p>";
    }).join("");
  }).join("");
}
function toolLabel(name, input) {
  const v = input && (input.command || input.file_path || input.pattern || input.url || input.description);
  return esc(name) + (v ? ": " + esc(String(v).slice(0, 120)) : "");
}
function blockText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(b => b && (b.text || (b.type === "image" ? "[image]" : ""))).join("\n");
  return "";
}
function kilo(n) { return n >= 1e6 ? (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + "k" : String(n); }
function turnsText(n) { return n + (n === 1 ? " turn" : " turns"); }
function money(v) { return typeof v === "number" ? "$" + v.toFixed(4) : "—"; }
function approx(v) { return v >= 0.0001 || v <= 0 ? money(v) : "$" + v.toPrecision(2); }
const INTERRUPTED = /^\[Request interrupted by user( for tool use)?\]$/;

function view(key, root) { return { key, root, live:"", liveEl:null, inits:new Set(), parents:{}, requests:{}, subs:{}, price:{}, stopped:false, follow:true }; }
function watched(v) {  // a transcript follows its end until the person scrolls up, and again once they scroll back down
  v.root.addEventListener("scroll", () => { const t = v.root; v.follow = t.scrollTop + t.clientHeight >= t.scrollHeight - 40; });
  return v;
}
function toEnd() { for (const v of [main.view, ...state.pinned.map(p => p.view)]) if (v && v.follow) v.root.scrollTop = v.root.scrollHeight; }
function subOf(v, id) { return v.subs[id] || (v.subs[id] = { calls:new Map(), tools:0, status:"", total:null, model:"", lastHadTool:false, done:false }); }
function render(v, d, raw) {  // [html, the subagent call it belongs to (or null)]
  let f; try { f = JSON.parse(raw); } catch (e) { return ["", null]; }
  if (!f || typeof f !== "object") return ["", null];
  const parent = typeof f.parent_tool_use_id === "string" ? f.parent_tool_use_id : null;
  if (f.type === "user" && f.message && INTERRUPTED.test(blockText(f.message.content).trim())) {
    v.stopped = true; return ['<div class="note stopped">turn interrupted</div>', parent];
  }
  if (d === "sdk") {
    if (f.type === "user" && f.message) {
      const t = blockText(f.message.content);
      if (t) { v.stopped = false; return ['<div class="turn prompt"><div class="who">prompt</div>' + markdown(t) + "</div>", null]; }
    }
    if (f.type === "control_request" && f.request && f.request.subtype === "interrupt") { v.stopped = true; return ['<div class="note">interrupt sent</div>', null]; }
    if (f.type === "control_response" && f.response && f.response.response && f.response.response.behavior)
      return ['<div class="note">permission answered: ' + esc(f.response.response.behavior) + "</div>", v.requests[f.response.request_id] || null];
    return ["", null];
  }
  if (f.type === "system" && f.subtype === "init") {  // the CLI says it each turn: once, and when the model changes
    const said = (f.session_id || "") + " " + (f.model || "");
    if (v.inits.has(said)) return ["", null];
    const again = v.inits.size > 0; v.inits.add(said);
    return ['<div class="note">' + (again ? "model now " + esc(f.model || "") : "session " + esc(f.session_id || "") + " started (" + esc(f.model || "") + ")") + "</div>", null];
  }
  if (f.type === "system" && /^task_/.test(f.subtype || "") && f.tool_use_id) return [task(v, f), f.tool_use_id];
  if (f.type === "assistant" && f.message && Array.isArray(f.message.content)) {
    if (!parent) { v.live = ""; if (v.liveEl) v.liveEl.textContent = ""; }
    else {
      const s = subOf(v, parent), u = f.message.usage || {};
      s.calls.set(f.message.id || ("n" + s.calls.size), (u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0) + (u.output_tokens || 0));
      s.model = f.message.model || s.model; s.lastHadTool = f.message.content.some(b => b.type === "tool_use");
    }
    return ['<div class="turn">' + f.message.content.map(b => {
      if (b.type === "text") return markdown(b.text);
      if (b.type === "tool_use") v.parents[b.id] = parent;
      if (b.type === "tool_use" && parent) subOf(v, parent).tools += 1;
      if (b.type === "tool_use" && (b.name === "Agent" || b.name === "Task"))  // a subagent: its own lines go inside, folded
        return '<details class="tool subagent" data-tool="' + esc(b.id) + '"><summary>🤖 ' + toolLabel(b.name, b.input) +
          ' <span class="meta" data-count="' + esc(b.id) + '"></span></summary><pre>' + esc(JSON.stringify(b.input, null, 2)) +
          '</pre><div class="progress" data-progress="' + esc(b.id) + '"></div><div class="sub" data-sub="' + esc(b.id) + '"></div></details>';
      if (b.type === "tool_use") return '<details class="tool"><summary>🔧 ' + toolLabel(b.name, b.input) + "</summary><pre>" + esc(JSON.stringify(b.input, null, 2)) + "</pre></details>";
      if (b.type === "thinking") return '<details><summary>thinking</summary><pre>' + esc(b.thinking || "") + "</pre></details>";
      return "";
    }).join("") + "</div>", parent];
  }
  if (f.type === "user" && f.message && Array.isArray(f.message.content)) {
    const r = f.tool_use_result;  // a subagent's hand-back: its own figures
    for (const b of f.message.content) if (b.type === "tool_result" && v.subs[b.tool_use_id] && r && typeof r === "object" && r.status === "completed") {
      const s = v.subs[b.tool_use_id]; s.done = true; s.status = "completed"; s.model = r.resolvedModel || s.model;
      if (typeof r.totalTokens === "number") s.total = r.totalTokens;
    }
    return [f.message.content.filter(b => b.type === "tool_result").map(b =>
      '<details class="tool-result"><summary>' + (b.is_error ? '<span class="error">tool error</span>' : "tool result") + "</summary><pre>" +
      esc(blockText(b.content)) + "</pre></details>").join(""), parent];
  }
  if (f.type === "control_request" && f.request && f.request.subtype === "can_use_tool") {
    const owner = v.parents[f.request.tool_use_id] || null; v.requests[f.request_id] = owner;
    return ['<div class="note">asks to use ' + toolLabel(f.request.tool_name, f.request.input) + "</div>", owner];
  }
  if (f.type === "result") {
    for (const [model, u] of Object.entries(f.modelUsage || {})) {  // what a token cost here so far: each subagent's share
      const t = (u.inputTokens || 0) + (u.outputTokens || 0) + (u.cacheReadInputTokens || 0) + (u.cacheCreationInputTokens || 0);
      if (t && typeof u.costUSD === "number") v.price[model] = u.costUSD / t;
    }
    const cost = typeof f.total_cost_usd === "number" ? " · " + money(f.total_cost_usd) : "";
    const turns = turnsText(f.num_turns || 0), errors = (f.errors || []).filter(e => !/^\[ede_diagnostic\]/.test(e));
    const stopped = f.is_error && (v.stopped || /^aborted/.test(f.terminal_reason || ""));
    v.stopped = false;
    let html;
    if (stopped) html = '<div class="result stopped">interrupted · ' + turns + cost + "</div>";
    else if (f.terminal_reason === "tool_deferred") html = '<div class="result parked">parked: a call waits for a decision · ' + turns + cost + "</div>";
    else if (f.is_error) html = '<div class="result error">' + esc(f.subtype || "error") + (errors.length || f.result ? ": " + esc(errors.join(" ") || f.result || "") : "") + " · " + turns + cost + "</div>";
    else html = '<div class="result">done · ' + turns + cost + "</div>";
    return [html, parent];
  }
  if (f.type === "stream_event" && f.event && f.event.delta && f.event.delta.type === "text_delta" && !parent) {
    v.live += f.event.delta.text; if (v.liveEl) v.liveEl.textContent = v.live; return ["", null];
  }
  return ["", null];
}
function task(v, f) {  // the CLI's task_* lines: the subagent's progress, inside its fold
  const s = subOf(v, f.tool_use_id), u = f.usage || {};
  if (f.subtype === "task_started") { s.status = "running"; return '<div class="note">started: ' + esc(f.description || "") + (f.subagent_type ? " (" + esc(f.subagent_type) + ")" : "") + "</div>"; }
  if (f.subtype === "task_updated" && f.patch && f.patch.status) { s.status = f.patch.status; return ""; }
  const figures = [u.tool_uses != null ? u.tool_uses + (u.tool_uses === 1 ? " tool use" : " tool uses") : "", u.total_tokens != null ? kilo(u.total_tokens) + " tokens" : "",
                   u.duration_ms != null ? (u.duration_ms / 1000).toFixed(1) + " s" : ""].filter(Boolean).join(" · ");
  if (f.subtype === "task_progress") { s.status = "running"; s.progress = esc(f.description || f.last_tool_name || "working") + (figures ? " · " + figures : ""); return ""; }
  if (f.subtype === "task_notification") { s.status = f.status || "done"; s.done = true; if (typeof u.total_tokens === "number") s.total = u.total_tokens; return '<div class="note">' + esc(f.status || "done") + ": " + esc(f.summary || "") + (figures ? " · " + figures : "") + "</div>"; }
  return "";
}
function showSub(v, id) {
  const t = v.root, s = v.subs[id], count = t.querySelector('[data-count="' + CSS.escape(id) + '"]');
  if (!s || !count) return;
  // its turns: the calls seen, and its report (the last call, handed back rather than streamed) once it is done
  const seen = [...s.calls.values()].reduce((a, b) => a + b, 0), tokens = s.total != null ? s.total : seen, price = v.price[s.model];
  const turns = s.calls.size + (s.done && s.lastHadTool ? 1 : 0);
  count.textContent = "· " + [s.status, s.tools ? s.tools + (s.tools === 1 ? " tool call" : " tool calls") : "", turns ? turnsText(turns) : "",
    tokens ? kilo(tokens) + " tokens" : "", price != null && tokens ? "≈" + approx(price * tokens) : ""].filter(Boolean).join(" · ");
  const progress = t.querySelector('[data-progress="' + CSS.escape(id) + '"]');
  if (progress) progress.innerHTML = s.status === "running" && s.progress ? s.progress : "";
}
function place(v, d, raw) {  // a line's HTML where it belongs: inside its subagent's fold, or at the end
  const [html, parent] = render(v, d, raw), t = v.root;
  const box = parent ? t.querySelector('[data-sub="' + CSS.escape(parent) + '"]') : null;
  if (html) { if (box) box.insertAdjacentHTML("beforeend", html); else v.liveEl.insertAdjacentHTML("beforebegin", html); }
  if (html || parent) for (const id of Object.keys(v.subs)) showSub(v, id);  // (its lines, its hand-back, a cost per token now known)
}
function addLine(key, n, d, raw) {
  if (!state.lines.has(key)) state.lines.set(key, []);
  const lines = state.lines.get(key);
  if (lines.length && lines[lines.length - 1][0] >= n) return;  // the history had it already
  lines.push([n, d, raw]); if (lines.length > 4000) lines.shift();
  for (const v of viewsOf(key)) { place(v, d, raw); if (v.follow) v.root.scrollTop = v.root.scrollHeight; }
}
function viewsOf(key) {  // the transcripts on the page showing session key: the chosen one, pinned panes
  const views = state.pinned.filter(p => p.key === key).map(p => p.view);
  if (key === state.chosen) views.unshift(main.view);
  return views;
}
function draw(v) {
  const t = v.root, key = v.key; Object.assign(v, view(key, t));
  t.innerHTML = '<div class="live"></div>'; v.liveEl = t.firstChild;
  if (t.id === "transcript") v.liveEl.id = "live";
  const lines = state.lines.get(key) || [], before = state.before.get(key);
  if (before && before.length) {
    for (const [n, d, l] of before) place(v, d, l);
    v.inits.clear();
    v.liveEl.insertAdjacentHTML("beforebegin", '<div class="note">resumed here from the stored session</div>');
  }
  if (lines.dropped) v.liveEl.insertAdjacentHTML("beforebegin", '<div class="note">' + lines.dropped + " earlier lines were let go by the relay (it keeps a session's newest lines, and an ended session's only while someone could come for them)</div>");
  if (lines.error) v.liveEl.insertAdjacentHTML("beforebegin", '<div class="note error">' + esc(lines.error) + "</div>");
  for (const [n, d, l] of lines) place(v, d, l);
  t.scrollTop = t.scrollHeight;
}
function showTranscript() { main.view.key = state.chosen; draw(main.view); }
function liveIds() { return new Set([...state.sessions.values()].map(s => s.session_id).filter(Boolean)); }
function storedOf(id) { return state.stored.find(s => s.session_id === id) || null; }
function known(key) {  // a live session of this process, or one the program's store (or transcripts) keeps
  return state.sessions.get(key) || state.stored.find(s => s.key === key && !liveIds().has(s.session_id)) || null;
}
function newest(id) { return [...state.sessions.values()].filter(x => x.session_id === id).pop(); }
function superseded(s) {  // a run of a session that a later run here resumed: listed as that one
  const last = s.session_id ? newest(s.session_id) : null;
  return !!(last && last !== s && last.resumed);
}
function label(s) { return LABEL[s.state] || s.state; }
function liveSummary(s) {
  const parts = [s.label ? esc(s.label) : "", esc(s.model || ""), s.permission_mode ? esc(s.permission_mode) : "", turnsText(s.turns || 0),
                 s.tokens ? kilo(s.tokens) + " tokens" : "", s.cost_usd != null ? money(s.cost_usd) : ""];
  return parts.filter(Boolean).join(" · ") + (s.error ? ' · <span class="error">' + esc(s.error) + "</span>" : "");
}
function showSessions() {  // the rows updated in place (a row being clicked stays the same element)
  const ul = $("sessions"), have = new Map([...ul.children].map(li => [li.dataset.key, li]));
  const live = liveIds(), stored = state.stored.filter(s => !live.has(s.session_id)), shown = [...state.sessions.values()].filter(s => !superseded(s));
  [...shown, ...stored].forEach((s, i) => {
    let li = have.get(s.key);
    if (!li) { li = document.createElement("li"); li.dataset.key = s.key; li.onclick = () => { choose(s.key); document.body.classList.remove("drawer"); }; }
    have.delete(s.key);
    const html = s.state === "stored" ? '<span class="state stored">stored</span> <b>' + esc((s.session_id || "").slice(0, 8)) + '</b><div class="meta">' +
        esc(s.title || "") + " · " + esc(new Date(s.last_modified).toLocaleString()) + "</div>"
      : '<span class="state ' + esc(s.state) + '">' + esc(label(s)) + "</span> <b>" + esc(s.key) + "</b> " +
        '<span class="meta">' + esc((s.session_id || "").slice(0, 8)) + '</span><div class="meta">' + liveSummary(s) + "</div>";
    if (li.shown !== html) { li.innerHTML = html; li.shown = html; }
    li.dataset.state = s.state; li.className = s.key === state.chosen ? "chosen" : "";
    if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
  });
  for (const li of have.values()) li.remove();
  $("count").textContent = shown.length + stored.length;
  showBar(); showPanes(); showWaiting();
}
function continuable(s) {  // a message here starts a turn in it with the program's options (resume)
  if (!state.steer || !state.resumable || !s) return false;
  return s.state === "stored" || (!s.alive && !!s.session_id && !!storedOf(s.session_id));
}
function mid(s) { return !!(s && s.alive && ["running", "waiting", "starting"].includes(s.state)); }
function maxPanes() { return Math.max(1, Math.min(3, Math.floor((window.innerWidth - 280) / 320))); }
function showBar() {
  const s = known(state.chosen), stored = !!(s && s.state === "stored"), alive = !!(s && s.alive);
  $("chosen-title").innerHTML = s ? esc((stored ? "stored session" : s.key) + " · " + (stored ? "stored" : label(s))) +
    (s.session_id ? '<span class="sid"> · ' + esc(s.session_id) + "</span>" : "") : "No session chosen";
  $("context").textContent = s && !stored ? contextText(s) : "";
  $("interrupt").hidden = !(state.steer && mid(s));
  $("bind-ide").hidden = !(state.steer && alive && !s.ide_bound);
  $("unbind-ide").hidden = !(state.steer && alive && !!s.ide_bound);
  $("end").hidden = !(state.steer && alive && s.started_by_page);
  $("pin").hidden = !s || state.pinned.some(p => p.key === s.key) || state.pinned.length + 1 >= maxPanes();
  const send = state.steer && alive && s.input_open, more = continuable(s);
  $("compose").hidden = !(send || more);
  $("send").textContent = send ? "Send" : "Continue";
  $("message").placeholder = send ? "Message to this session" : "A message that continues this session (a new turn, run by the program)";
  $("mode-select").hidden = !(state.steer && alive && s.permission_mode);
  if (s && s.permission_mode && !modeAsked) $("mode-select").value = s.permission_mode;
  const models = (state.hello.models && state.hello.models.length ? state.hello.models : (s && s.models) || []);
  const chooser = $("model-select");
  chooser.hidden = !(state.steer && alive && models.length);
  if (!chooser.hidden && !modelAsked) {
    const all = models.includes(s.model) || !s.model ? models : [s.model, ...models];
    if (chooser.dataset.for !== all.join(",")) { chooser.innerHTML = all.map(m => "<option>" + esc(m) + "</option>").join(""); chooser.dataset.for = all.join(","); }
    chooser.value = s.model || "";
  }
  showAsksIn($("main-asks"), s ? s.key : null);
}
let modeAsked = false, modelAsked = false;  // a change sent, its answer not in yet: the list keeps what was picked
function contextText(s) {
  const used = s.context_tokens, window_ = s.context_window;
  if (!used) return s.tokens ? kilo(s.tokens) + " tokens used" : "";
  return "context " + kilo(used) + (window_ ? " / " + kilo(window_) + " (" + (100 * used / window_).toFixed(used * 1000 < window_ ? 2 : 1) + "%)" : "") +
    (s.tokens ? " · " + kilo(s.tokens) + " tokens used" : "");
}
function askCard(a) {
  const div = document.createElement("div"); div.className = "ask"; div.dataset.id = a.id; div.dataset.session = a.session;
  div.innerHTML = "<div><b>" + esc(a.session) + "</b> wants " + toolLabel(a.tool_name, a.input) + "</div><pre>" + esc(JSON.stringify(a.input, null, 2)) + "</pre>";
  if (!state.steer) return div;
  const row = document.createElement("div"); row.className = "buttons"; div.appendChild(row);
  const decide = (extra) => { row.querySelectorAll("button").forEach(x => x.disabled = true);
    send(Object.assign({op:"decide", id:a.id, allow:true, tool_name:a.tool_name, input:a.input}, extra)); };
  const button = (text, cls, onclick) => { const b = document.createElement("button"); b.textContent = text; b.className = cls; b.onclick = onclick; row.appendChild(b); return b; };
  button("Allow", "allow", () => decide({}));
  button("Deny", "deny", () => decide({allow:false}));
  for (const rule of a.always || []) {  // the CLI's own suggestion, for this session only: exactly the rule shown
    const shown = rule.rules.map(r => r.toolName + (r.ruleContent != null ? "(" + r.ruleContent + ")" : "")).join(", ");
    button("Always allow " + shown + " in this session", "allow always", () => decide({always:rule}));
  }
  if (a.editable) button("Edit", "edit", () => {
    const pre = div.querySelector("pre"), area = document.createElement("textarea"); area.value = JSON.stringify(a.input, null, 2); pre.replaceWith(area);
    row.innerHTML = "";
    button("Allow as edited", "allow edited", () => {
      let edited; try { edited = JSON.parse(area.value); } catch (e) { notice("the edited input is not JSON: " + e.message); return; }
      if (!edited || typeof edited !== "object" || Array.isArray(edited)) { notice("the edited input is a JSON object"); return; }
      area.readOnly = true; decide({edited});
    });
    button("Deny", "deny", () => decide({allow:false}));
  });
  return div;
}
function showAsksIn(box, key, heading) {  // the cards of the calls waiting (of session key, or all): kept as they are (one being edited too)
  const wanted = state.asks.filter(a => key === undefined || a.session === key), ids = new Set(wanted.map(a => String(a.id)));
  for (const card of [...box.querySelectorAll(".ask")]) if (!ids.has(card.dataset.id)) card.remove();
  const have = new Set([...box.querySelectorAll(".ask")].map(c => c.dataset.id));
  for (const a of wanted) if (!have.has(String(a.id))) box.appendChild(askCard(a));
  const head = box.querySelector(".heading");
  if (heading && wanted.length && !head) box.insertAdjacentHTML("afterbegin", '<b class="heading">' + heading + "</b>");
  if (head && !wanted.length) head.remove();
}
function showAsks() {
  showAsksIn($("asks"), undefined, "Waiting for a decision");
  showBar(); showPanes(); showWaiting();
}
function showWaiting() {  // the title and the badge count what waits for a person
  const n = state.asks.length + state.parked.length, badge = $("badge");
  document.title = (n ? "(" + n + ") " : "") + "claude_sdkurl relay";
  badge.hidden = !n; badge.textContent = n + " waiting for you";
}
function showPanes() {  // the sessions pinned beside the chosen one
  const box = $("beside"), room = maxPanes() - 1;
  state.pinned.forEach((p, i) => {
    const s = known(p.key), alive = !!(s && s.alive);
    p.el.hidden = i >= room;  // a narrower window: fewer panes (they come back when it widens)
    p.el.querySelector(".title").textContent = s ? (s.state === "stored" ? (s.session_id || "").slice(0, 8) + " · stored" : s.key + " · " + label(s)) : p.key + " · gone";
    p.el.querySelector(".context").textContent = s && s.state !== "stored" ? [s.session_id ? s.session_id.slice(0, 8) : "", s.cost_usd != null ? money(s.cost_usd) : "", contextText(s)].filter(Boolean).join(" · ") : "";
    p.el.querySelector(".interrupt").hidden = !(state.steer && mid(s));
    const sendable = state.steer && alive && s.input_open, more = continuable(s);
    p.el.querySelector(".compose").hidden = !(sendable || more);
    p.el.querySelector(".compose button").textContent = sendable ? "Send" : "Continue";
    p.el.querySelector(".compose textarea").placeholder = sendable ? "Message to this session" : "A message that continues this session";
    showAsksIn(p.el.querySelector(".pane-asks"), s ? s.key : null);
    if (p.el.parentNode !== box) box.appendChild(p.el);
  });
}
function pin(key) {
  const el = document.createElement("section"); el.className = "pane pinned"; el.dataset.key = key;
  el.innerHTML = '<div class="pane-bar"><div class="titles"><div class="title"></div><div class="context"></div></div><div class="controls">' +
    '<button class="interrupt" hidden>Interrupt</button><button class="unpin" title="close this pane">×</button></div></div>' +
    '<div class="pane-asks"></div><div class="transcript"></div><form class="compose" hidden><textarea placeholder="Message to this session"></textarea><button>Send</button></form>';
  const p = { key, el, view:watched(view(key, el.querySelector(".transcript"))) };
  el.querySelector(".unpin").onclick = () => { state.pinned = state.pinned.filter(q => q !== p); el.remove(); showSessions(); };
  el.querySelector(".interrupt").onclick = () => send({op:"interrupt", session:p.key});
  el.querySelector(".compose").onsubmit = (e) => { e.preventDefault(); const area = el.querySelector("textarea"); write(p.key, area.value); area.value = ""; };
  state.pinned.push(p); draw(p.view); showSessions(); wantHistory(key);
}
function showParked() {
  const box = $("parked"); box.innerHTML = state.parked.length ? "<b>Parked for a decision</b>" : "";
  for (const a of state.parked) {
    const div = document.createElement("div"); div.className = "parked"; div.dataset.id = a.tool_use_id; div.dataset.session = a.session;
    div.innerHTML = "<div><b>" + esc(a.session_id.slice(0, 8)) + "</b> wants " + toolLabel(a.tool_name, a.input) + "</div>" +
      '<div class="meta">parked ' + esc(a.parked_at ? new Date(a.parked_at).toLocaleString() : "") + "</div><pre>" +
      esc(JSON.stringify(a.input, null, 2)) + "</pre>";
    if (state.steer) {
      for (const [text, allow] of [["Approve", true], ["Deny", false]]) {
        const b = document.createElement("button"); b.textContent = text; b.className = allow ? "allow" : "deny";
        b.onclick = () => { div.querySelectorAll("button").forEach(x => x.disabled = true);
          send({op:"decide_parked", session_id:a.session_id, tool_use_id:a.tool_use_id, tool_name:a.tool_name, input:a.input, allow}); };
        div.appendChild(b); div.appendChild(document.createTextNode(" "));
      }
    }
    box.appendChild(div);
  }
  showWaiting();
}
function wantHistory(key) {
  if (!state.lines.has(key) || !state.lines.get(key).requested) send({op:"history", session:key});
  const s = state.sessions.get(key);  // a run that resumed a stored session: its earlier turns, from the store
  if (s && s.resumed && s.session_id && state.catalog && !state.asked.has(key)) {
    state.asked.add(key); send({op:"history", session:"stored:" + s.session_id, before:s.started_at, for:key});
  }
}
function choose(key) { state.chosen = key; showSessions(); showTranscript(); wantHistory(key); }
function liveOf(key) {  // the live session a stored session became when a run here resumed it, if any
  const s = state.stored.find(x => x.key === key);
  return s ? newest(s.session_id) : undefined;
}
function followResumed() {  // sessions the page shows that now run here again: show the newest run
  for (const s of state.stored) {
    const live = liveOf(s.key);
    if (live && !state.before.has(live.key) && state.lines.has(s.key)) state.before.set(live.key, state.lines.get(s.key));
  }
  const follow = (key) => {
    const s = state.sessions.get(key) || state.stored.find(x => x.key === key), n = s && s.session_id ? newest(s.session_id) : null;
    return n && n.key !== key && (s.state === "stored" || n.resumed) ? n : null;
  };
  for (const p of state.pinned) {
    const live = follow(p.key);
    if (live) { p.key = live.key; p.view.key = live.key; p.el.dataset.key = live.key; draw(p.view); wantHistory(live.key); }
  }
  const live = follow(state.chosen);
  if (live) choose(live.key); else showPanes();
}
function send(op) { op.id = op.id || ("op" + (++ops)); if (ws && ws.readyState === 1) ws.send(JSON.stringify(op)); return op.id; }
function write(key, text) {
  if (!text.trim()) return;
  const s = known(key);
  if (s && (s.state === "stored" || !s.alive)) send({op:"continue", session_id:s.session_id, text});
  else send({op:"message", session:key, text});
}
function notice(text) { $("notice").textContent = text || ""; $("notice").title = text || ""; }
function banner(html) { $("banner").innerHTML = html || ""; $("banner").hidden = !html; }
function afresh() {  // another run of the relay: what this page kept of the last one's sessions is not this one's
  state.sessions = new Map(); state.lines = new Map(); state.before = new Map(); state.asked = new Set(); state.asks = [];
  for (const p of state.pinned.filter(p => !p.key.startsWith("stored:"))) p.el.remove();
  state.pinned = state.pinned.filter(p => p.key.startsWith("stored:"));
  if (state.chosen && !state.chosen.startsWith("stored:")) state.chosen = null;
  for (const p of state.pinned) { state.lines.delete(p.key); draw(p.view); wantHistory(p.key); }
}
function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/events");
  ws.onopen = () => { retries = 0; banner(""); };  // ("connected" once the relay has said hello)
  ws.onclose = () => { $("conn").textContent = "disconnected"; $("conn").className = ""; ws = null; setTimeout(probe, 300); };
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.k === "hello") {
      if (state.instance && state.instance !== m.instance) { afresh(); notice("the relay restarted: sessions it ran before are over (stored ones are listed again)"); }
      state.instance = m.instance; state.hello = m; $("conn").textContent = "connected"; $("conn").className = "ok";
      for (const lines of state.lines.values()) lines.requested = false;  // (what was said while away: asked for again)
      state.steer = m.steer; $("mode").textContent = m.steer ? "steering allowed" : "read-only";
      $("new-session").hidden = !(m.steer && m.new_sessions);
      state.sessions = new Map(m.sessions.map(s => [s.key, s])); state.asks = m.asks; showSessions(); showAsks();
      if (!state.chosen && m.sessions.length) choose(m.sessions[m.sessions.length - 1].key);
      else if (state.chosen) choose(state.chosen);
      if (!state.chosen && window.innerWidth <= 700) document.body.classList.add("drawer");
    } else if (m.k === "sessions") {
      state.sessions = new Map(m.sessions.map(s => [s.key, s])); showSessions(); followResumed();
      for (const s of m.sessions) if (s.resumed && viewsOf(s.key).length) wantHistory(s.key);
      if (!state.chosen && m.sessions.length) choose(m.sessions[0].key);
    } else if (m.k === "asks") { state.asks = m.asks; showAsks(); }
    else if (m.k === "stored") {
      state.catalog = true; state.stored = m.stored; state.parked = m.parked; state.resumable = m.resumable; showSessions(); showParked();
      if (state.chosen) wantHistory(state.chosen);
      if (!state.chosen && state.stored.length) choose(state.stored[0].key);
    }
    else if (m.k === "line") { addLine(m.s, m.n, m.d, m.l); }
    else if (m.k === "history" && m.for) {
      state.before.set(m.for, m.lines); for (const v of viewsOf(m.for)) draw(v);
    } else if (m.k === "history") {
      const old = state.lines.get(m.s) || [], last = m.lines.length ? m.lines[m.lines.length - 1][0] : 0;
      const lines = m.lines.concat(old.filter(l => l[0] > last)); lines.requested = true; lines.dropped = m.dropped || 0;
      lines.error = m.error || null;
      state.lines.set(m.s, lines); for (const v of viewsOf(m.s)) draw(v);
    } else if (m.k === "dropped") { notice("the relay dropped " + m.count + " lines this page did not read in time"); }
    else if (m.k === "done") {
      notice(m.error ? m.op + ": " + m.error : "");
      if (m.op === "mode") { modeAsked = false; showBar(); }  // refused: the list shows the mode in force again
      if (m.op === "model") { modelAsked = false; showBar(); }
      if (m.op === "new_session" && m.finished && !m.error && m.session && newAsked === m.id) { newAsked = null; choose(m.session); }
      if (m.op === "decide" && m.error) document.querySelectorAll(".ask button:disabled").forEach(b => { b.disabled = false; });  // try again
    }
    else if (m.k === "ide") { notice(m.text); }
    else if (m.k === "error") { notice(m.error); }
  };
}
function probe() {  // may this tab come back? the same token: at once; a new one: say where the new link is
  const wait = Math.min(10000, 1000 * 2 ** Math.min(retries++, 4));
  fetch("/ping", {cache:"no-store", credentials:"same-origin"}).then(r => {
    if (r.ok) { connect(); return; }
    if (r.status === 401) {
      const where = state.hello.announced_at ? esc(state.hello.announced_at) : "where it printed this page's link (its standard error)";
      banner("<b>This tab's link no longer works.</b> The relay restarted with a new token: open the new link (<code>http://…/?token=…</code>) " +
             "it printed, " + where + ". To keep one link across restarts, its deployer gives it a <code>token_file</code>. This tab checks again every 10 s.");
      $("conn").textContent = "new token";
      setTimeout(probe, 10000); return;
    }
    throw new Error("status " + r.status);
  }).catch(() => {
    banner("<b>The relay is not answering</b> (its program stopped or is restarting). Retrying in " + Math.round(wait / 1000) +
           " s. If it comes back on another port, open the link it prints.");
    $("conn").textContent = "unreachable";
    setTimeout(probe, wait);
  });
}
let newAsked = null;
$("interrupt").onclick = () => send({op:"interrupt", session:state.chosen});
$("end").onclick = () => send({op:"end", session:state.chosen});
$("pin").onclick = () => { if (state.chosen) pin(state.chosen); };
$("mode-select").onchange = () => { modeAsked = true; send({op:"mode", session:state.chosen, mode:$("mode-select").value}); };
$("model-select").onchange = () => { modelAsked = true; send({op:"model", session:state.chosen, model:$("model-select").value}); };
$("bind-ide").onclick = () => send({op:"bind_ide", session:state.chosen});
$("unbind-ide").onclick = () => send({op:"unbind_ide", session:state.chosen});
$("sessions-toggle").onclick = () => document.body.classList.toggle("drawer");
$("badge").onclick = () => { document.body.classList.add("drawer"); $("asks").scrollIntoView(); };
$("compose").onsubmit = (e) => { e.preventDefault(); write(state.chosen, $("message").value); $("message").value = ""; };
$("new-session").onclick = () => {
  const n = state.hello.new_sessions || {}, f = $("new-form");
  $("new-roots").innerHTML = (n.roots || []).map(r => '<option value="' + esc(r) + '">').join("");
  if (!$("new-cwd").value) $("new-cwd").value = (n.roots || [""])[0];
  $("new-model").innerHTML = (n.models || []).map(m => "<option>" + esc(m) + "</option>").join("");
  $("new-model").parentNode.hidden = !(n.models || []).length;
  $("new-mode").innerHTML = (n.permission_modes || []).map(m => "<option>" + esc(m) + "</option>").join("");
  f.hidden = false;
};
$("new-cancel").onclick = () => { $("new-form").hidden = true; };
$("new-form").onsubmit = (e) => { e.preventDefault();
  const op = {op:"new_session", cwd:$("new-cwd").value, permission_mode:$("new-mode").value, prompt:$("new-prompt").value};
  if (!$("new-model").parentNode.hidden) op.model = $("new-model").value;
  newAsked = send(op); $("new-form").hidden = true; $("new-prompt").value = ""; };
const THEMES = ["auto", "dark", "light"];
function theme(t) { if (t === "auto") delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = t;
  $("theme").dataset.theme = t; $("theme").title = "theme: " + t + " (click for the next)"; try { localStorage.setItem("claude_sdkurl_relay_theme", t); } catch (e) {} }
$("theme").onclick = () => theme(THEMES[(THEMES.indexOf($("theme").dataset.theme || "auto") + 1) % THEMES.length]);
try { theme(localStorage.getItem("claude_sdkurl_relay_theme") || "auto"); } catch (e) { theme("auto"); }
window.addEventListener("resize", () => { document.body.style.setProperty("--top", document.querySelector("header").offsetHeight + "px"); showBar(); showPanes(); toEnd(); });
document.body.style.setProperty("--top", document.querySelector("header").offsetHeight + "px");
main.view = watched(view(null, $("transcript")));
connect();
</script></body></html>
"""
