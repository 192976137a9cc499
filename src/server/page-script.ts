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
  function makeRun(runId) {
    const section = el("section", { class: "run", "aria-label": "Run " + runId, "data-run-id": runId });
    log.append(section);
    const run = { runId, section, lastSeq: 0, text: null, reasoning: null, calls: new Map(), status: "running", closed: false };
    runs.set(runId, run);
    return run;
  }
  function closeText(run) { run.text = null; run.reasoning = null; }
  function toolCard(run, call) {
    let card = run.calls.get(call.id);
    if (card) return card;
    const state = el("span", { class: "state" }, "requested");
    const body = el("div", { class: "body" });
    const details = el("details", { class: "tool", open: true, "data-call-id": call.id },
      el("summary", {}, el("span", { class: "tool-name" }, call.name), state), body);
    body.append(el("div", { class: "label" }, "Arguments"), argsView(call));
    const progress = el("pre", { class: "progress", hidden: true, "aria-live": "polite" });
    const output = el("div", { class: "output" });
    const controls = el("div", { class: "controls" });
    body.append(progress, output, controls);
    closeText(run);
    run.section.append(details);
    card = { call, details, state, progress, output, controls };
    run.calls.set(call.id, card);
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
  function showApproval(run, call, reason) {
    const card = toolCard(run, call);
    setState(card, "needs your approval", "bad");
    card.controls.replaceChildren();
    const reasonId = "reason-" + run.runId + "-" + call.id;
    const reasonInput = el("input", { type: "text", id: reasonId, placeholder: "optional" });
    const decide = async (approved) => {
      for (const b of card.controls.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/approve",
          { callId: call.id, approved, ...(reasonInput.value.trim() && { reason: reasonInput.value.trim() }) });
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
    setStatus(call.name + " is waiting for your approval");
  }
  function showQuestion(run, call) {
    const a = call.args || {};
    const card = toolCard(run, call);
    setState(card, "asks you", "bad");
    const id = "answer-" + run.runId + "-" + call.id;
    const field = el("input", { type: "text", id, autocomplete: "off" });
    const send = async (text) => {
      try {
        await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/answer", { callId: call.id, answer: text });
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
    setStatus("The agent asks: " + a.question);
  }

  function apply(run, ev) {
    if (ev.seq <= run.lastSeq) return;
    run.lastSeq = ev.seq;
    switch (ev.type) {
      case "run_started": {
        const users = (ev.input || []).filter((m) => m.role === "user");
        const last = users[users.length - 1];
        const text = last ? (typeof last.content === "string" ? last.content : last.content.filter((b) => b.type === "text").map((b) => b.text).join("")) : "";
        run.section.append(el("div", { class: "user" }, el("span", { class: "sr-only" }, "You: "), text));
        break;
      }
      case "text_delta":
        if (!run.text) { run.text = el("div", { class: "text" }); run.section.append(run.text); run.reasoning = null; }
        run.text.textContent += ev.delta;
        break;
      case "reasoning_delta":
        if (!run.reasoning) { run.reasoning = el("div", { class: "reasoning" }); run.section.append(run.reasoning); run.text = null; }
        run.reasoning.textContent += ev.delta;
        break;
      case "turn_completed": closeText(run); break;
      case "tool_call_requested": toolCard(run, ev.call); break;
      case "approval_required": showApproval(run, ev.call, ev.reason); break;
      case "approval_resolved": {
        const card = toolCard(run, ev.call);
        card.controls.replaceChildren();
        if (ev.decision === "denied") setState(card, "denied" + (ev.reason ? ": " + ev.reason : ""), "bad");
        else setState(card, "approved");
        break;
      }
      case "tool_call_started": {
        const card = toolCard(run, ev.call);
        setState(card, "running");
        if (ev.call.args && typeof ev.call.args.question === "string") showQuestion(run, ev.call);
        break;
      }
      case "tool_call_update": {
        const card = toolCard(run, ev.call);
        card.progress.hidden = false;
        card.progress.textContent = pretty(ev.partial);
        break;
      }
      case "tool_call_completed": {
        const card = toolCard(run, ev.call);
        card.controls.replaceChildren();
        card.progress.hidden = true;
        setState(card, ev.ok ? "done" : "failed" + (ev.error ? " (" + ev.error.kind + ")" : ""), ev.ok ? "ok" : "bad");
        card.output.replaceChildren(el("div", { class: "label" }, ev.ok ? "Result" : "Error"), el("pre", {}, ev.output));
        if (ev.details && typeof ev.details.diff === "string") card.output.append(el("div", { class: "label" }, "Diff"), diffView(ev.details.diff));
        if (ev.ok && run.calls.size > 2) card.details.open = false;
        break;
      }
      case "warning": run.section.append(el("p", { class: "state", role: "note" }, "Warning: " + ev.message)); break;
      case "handoff": run.section.append(el("p", { class: "state" }, ev.from + " handed over to " + ev.to)); break;
      case "run_parked": setStatus("Waiting for your decision (saved: you can close this page)"); break;
      case "run_resumed": setStatus("Running…"); break;
      case "run_completed":
        if (ev.stopReason === "awaiting_approval") break;
        run.status = "completed"; closeText(run);
        if (ev.stopReason !== "completed") run.section.append(el("p", { class: "state" }, "Stopped: " + ev.stopReason));
        break;
      case "run_failed":
        run.status = "failed";
        run.section.append(el("p", { class: "error", role: "alert" }, "The run failed: " + ev.message));
        break;
    }
  }

  // ---- the event stream, with resume after drops ----------------------------------------
  async function follow(run) {
    let delay = 500;
    while (!run.closed && run.status === "running") {
      try {
        const res = await fetch("/api/runs/" + encodeURIComponent(run.runId) + "/events?after=" + run.lastSeq, { headers: headers(false) });
        if (res.status === 401) { askToken(); return; }
        if (res.status === 404) { run.status = "gone"; run.section.append(el("p", { class: "state" }, "This run is no longer available.")); break; }
        if (!res.ok || !res.body) throw new Error("stream failed: " + res.status);
        if (run === current) setStatus("Running…");
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
