/**
 * The chat page's script: plain browser JavaScript (no build step, no dependencies), kept as a
 * string so \`tsc\` ships it. It speaks the native API: \`POST /api/runs\` to start a run in the
 * page's session, \`GET /api/runs/:id/events\` to follow it (resuming with \`?after=\` after a
 * drop), and the control endpoints for approvals, answers, steering and cancel. The session and
 * its run ids live in localStorage, so a reload replays each run once and follows the live one.
 */
export const PAGE_SCRIPT = String.raw`
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== undefined && c !== null) node.append(c);
    return node;
  };
  const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  const STORE_KEY = "quiver.chat";
  const saved = () => { try { return JSON.parse(localStorage.getItem(STORE_KEY) || "{}"); } catch { return {}; } };
  const save = (s) => localStorage.setItem(STORE_KEY, JSON.stringify(s));
  let state = saved();
  if (!state.sessionId) state = { sessionId: "session_" + crypto.randomUUID(), runs: [] };
  save(state);

  const log = $("log"), statusLine = $("status"), form = $("composer"), input = $("message");
  const sendButton = $("send"), cancelButton = $("cancel"), agentSelect = $("agent");
  let token = localStorage.getItem("quiver.token") || "";
  const runs = new Map();
  let current = null;

  function headers(json) {
    const h = {};
    if (json) h["content-type"] = "application/json";
    if (token) h.authorization = "Bearer " + token;
    return h;
  }
  async function api(method, path, body) {
    const res = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 401) { askToken(); throw new Error("this server needs a token"); }
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) throw new Error((data && data.error && data.error.message) || res.status + " " + res.statusText);
    return data;
  }
  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", !!isError);
  }
  function askToken() {
    const box = $("token-box");
    box.hidden = false;
    $("token").focus();
  }
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value.trim();
    localStorage.setItem("quiver.token", token);
    $("token-box").hidden = true;
    boot();
  });

  // ---- rendering one run -------------------------------------------------------------
  // A run's view, and one per child run (an agent used as a tool) nested in the card of the
  // call that started it. Cards are keyed by the id the API takes: the call's id for the run's
  // own calls, "childRunId/callId" for a child's.
  function makeRun(runId) {
    const section = el("section", { class: "run", "aria-label": "Run " + runId, "data-run-id": runId });
    log.append(section);
    const run = { runId, section, lastSeq: 0, text: null, reasoning: null, calls: new Map(), children: new Map(),
      waiting: new Map(), parked: false, status: "running", closed: false };
    run.root = run;
    runs.set(runId, run);
    return run;
  }
  function wireId(view, call) { return view === view.root ? call.id : view.runId + "/" + call.id; }
  function closeText(view) { view.text = null; view.reasoning = null; }
  function statusOf(run) {
    if (run.waiting.size === 0) return "Running…";
    if (run.parked) return "Waiting for your decision (saved: you can close this page)";
    return [...run.waiting.values()].pop();
  }
  function wait(view, call, text) {
    view.root.waiting.set(wireId(view, call), text);
    if (view.root === current) setStatus(statusOf(view.root));
  }
  function waited(view, call) {
    const run = view.root;
    if (!run.waiting.delete(wireId(view, call))) return;
    if (run === current && run.status === "running") setStatus(statusOf(run));
  }
  function toolCard(view, call) {
    const key = wireId(view, call);
    let card = view.root.calls.get(key);
    if (card) return card;
    const state = el("span", { class: "state" }, "requested");
    const body = el("div", { class: "body" });
    const details = el("details", { class: "tool", open: true, "data-call-id": key },
      el("summary", {}, el("span", { class: "tool-name" }, call.name), state), body);
    body.append(el("div", { class: "label" }, "Arguments"), argsView(call));
    const progress = el("pre", { class: "progress", hidden: true, "aria-live": "polite" });
    const output = el("div", { class: "output" });
    const controls = el("div", { class: "controls" });
    const nested = el("div", { class: "sub" });
    body.append(progress, nested, output, controls);
    closeText(view);
    view.section.append(details);
    card = { call, details, state, progress, nested, output, controls };
    view.root.calls.set(key, card);
    return card;
  }
  function setState(card, text, tone) {
    card.state.textContent = text;
    card.state.className = "state" + (tone ? " " + tone : "");
  }
  function argsView(call) {
    const a = call.args || {};
    const oldText = a.old_string ?? a.oldText ?? a.old_text ?? a.old;
    const newText = a.new_string ?? a.newText ?? a.new_text ?? a.new;
    if (typeof oldText === "string" && typeof newText === "string") {
      const rest = Object.assign({}, a);
      for (const k of ["old_string", "oldText", "old_text", "old", "new_string", "newText", "new_text", "new"]) delete rest[k];
      return el("div", {}, el("pre", {}, pretty(rest)), diffView(lineDiff(oldText, newText)));
    }
    return el("pre", {}, pretty(a));
  }
  function lineDiff(a, b) {
    const x = a.split("\n"), y = b.split("\n");
    if (x.length * y.length > 250000) return [...x.map((l) => "-" + l), ...y.map((l) => "+" + l)].join("\n");
    const m = x.length, n = y.length, dp = Array.from({ length: m + 1 }, () => new Uint32Array(n + 1));
    for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--)
      dp[i][j] = x[i] === y[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < m && j < n) {
      if (x[i] === y[j]) { out.push(" " + x[i]); i++; j++; }
      else if (dp[i + 1][j] >= dp[i][j + 1]) out.push("-" + x[i++]);
      else out.push("+" + y[j++]);
    }
    while (i < m) out.push("-" + x[i++]);
    while (j < n) out.push("+" + y[j++]);
    return out.join("\n");
  }
  function diffView(diff) {
    const pre = el("pre", { class: "diff", "aria-label": "Changes: lines starting with plus are added, minus removed" });
    for (const line of diff.split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
      pre.append(el("span", { class: cls }, line + "\n"));
    }
    return pre;
  }
  function showApproval(view, call, reason) {
    const run = view.root, callId = wireId(view, call);
    const card = toolCard(view, call);
    setState(card, "needs your approval", "bad");
    card.controls.replaceChildren();
    const reasonId = "reason-" + run.runId + "-" + callId;
    const reasonInput = el("input", { type: "text", id: reasonId, placeholder: "optional" });
    const decide = async (approved) => {
      for (const b of card.controls.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/approve",
          { callId, approved, ...(reasonInput.value.trim() && { reason: reasonInput.value.trim() }) });
        card.controls.replaceChildren(el("p", { class: "state" }, approved ? "Approved" : "Denied"));
      } catch (err) {
        setStatus(err.message, true);
        for (const b of card.controls.querySelectorAll("button")) b.disabled = false;
      }
    };
    card.controls.append(
      el("div", { class: "ask", role: "group", "aria-label": "Approve " + call.name + "?" },
        reason ? el("p", {}, reason) : null,
        el("div", { class: "row" },
          el("button", { type: "button", class: "primary", onclick: () => decide(true) }, "Approve " + call.name),
          el("button", { type: "button", class: "danger", onclick: () => decide(false) }, "Deny"),
          el("label", { for: reasonId }, "Reason"), reasonInput)));
    wait(view, call, call.name + " is waiting for your approval");
  }
  function showQuestion(view, call) {
    const run = view.root, callId = wireId(view, call);
    const a = call.args || {};
    const card = toolCard(view, call);
    setState(card, "asks you", "bad");
    const id = "answer-" + run.runId + "-" + callId;
    const field = el("input", { type: "text", id, autocomplete: "off" });
    const send = async (text) => {
      try {
        await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/answer", { callId, answer: text });
        card.controls.replaceChildren(el("p", { class: "state" }, "Answered: " + text));
      } catch (err) { setStatus(err.message, true); }
    };
    const options = Array.isArray(a.options) ? a.options : [];
    const f = el("form", { class: "ask", onsubmit: (e) => { e.preventDefault(); if (field.value.trim()) send(field.value.trim()); } },
      el("p", {}, String(a.question)),
      options.length ? el("div", { class: "options", role: "group", "aria-label": "Suggested answers" },
        ...options.map((o) => el("button", { type: "button", title: o.description || "", onclick: () => send(o.label) }, o.label))) : null,
      el("div", { class: "row" }, el("label", { for: id }, "Your answer"), field, el("button", { type: "submit", class: "primary" }, "Answer")));
    card.controls.replaceChildren(f);
    wait(view, call, "The agent asks: " + a.question);
  }

  /** The view an event belongs to: the run's own, or a child run's (created by its run_started). */
  function viewOf(run, ev) {
    if (ev.runId === run.runId) return run;
    const known = run.children.get(ev.runId);
    if (known || ev.type !== "run_started") return known;
    const above = ev.parentRunId === run.runId ? run : run.children.get(ev.parentRunId);
    const card = above && run.calls.get(above === run ? ev.parentCallId : above.runId + "/" + ev.parentCallId);
    const section = el("div", { class: "child", role: "group", "aria-label": ev.agent + " (working for the agent)" },
      el("div", { class: "label" }, ev.agent));
    (card ? card.nested : run.section).append(section);
    const view = { runId: ev.runId, root: run, section, lastSeq: 0, text: null, reasoning: null };
    run.children.set(ev.runId, view);
    return view;
  }

  function apply(run, ev) {
    const view = viewOf(run, ev);
    // Skips what was seen already: a child's events may come again after a reconnect.
    if (!view || ev.seq <= view.lastSeq) return;
    view.lastSeq = ev.seq;
    const own = view === run;
    switch (ev.type) {
      case "run_started": {
        if (!own) break;
        const users = (ev.input || []).filter((m) => m.role === "user");
        const last = users[users.length - 1];
        const text = last ? (typeof last.content === "string" ? last.content : last.content.filter((b) => b.type === "text").map((b) => b.text).join("")) : "";
        run.section.append(el("div", { class: "user" }, el("span", { class: "sr-only" }, "You: "), text));
        break;
      }
      case "text_delta":
        if (!view.text) { view.text = el("div", { class: "text" }); view.section.append(view.text); view.reasoning = null; }
        view.text.textContent += ev.delta;
        break;
      case "reasoning_delta":
        if (!view.reasoning) { view.reasoning = el("div", { class: "reasoning" }); view.section.append(view.reasoning); view.text = null; }
        view.reasoning.textContent += ev.delta;
        break;
      case "turn_completed": closeText(view); break;
      case "tool_call_requested": toolCard(view, ev.call); break;
      case "approval_required": showApproval(view, ev.call, ev.reason); break;
      case "approval_resolved": {
        const card = toolCard(view, ev.call);
        card.controls.replaceChildren();
        if (ev.decision === "denied") setState(card, "denied" + (ev.reason ? ": " + ev.reason : ""), "bad");
        else setState(card, "approved");
        waited(view, ev.call);
        break;
      }
      case "tool_call_started": {
        const card = toolCard(view, ev.call);
        setState(card, "running");
        if (ev.call.args && typeof ev.call.args.question === "string") showQuestion(view, ev.call);
        break;
      }
      case "tool_call_update": {
        const card = toolCard(view, ev.call);
        card.progress.hidden = false;
        card.progress.textContent = pretty(ev.partial);
        break;
      }
      case "tool_call_completed": {
        const card = toolCard(view, ev.call);
        card.controls.replaceChildren();
        card.progress.hidden = true;
        setState(card, ev.ok ? "done" : "failed" + (ev.error ? " (" + ev.error.kind + ")" : ""), ev.ok ? "ok" : "bad");
        card.output.replaceChildren(el("div", { class: "label" }, ev.ok ? "Result" : "Error"), el("pre", {}, ev.output));
        if (ev.details && typeof ev.details.diff === "string") card.output.append(el("div", { class: "label" }, "Diff"), diffView(ev.details.diff));
        if (ev.ok && run.calls.size > 2) card.details.open = false;
        waited(view, ev.call);
        break;
      }
      case "warning": view.section.append(el("p", { class: "state", role: "note" }, "Warning: " + ev.message)); break;
      case "handoff": view.section.append(el("p", { class: "state" }, ev.from + " handed over to " + ev.to)); break;
      case "run_parked":
        if (!own) break;
        run.parked = true;
        if (run === current) setStatus(statusOf(run));
        break;
      case "run_resumed":
        if (!own) break;
        run.parked = false;
        if (run === current) setStatus(statusOf(run));
        break;
      case "run_completed":
        if (ev.stopReason === "awaiting_approval") break;
        closeText(view);
        if (own) run.status = "completed";
        if (ev.stopReason !== "completed") view.section.append(el("p", { class: "state" }, "Stopped: " + ev.stopReason));
        break;
      case "run_failed":
        if (own) run.status = "failed";
        view.section.append(el("p", { class: "error", role: "alert" }, (own ? "The run failed: " : ev.agent + " failed: ") + ev.message));
        break;
    }
  }

  // ---- the event stream, with resume after drops ----------------------------------------
  async function follow(run) {
    let delay = 500;
    while (!run.closed && run.status === "running") {
      try {
        const res = await fetch("/api/runs/" + encodeURIComponent(run.runId) + "/events?children=1&after=" + run.lastSeq, { headers: headers(false) });
        if (res.status === 401) { askToken(); return; }
        if (res.status === 404) { run.status = "gone"; run.section.append(el("p", { class: "state" }, "This run is no longer available.")); break; }
        if (!res.ok || !res.body) throw new Error("stream failed: " + res.status);
        if (run === current) setStatus(statusOf(run));
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          delay = 500;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
            if (data) apply(run, JSON.parse(data));
          }
        }
      } catch (err) {
        if (run === current) setStatus("Connection lost, reconnecting…", true);
      }
      if (run.status !== "running") break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 8000);
    }
    if (run === current) {
      setStatus(run.status === "failed" ? "The run failed." : run.status === "completed" ? "Done." : "");
      refreshControls();
    }
  }

  function refreshControls() {
    const busy = current && current.status === "running";
    cancelButton.hidden = !busy;
    sendButton.textContent = busy ? "Send to the running agent" : "Send";
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const message = input.value.trim();
    if (!message) return;
    sendButton.disabled = true;
    try {
      if (current && current.status === "running") {
        await api("POST", "/api/runs/" + encodeURIComponent(current.runId) + "/inject", { message });
        current.section.append(el("div", { class: "user" }, el("span", { class: "sr-only" }, "You: "), message));
      } else {
        const body = { message, sessionId: state.sessionId };
        if (agentSelect.value) body.agent = agentSelect.value;
        const { runId } = await api("POST", "/api/runs", body);
        state.runs.push(runId);
        save(state);
        current = makeRun(runId);
        refreshControls();
        follow(current);
      }
      input.value = "";
    } catch (err) {
      setStatus(err.message, true);
    } finally {
      sendButton.disabled = false;
      input.focus();
    }
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  cancelButton.addEventListener("click", async () => {
    if (!current) return;
    try { await api("POST", "/api/runs/" + encodeURIComponent(current.runId) + "/cancel", {}); setStatus("Cancelling…"); }
    catch (err) { setStatus(err.message, true); }
  });
  $("new-chat").addEventListener("click", () => {
    for (const run of runs.values()) run.closed = true;
    runs.clear();
    log.replaceChildren();
    state = { sessionId: "session_" + crypto.randomUUID(), runs: [] };
    save(state);
    current = null;
    refreshControls();
    setStatus("");
    input.focus();
  });

  async function boot() {
    try {
      const { agents, default: first } = await api("GET", "/api/agents");
      agentSelect.replaceChildren(...agents.map((a) => el("option", { value: a, selected: a === first }, a)));
      $("agent-field").hidden = agents.length < 2;
    } catch (err) { setStatus(err.message, true); return; }
    for (const run of runs.values()) run.closed = true;
    runs.clear();
    log.replaceChildren();
    // Every run of the session is replayed from its first event: a reload shows each once.
    for (const runId of state.runs) {
      const run = makeRun(runId);
      current = run;
      follow(run);
    }
    refreshControls();
    input.focus();
  }
  boot();
})();
`;
