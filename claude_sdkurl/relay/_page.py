"""The relay's page: one HTML file with its script inline (no build step, nothing fetched from
elsewhere). It talks to ``/events`` on the same origin; the cookie the relay set when the page
was opened with its token authorizes that connection."""

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>claude_sdkurl relay</title>
<style>
:root { --fg:#1d1d1f; --muted:#6e6e73; --line:#d2d2d7; --bg:#fafafa; --ok:#1a7f37; --bad:#cf222e; --run:#0969da; }
* { box-sizing: border-box; } [hidden] { display:none !important; }
body { margin:0; font:14px/1.45 system-ui, sans-serif; color:var(--fg); background:var(--bg); display:grid;
       grid-template-columns: 300px 1fr; grid-template-rows: auto 1fr; height:100vh; }
header { grid-column: 1 / -1; padding:8px 14px; border-bottom:1px solid var(--line); display:flex; gap:12px; align-items:center; }
header b { font-size:15px; } #conn { color:var(--muted); } #mode { margin-left:auto; color:var(--muted); }
#left { border-right:1px solid var(--line); overflow:auto; }
#sessions { list-style:none; margin:0; padding:0; }
#sessions li { padding:8px 12px; border-bottom:1px solid var(--line); cursor:pointer; }
#sessions li.chosen { background:#e8f0fe; }
#sessions .meta { color:var(--muted); font-size:12px; }
.state { font-size:11px; padding:1px 6px; border-radius:8px; color:#fff; background:var(--muted); }
.state.running, .state.starting { background:var(--run); } .state.ended { background:var(--ok); } .state.failed { background:var(--bad); }
.state.interrupted { background:#b08800; }
#asks { padding:8px 12px; }
.ask { border:1px solid #d4a72c; background:#fff8c5; border-radius:6px; padding:8px; margin:6px 0; }
.ask pre { max-height:160px; overflow:auto; margin:6px 0; background:#fff; }
button { font:inherit; padding:3px 10px; border-radius:6px; border:1px solid var(--line); background:#fff; cursor:pointer; }
button.allow { border-color:var(--ok); color:var(--ok); } button.deny, #interrupt { border-color:var(--bad); color:var(--bad); }
main { display:flex; flex-direction:column; overflow:hidden; }
#bar { padding:8px 14px; border-bottom:1px solid var(--line); display:flex; gap:8px; align-items:center; min-height:44px; }
#bar { flex-wrap:wrap; } #bar .title { font-weight:600; min-width:0; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
#bar .grow { flex:1; }
#transcript { flex:1; overflow:auto; padding:10px 18px; }
#compose { display:flex; gap:8px; padding:8px 14px; border-top:1px solid var(--line); }
#message { flex:1; font:inherit; padding:6px; min-height:38px; }
.turn { margin:8px 0; } .who { color:var(--muted); font-size:12px; }
.prompt { background:#eef; padding:6px 10px; border-radius:6px; }
.note { color:var(--muted); font-style:italic; }
.error { color:var(--bad); }
.result { border-top:1px dashed var(--line); color:var(--muted); font-size:12px; padding-top:4px; }
details { margin:4px 0; } summary { cursor:pointer; color:#444; }
pre, code { font:12px/1.4 ui-monospace, monospace; } pre { background:#f4f4f4; padding:6px; overflow:auto; white-space:pre-wrap; }
#live { color:#333; white-space:pre-wrap; }
.sub { border-left:3px solid #c8d1e0; margin:4px 0 4px 6px; padding-left:10px; }
@media (max-width: 700px) {  /* a phone: the list above the transcript, buttons a finger can hit */
  body { grid-template-columns: 1fr; grid-template-rows: auto auto 1fr; height:auto; min-height:100vh; }
  header { grid-column: 1; flex-wrap:wrap; }
  #left { border-right:none; border-bottom:1px solid var(--line); }
  #sessions { max-height:32vh; overflow:auto; }  /* the list scrolls; what waits for a person stays in view */
  main { min-height:60vh; }
  #bar { flex-wrap:wrap; }
  button, select { min-height:40px; padding:6px 14px; font-size:15px; }
  .ask button { min-width:88px; }
  #transcript { padding:8px 10px; }
}
#notice { color:var(--bad); margin-left:8px; }
.state.stored { background:#57606a; }
#parked { padding:8px 12px; }
.ask, .parked { overflow-wrap:anywhere; }
.parked { border:1px solid #8c959f; background:#f6f8fa; border-radius:6px; padding:8px; margin:6px 0; }
.parked pre { max-height:160px; overflow:auto; margin:6px 0; background:#fff; }
body.split { grid-template-columns: 300px minmax(0, 1fr) minmax(0, 1fr); }
#beside { display:flex; gap:0; overflow:hidden; border-left:1px solid var(--line); }
#beside:empty { display:none; }
.pane { flex:1; min-width:0; display:flex; flex-direction:column; border-right:1px solid var(--line); }
.pane-bar { padding:8px 14px; border-bottom:1px solid var(--line); display:flex; gap:8px; align-items:center; min-height:44px; }
.pane-bar .title { font-weight:600; flex:1; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.pane .transcript { flex:1; overflow:auto; padding:10px 18px; }
@media (max-width: 700px) { body.split { grid-template-columns: 1fr; } #beside { flex-direction:column; border-left:none; }
  .pane { min-height:50vh; border-top:1px solid var(--line); } }
</style></head>
<body>
<header><b>claude_sdkurl relay</b><span id="conn">connecting…</span><span id="notice"></span><span id="mode"></span></header>
<div id="left"><ul id="sessions"></ul><div id="asks"></div><div id="parked"></div></div>
<main>
  <div id="bar"><span class="title" id="chosen-title">No session chosen</span><span class="grow"></span>
    <button id="bind-ide" hidden>Bind IDE</button><button id="unbind-ide" hidden>Unbind IDE</button>
    <select id="mode-select" hidden title="the session's permission mode">
      <option>default</option><option>acceptEdits</option><option>plan</option><option>dontAsk</option><option>auto</option><option>bypassPermissions</option>
    </select>
    <button id="interrupt" hidden>Interrupt</button><button id="pin" hidden title="keep this session open beside the next one you choose">Open beside</button></div>
  <div id="transcript"></div>
  <form id="compose" hidden><textarea id="message" placeholder="Message to this session"></textarea><button id="send">Send</button></form>
</main>
<div id="beside"></div>
<script>
"use strict";
if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);
const $ = (id) => document.getElementById(id);
const state = { steer:false, sessions:new Map(), lines:new Map(), chosen:null, asks:[], stored:[], parked:[], resumable:false,
                pinned:[], before:new Map() };  // before: a resumed session's stored lines, shown above its live ones
const main = { root:null, live:"", liveEl:null };  // the chosen session's transcript; each pinned pane has its own
let ws = null, ops = 0;

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
function render(view, d, raw) {
  let f; try { f = JSON.parse(raw); } catch (e) { return ""; }
  if (!f || typeof f !== "object") return "";
  if (d === "sdk") {
    if (f.type === "user" && f.message) {
      const t = blockText(f.message.content);
      if (t) return '<div class="turn prompt"><div class="who">prompt</div>' + markdown(t) + "</div>";
    }
    if (f.type === "control_request" && f.request && f.request.subtype === "interrupt") return '<div class="note">interrupt sent</div>';
    if (f.type === "control_response" && f.response && f.response.response && f.response.response.behavior)
      return '<div class="note">permission answered: ' + esc(f.response.response.behavior) + "</div>";
    return "";
  }
  if (f.type === "system" && f.subtype === "init") return '<div class="note">session ' + esc(f.session_id || "") + " started (" + esc(f.model || "") + ")</div>";
  if (f.type === "assistant" && f.message && Array.isArray(f.message.content)) {
    view.live = ""; if (view.liveEl) view.liveEl.textContent = "";
    return '<div class="turn">' + f.message.content.map(b => {
      if (b.type === "text") return markdown(b.text);
      if (b.type === "tool_use" && (b.name === "Agent" || b.name === "Task"))  // a subagent: its own lines go inside, folded
        return '<details class="tool subagent" data-tool="' + esc(b.id) + '"><summary>🤖 ' + toolLabel(b.name, b.input) +
          ' <span class="meta" data-count="' + esc(b.id) + '"></span></summary><pre>' + esc(JSON.stringify(b.input, null, 2)) +
          '</pre><div class="sub" data-sub="' + esc(b.id) + '"></div></details>';
      if (b.type === "tool_use") return '<details class="tool"><summary>🔧 ' + toolLabel(b.name, b.input) + "</summary><pre>" + esc(JSON.stringify(b.input, null, 2)) + "</pre></details>";
      if (b.type === "thinking") return '<details><summary>thinking</summary><pre>' + esc(b.thinking || "") + "</pre></details>";
      return "";
    }).join("") + "</div>";
  }
  if (f.type === "user" && f.message && Array.isArray(f.message.content)) {
    return f.message.content.filter(b => b.type === "tool_result").map(b =>
      '<details class="tool-result"><summary>' + (b.is_error ? '<span class="error">tool error</span>' : "tool result") + "</summary><pre>" +
      esc(blockText(b.content)) + "</pre></details>").join("");
  }
  if (f.type === "control_request" && f.request && f.request.subtype === "can_use_tool")
    return '<div class="note">asks to use ' + toolLabel(f.request.tool_name, f.request.input) + "</div>";
  if (f.type === "result") {
    const cost = typeof f.total_cost_usd === "number" ? " · $" + f.total_cost_usd.toFixed(4) : "";
    const bad = f.is_error ? ' error">' + esc(f.subtype || "error") + ": " + esc((f.errors || []).join(" ") || f.result || "") : '">done';
    const turns = f.num_turns || 0;
    return '<div class="result' + bad + " · " + esc(turns) + (turns === 1 ? " turn" : " turns") + cost + "</div>";
  }
  if (f.type === "stream_event" && f.event && f.event.delta && f.event.delta.type === "text_delta") {
    view.live += f.event.delta.text; if (view.liveEl) view.liveEl.textContent = view.live; return "";
  }
  return "";
}
function parentOf(raw) {  // the subagent call a line belongs to (its parent_tool_use_id), if any
  const m = /"parent_tool_use_id"\s*:\s*"([^"]+)"/.exec(raw); return m ? m[1] : null;
}
function place(view, d, raw) {  // a line's HTML where it belongs: inside its subagent's fold, or at the end
  const html = render(view, d, raw);
  if (!html) return;
  const parent = parentOf(raw), t = view.root;
  const box = parent ? t.querySelector('[data-sub="' + CSS.escape(parent) + '"]') : null;
  if (box) {
    box.insertAdjacentHTML("beforeend", html);
    const count = t.querySelector('[data-count="' + CSS.escape(parent) + '"]'), calls = box.querySelectorAll("details.tool").length;
    if (count) count.textContent = calls ? "· " + calls + (calls === 1 ? " tool call" : " tool calls") : "";
  } else view.liveEl.insertAdjacentHTML("beforebegin", html);
}
function addLine(key, n, d, raw) {
  if (!state.lines.has(key)) state.lines.set(key, []);
  const lines = state.lines.get(key);
  if (lines.length && lines[lines.length - 1][0] >= n) return;  // the history had it already
  lines.push([n, d, raw]); if (lines.length > 4000) lines.shift();
  for (const view of viewsOf(key)) {
    const t = view.root, at = t.scrollTop + t.clientHeight >= t.scrollHeight - 30;
    place(view, d, raw); if (at) t.scrollTop = t.scrollHeight;
  }
}
function viewsOf(key) {  // the transcripts on the page showing session key: the chosen one, pinned panes
  const views = state.pinned.filter(p => p.key === key).map(p => p.view);
  if (key === state.chosen) views.unshift(main);
  return views;
}
function draw(view, key) {
  const t = view.root; view.live = "";
  t.innerHTML = '<div class="live"></div>'; view.liveEl = t.firstChild;
  if (view === main) view.liveEl.id = "live";
  const lines = state.lines.get(key) || [], before = state.before.get(key);
  if (before) {
    for (const [n, d, l] of before) place(view, d, l);
    view.liveEl.insertAdjacentHTML("beforebegin", '<div class="note">resumed here from the stored session</div>');
  }
  if (lines.dropped) view.liveEl.insertAdjacentHTML("beforebegin", '<div class="note">' + lines.dropped + " earlier lines were let go by the relay (it keeps a session's newest lines, and an ended session's only while someone could come for them)</div>");
  if (lines.error) view.liveEl.insertAdjacentHTML("beforebegin", '<div class="note error">' + esc(lines.error) + "</div>");
  for (const [n, d, l] of lines) place(view, d, l);
  t.scrollTop = t.scrollHeight;
}
function showTranscript() { main.root = $("transcript"); draw(main, state.chosen); }
function money(v) { return typeof v === "number" ? "$" + v.toFixed(4) : "—"; }
function liveIds() { return new Set([...state.sessions.values()].map(s => s.session_id).filter(Boolean)); }
function known(key) {  // a live session of this process, or one the program's store (or transcripts) keeps
  return state.sessions.get(key) || state.stored.find(s => s.key === key && !liveIds().has(s.session_id)) || null;
}
function showSessions() {
  const ul = $("sessions"); ul.innerHTML = "";
  const live = liveIds(), stored = state.stored.filter(s => !live.has(s.session_id));
  for (const s of [...state.sessions.values(), ...stored]) {
    const li = document.createElement("li"); li.dataset.key = s.key; li.dataset.state = s.state;
    if (s.key === state.chosen) li.className = "chosen";
    if (s.state === "stored") {
      li.innerHTML = '<span class="state stored">stored</span> <b>' + esc((s.session_id || "").slice(0, 8)) + '</b><div class="meta">' +
        esc(s.title || "") + " · " + esc(new Date(s.last_modified).toLocaleString()) + "</div>";
    } else li.innerHTML = '<span class="state ' + esc(s.state) + '">' + esc(s.state) + "</span> <b>" + esc(s.key) + "</b> " +
      '<span class="meta">' + esc((s.session_id || "").slice(0, 8)) + '</span><div class="meta">' +
      [s.label ? esc(s.label) : "", esc(s.model || ""), s.permission_mode ? esc(s.permission_mode) : "", s.turns + (s.turns === 1 ? " turn" : " turns"), money(s.cost_usd)].filter(Boolean).join(" · ") + (s.error ? ' · <span class="error">' + esc(s.error) + "</span>" : "") + "</div>";
    li.onclick = () => choose(s.key); ul.appendChild(li);
  }
  showBar(); showPanes();
}
function showBar() {
  const s = known(state.chosen), stored = !!(s && s.state === "stored");
  $("chosen-title").textContent = s ? (stored ? "stored session" : s.key) + " · " + s.state + (s.session_id ? " · " + s.session_id : "") : "No session chosen";
  const live = !!(s && (s.state === "running" || s.state === "starting"));
  $("interrupt").hidden = !(state.steer && live);
  $("bind-ide").hidden = $("unbind-ide").hidden = !(state.steer && live);
  $("pin").hidden = !s || state.pinned.some(p => p.key === s.key) || state.pinned.length >= 3;
  $("compose").hidden = !(state.steer && (live && s.input_open || stored && state.resumable));
  $("send").textContent = stored ? "Continue" : "Send";
  $("message").placeholder = stored ? "A message that continues this session (a new turn, run by the program)" : "Message to this session";
  $("mode-select").hidden = !(state.steer && live && s.permission_mode);
  if (s && s.permission_mode) $("mode-select").value = s.permission_mode;
}
function showAsks() {
  const box = $("asks"); box.innerHTML = state.asks.length ? "<b>Waiting for a decision</b>" : "";
  for (const a of state.asks) {
    const div = document.createElement("div"); div.className = "ask"; div.dataset.id = a.id; div.dataset.session = a.session;
    div.innerHTML = "<div><b>" + esc(a.session) + "</b> wants " + toolLabel(a.tool_name, a.input) + "</div><pre>" +
      esc(JSON.stringify(a.input, null, 2)) + "</pre>";
    if (state.steer) {
      for (const [label, allow] of [["Allow", true], ["Deny", false]]) {
        const b = document.createElement("button"); b.textContent = label; b.className = allow ? "allow" : "deny";
        b.onclick = () => { b.disabled = true; send({op:"decide", id:a.id, allow, tool_name:a.tool_name, input:a.input}); };
        div.appendChild(b); div.appendChild(document.createTextNode(" "));
      }
    }
    box.appendChild(div);
  }
}
function showPanes() {  // the sessions pinned beside the chosen one
  const box = $("beside");
  for (const p of state.pinned) {
    const s = known(p.key);
    p.el.querySelector(".title").textContent = s ? (s.state === "stored" ? (s.session_id || "").slice(0, 8) : s.key) + " · " + s.state : p.key + " · gone";
    p.el.querySelector(".pane-interrupt").hidden = !(state.steer && s && (s.state === "running" || s.state === "starting"));
    if (p.el.parentNode !== box) box.appendChild(p.el);
  }
  document.body.classList.toggle("split", state.pinned.length > 0);
}
function pin(key) {
  const el = document.createElement("section"); el.className = "pane"; el.dataset.key = key;
  el.innerHTML = '<div class="pane-bar"><span class="title"></span><button class="pane-interrupt" hidden>Interrupt</button>' +
    '<button class="unpin" title="close this pane">×</button></div><div class="transcript"></div>';
  const p = { key, el, view:{ root:el.querySelector(".transcript"), live:"", liveEl:null } };
  el.querySelector(".unpin").onclick = () => { state.pinned = state.pinned.filter(q => q !== p); el.remove(); showSessions(); };
  el.querySelector(".pane-interrupt").onclick = () => send({op:"interrupt", session:key});
  state.pinned.push(p); draw(p.view, key); showSessions();
  if (!state.lines.has(key) || !state.lines.get(key).requested) send({op:"history", session:key});
}
function showParked() {
  const box = $("parked"); box.innerHTML = state.parked.length ? "<b>Parked for a decision</b>" : "";
  for (const a of state.parked) {
    const div = document.createElement("div"); div.className = "parked"; div.dataset.id = a.tool_use_id; div.dataset.session = a.session;
    div.innerHTML = "<div><b>" + esc(a.session_id.slice(0, 8)) + "</b> wants " + toolLabel(a.tool_name, a.input) + "</div>" +
      '<div class="meta">parked ' + esc(a.parked_at ? new Date(a.parked_at).toLocaleString() : "") + "</div><pre>" +
      esc(JSON.stringify(a.input, null, 2)) + "</pre>";
    if (state.steer) {
      for (const [label, allow] of [["Approve", true], ["Deny", false]]) {
        const b = document.createElement("button"); b.textContent = label; b.className = allow ? "allow" : "deny";
        b.onclick = () => { div.querySelectorAll("button").forEach(x => x.disabled = true);
          send({op:"decide_parked", session_id:a.session_id, tool_use_id:a.tool_use_id, tool_name:a.tool_name, input:a.input, allow}); };
        div.appendChild(b); div.appendChild(document.createTextNode(" "));
      }
    }
    box.appendChild(div);
  }
}
function choose(key) {
  state.chosen = key; showSessions(); showTranscript();
  if (!state.lines.has(key) || !state.lines.get(key).requested) send({op:"history", session:key});
}
function liveOf(key) {  // the live session a stored session became when a run here resumed it, if any
  const s = state.stored.find(x => x.key === key);
  return s ? [...state.sessions.values()].filter(x => x.session_id === s.session_id).pop() : undefined;
}
function followResumed() {  // stored sessions the page shows that now run here: show the live ones
  for (const s of state.stored) {
    const live = liveOf(s.key);
    if (live && !state.before.has(live.key) && state.lines.has(s.key)) state.before.set(live.key, state.lines.get(s.key));
  }
  for (const p of state.pinned) {
    const live = liveOf(p.key);
    if (live) { p.key = live.key; p.el.dataset.key = live.key; draw(p.view, live.key); send({op:"history", session:live.key}); }
  }
  const live = liveOf(state.chosen);
  if (live) choose(live.key); else showPanes();
}
function send(op) { op.id = op.id || ("op" + (++ops)); if (ws && ws.readyState === 1) ws.send(JSON.stringify(op)); }
function notice(text) { $("notice").textContent = text || ""; }
function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/events");
  ws.onopen = () => { $("conn").textContent = "connected"; };
  ws.onclose = () => { $("conn").textContent = "disconnected; retrying…"; setTimeout(connect, 2000); };
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.k === "hello") {
      state.steer = m.steer; $("mode").textContent = m.steer ? "steering allowed" : "read-only";
      state.sessions = new Map(m.sessions.map(s => [s.key, s])); state.asks = m.asks; showSessions(); showAsks();
      if (!state.chosen && m.sessions.length) choose(m.sessions[m.sessions.length - 1].key);
    } else if (m.k === "sessions") {
      state.sessions = new Map(m.sessions.map(s => [s.key, s])); showSessions(); followResumed();
      if (!state.chosen && m.sessions.length) choose(m.sessions[0].key);
    } else if (m.k === "asks") { state.asks = m.asks; showAsks(); }
    else if (m.k === "stored") {
      state.stored = m.stored; state.parked = m.parked; state.resumable = m.resumable; showSessions(); showParked();
      if (!state.chosen && state.stored.length) choose(state.stored[0].key);
    }
    else if (m.k === "line") { addLine(m.s, m.n, m.d, m.l); }
    else if (m.k === "history") {
      const old = state.lines.get(m.s) || [], last = m.lines.length ? m.lines[m.lines.length - 1][0] : 0;
      const lines = m.lines.concat(old.filter(l => l[0] > last)); lines.requested = true; lines.dropped = m.dropped || 0;
      lines.error = m.error || null;
      state.lines.set(m.s, lines); if (m.s === state.chosen) showTranscript();
      for (const p of state.pinned) if (p.key === m.s) draw(p.view, m.s);
    } else if (m.k === "dropped") { notice("the relay dropped " + m.count + " lines this page did not read in time"); }
    else if (m.k === "done") { notice(m.error ? m.op + ": " + m.error : ""); }
    else if (m.k === "ide") { notice(m.text); }
    else if (m.k === "error") { notice(m.error); }
  };
}
$("interrupt").onclick = () => send({op:"interrupt", session:state.chosen});
$("pin").onclick = () => { if (state.chosen) pin(state.chosen); };
$("mode-select").onchange = () => send({op:"mode", session:state.chosen, mode:$("mode-select").value});
$("bind-ide").onclick = () => send({op:"bind_ide", session:state.chosen});
$("unbind-ide").onclick = () => send({op:"unbind_ide", session:state.chosen});
$("compose").onsubmit = (e) => { e.preventDefault(); const text = $("message").value; if (!text.trim()) return;
  const s = known(state.chosen);
  if (s && s.state === "stored") send({op:"continue", session_id:s.session_id, text});
  else send({op:"message", session:state.chosen, text});
  $("message").value = ""; };
connect();
</script></body></html>
"""
