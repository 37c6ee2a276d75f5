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
header { grid-column: 1 / 3; padding:8px 14px; border-bottom:1px solid var(--line); display:flex; gap:12px; align-items:center; }
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
#bar .title { font-weight:600; } #bar .grow { flex:1; }
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
  #left { border-right:none; border-bottom:1px solid var(--line); max-height:38vh; }
  main { min-height:60vh; }
  #bar { flex-wrap:wrap; }
  button, select { min-height:40px; padding:6px 14px; font-size:15px; }
  .ask button { min-width:88px; }
  #transcript { padding:8px 10px; }
}
#notice { color:var(--bad); margin-left:8px; }
</style></head>
<body>
<header><b>claude_sdkurl relay</b><span id="conn">connecting…</span><span id="notice"></span><span id="mode"></span></header>
<div id="left"><ul id="sessions"></ul><div id="asks"></div></div>
<main>
  <div id="bar"><span class="title" id="chosen-title">No session chosen</span><span class="grow"></span>
    <button id="bind-ide" hidden>Bind IDE</button><button id="unbind-ide" hidden>Unbind IDE</button>
    <select id="mode-select" hidden title="the session's permission mode">
      <option>default</option><option>acceptEdits</option><option>plan</option><option>dontAsk</option><option>auto</option><option>bypassPermissions</option>
    </select>
    <button id="interrupt" hidden>Interrupt</button></div>
  <div id="transcript"></div>
  <form id="compose" hidden><textarea id="message" placeholder="Message to this session"></textarea><button id="send">Send</button></form>
</main>
<script>
"use strict";
if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);
const $ = (id) => document.getElementById(id);
const state = { steer:false, sessions:new Map(), lines:new Map(), chosen:null, asks:[], live:"" };
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
function render(d, raw) {
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
    state.live = ""; $("live") && ($("live").textContent = "");
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
    state.live += f.event.delta.text; if ($("live")) $("live").textContent = state.live; return "";
  }
  return "";
}
function parentOf(raw) {  // the subagent call a line belongs to (its parent_tool_use_id), if any
  const m = /"parent_tool_use_id"\s*:\s*"([^"]+)"/.exec(raw); return m ? m[1] : null;
}
function place(d, raw) {  // a line's HTML where it belongs: inside its subagent's fold, or at the end
  const html = render(d, raw);
  if (!html) return;
  const parent = parentOf(raw), t = $("transcript");
  const box = parent ? t.querySelector('[data-sub="' + CSS.escape(parent) + '"]') : null;
  if (box) {
    box.insertAdjacentHTML("beforeend", html);
    const count = t.querySelector('[data-count="' + CSS.escape(parent) + '"]'), calls = box.querySelectorAll("details.tool").length;
    if (count) count.textContent = calls ? "· " + calls + (calls === 1 ? " tool call" : " tool calls") : "";
  } else $("live").insertAdjacentHTML("beforebegin", html);
}
function addLine(key, n, d, raw) {
  if (!state.lines.has(key)) state.lines.set(key, []);
  const lines = state.lines.get(key);
  if (lines.length && lines[lines.length - 1][0] >= n) return;  // the history had it already
  lines.push([n, d, raw]); if (lines.length > 4000) lines.shift();
  if (key === state.chosen) {
    const t = $("transcript"), at = t.scrollTop + t.clientHeight >= t.scrollHeight - 30;
    place(d, raw); if (at) t.scrollTop = t.scrollHeight;
  }
}
function showTranscript() {
  const t = $("transcript"); state.live = "";
  t.innerHTML = '<div id="live"></div>';
  const lines = state.lines.get(state.chosen) || [];
  if (lines.dropped) $("live").insertAdjacentHTML("beforebegin", '<div class="note">' + lines.dropped + " earlier lines were let go by the relay (it keeps a session's newest lines, and an ended session's only while someone could come for them)</div>");
  for (const [n, d, l] of lines) place(d, l);
  t.scrollTop = t.scrollHeight;
}
function money(v) { return typeof v === "number" ? "$" + v.toFixed(4) : "—"; }
function showSessions() {
  const ul = $("sessions"); ul.innerHTML = "";
  for (const s of state.sessions.values()) {
    const li = document.createElement("li"); li.dataset.key = s.key; li.dataset.state = s.state;
    if (s.key === state.chosen) li.className = "chosen";
    li.innerHTML = '<span class="state ' + esc(s.state) + '">' + esc(s.state) + "</span> <b>" + esc(s.key) + "</b> " +
      '<span class="meta">' + esc((s.session_id || "").slice(0, 8)) + '</span><div class="meta">' +
      [esc(s.model || ""), s.permission_mode ? esc(s.permission_mode) : "", s.turns + (s.turns === 1 ? " turn" : " turns"), money(s.cost_usd)].filter(Boolean).join(" · ") + (s.error ? ' · <span class="error">' + esc(s.error) + "</span>" : "") + "</div>";
    li.onclick = () => choose(s.key); ul.appendChild(li);
  }
  showBar();
}
function showBar() {
  const s = state.sessions.get(state.chosen);
  $("chosen-title").textContent = s ? s.key + " · " + s.state + (s.session_id ? " · " + s.session_id : "") : "No session chosen";
  const live = !!(s && (s.state === "running" || s.state === "starting"));
  $("interrupt").hidden = !(state.steer && live);
  $("bind-ide").hidden = $("unbind-ide").hidden = !(state.steer && live);
  $("compose").hidden = !(state.steer && live && s.input_open);
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
function choose(key) {
  state.chosen = key; showSessions(); showTranscript();
  if (!state.lines.has(key) || !state.lines.get(key).requested) send({op:"history", session:key});
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
      state.sessions = new Map(m.sessions.map(s => [s.key, s])); showSessions();
      if (!state.chosen && m.sessions.length) choose(m.sessions[0].key);
    } else if (m.k === "asks") { state.asks = m.asks; showAsks(); }
    else if (m.k === "line") { addLine(m.s, m.n, m.d, m.l); }
    else if (m.k === "history") {
      const old = state.lines.get(m.s) || [], last = m.lines.length ? m.lines[m.lines.length - 1][0] : 0;
      const lines = m.lines.concat(old.filter(l => l[0] > last)); lines.requested = true; lines.dropped = m.dropped || 0;
      state.lines.set(m.s, lines); if (m.s === state.chosen) showTranscript();
    } else if (m.k === "dropped") { notice("the relay dropped " + m.count + " lines this page did not read in time"); }
    else if (m.k === "done") { notice(m.error ? m.op + ": " + m.error : ""); }
    else if (m.k === "ide") { notice(m.text); }
    else if (m.k === "error") { notice(m.error); }
  };
}
$("interrupt").onclick = () => send({op:"interrupt", session:state.chosen});
$("mode-select").onchange = () => send({op:"mode", session:state.chosen, mode:$("mode-select").value});
$("bind-ide").onclick = () => send({op:"bind_ide", session:state.chosen});
$("unbind-ide").onclick = () => send({op:"unbind_ide", session:state.chosen});
$("compose").onsubmit = (e) => { e.preventDefault(); const text = $("message").value; if (!text.trim()) return;
  send({op:"message", session:state.chosen, text}); $("message").value = ""; };
connect();
</script></body></html>
"""
