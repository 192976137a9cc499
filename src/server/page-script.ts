/**
 * The chat page's main script: plain browser JavaScript (no build step), kept as a string so
 * `tsc` ships it. It speaks the native API: `POST /api/runs` to start a run in the page's
 * session (with attached files as content parts: see `page-attach.ts`), `GET
 * /api/runs/:id/events` to follow it (resuming with `?after=` after a drop), the control
 * endpoints for approvals, answers, steering and stop, and `GET /api/sessions/:id` to replay a
 * chat's runs. The open chat's id lives in localStorage, so a reload replays each of its
 * runs once and follows the live one. Tool arguments, results, questions and errors are shown as
 * text, never as HTML.
 */
export const PAGE_SCRIPT = String.raw`
  // Where the server's app is mounted ("" at the root, "/agent" under a prefix): every API call
  // goes under it, and the open chat and the token are kept apart from another mount's.
  const BASE = document.documentElement.dataset.base || "";
  const STORE_KEY = "quiver.chat" + (BASE ? ":" + BASE : "");
  const TOKEN_KEY = "quiver.token" + (BASE ? ":" + BASE : "");
  const saved = () => { try { return JSON.parse(localStorage.getItem(STORE_KEY) || "{}"); } catch { return {}; } };
  // A chat with no run yet is "fresh": the server does not know it, so the page does not ask.
  const save = (s) => localStorage.setItem(STORE_KEY, JSON.stringify({ sessionId: s.sessionId, fresh: !!s.fresh }));
  // randomUUID needs a secure context; a page served over plain http to another machine is not one.
  const newSessionId = () => "session_" + (crypto.randomUUID ? crypto.randomUUID()
    : [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join(""));
  let state = saved();
  if (!state.sessionId) state = { sessionId: newSessionId(), fresh: true };
  save(state);

  const log = $("log"), scroller = $("scroller"), statusLine = $("status"), form = $("composer"), input = $("message");
  const sendButton = $("send"), cancelButton = $("cancel"), agentSelect = $("agent"), jumpButton = $("jump");
  let token = localStorage.getItem(TOKEN_KEY) || "";
  const runs = new Map();
  let current = null;

  function headers(json) {
    const h = {};
    if (json) h["content-type"] = "application/json";
    if (token) h.authorization = "Bearer " + token;
    return h;
  }
  function refused() {
    const text = token ? "The server refused this access token." : "This server needs an access token.";
    askToken(text);
    const error = new Error(text);
    error.status = 401;
    return error;
  }
  async function api(method, path, body) {
    // A body may come as its JSON text already (a message with files, measured before it is sent).
    const text = body === undefined || typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(BASE + path, { method, headers: headers(body !== undefined), body: text });
    if (res.status === 401) throw refused();
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) {
      const error = new Error((data && data.error && data.error.message) || res.status + " " + res.statusText);
      error.status = res.status;
      throw error;
    }
    return data;
  }
  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", !!isError);
  }
  function askToken(text) {
    $("token-note").textContent = text;
    const box = $("token-box");
    const wasHidden = box.hidden;
    box.hidden = false;
    if (wasHidden) { $("token").value = ""; $("token").focus(); }
    setStatus(text, true);
  }
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value.trim();
    localStorage.setItem(TOKEN_KEY, token);
    $("token-box").hidden = true;
    setStatus("");
    boot();
  });

  // ---- following the conversation ---------------------------------------------------------
  // The view stays at the newest content while it is there; a person who scrolls up to read
  // keeps their place, and "Jump to latest" brings them back.
  let pinned = true;
  scroller.addEventListener("scroll", () => {
    pinned = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
    if (pinned) jumpButton.hidden = true;
  }, { passive: true });
  // Whatever changes the conversation's height or the room it has (new text, a tool card, the
  // message box growing, the window turning) keeps the newest content in view, before it is drawn.
  const keepLatest = () => {
    if (pinned) scroller.scrollTop = scroller.scrollHeight;
    else if (scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight >= 48) jumpButton.hidden = false;
  };
  const resized = new ResizeObserver(keepLatest);
  resized.observe(log);
  resized.observe(scroller);
  function toLatest() {
    pinned = true;
    jumpButton.hidden = true;
    scroller.scrollTop = scroller.scrollHeight;
  }
  jumpButton.addEventListener("click", () => { toLatest(); input.focus(); });

  // ---- rendering one run -------------------------------------------------------------
  // A run's view, and one per child run (an agent used as a tool) nested in the card of the
  // call that started it. Cards are keyed by the id the API takes: the call's id for the run's
  // own calls, "childRunId/callId" for a child's.
  function makeRun(runId) {
    const section = el("section", { class: "run", "aria-label": "Run " + runId, "data-run-id": runId });
    log.append(section);
    const run = { runId, section, lastSeq: 0, text: null, reasoning: null, calls: new Map(), children: new Map(),
      waiting: new Map(), parked: false, status: "running", stopReason: null, closed: false };
    run.root = run;
    runs.set(runId, run);
    return run;
  }
  function wireId(view, call) { return view === view.root ? call.id : view.runId + "/" + call.id; }
  function closeText(view) { endText(view.text); view.text = null; view.reasoning = null; }
  // What the current model turn streamed: a fallback to another model or a provider's restart
  // discards it, and an answer an output guardrail withheld must not stay on screen.
  function dropTurn(view) {
    closeText(view);
    for (const node of view.turnNodes || []) node.remove();
    view.turnNodes = [];
  }
  function userBubble(text, media) {
    return el("div", { class: "user" }, el("span", { class: "sr-only" }, "You: "),
      media && media.length ? el("div", { class: "media" }, ...media) : null, text);
  }
  function statusOf(run) {
    if (run.waiting.size === 0) return "Running…";
    if (run.parked) return "Waiting for your decision (saved: you can close this page)";
    return [...run.waiting.values()].pop();
  }
  function endStatus(run) {
    if (run.status === "failed") return "The run failed.";
    if (run.status !== "completed") return "";
    if (run.stopReason === "cancelled") return "Cancelled.";
    if (run.stopReason === "max_turns") return "Stopped: the agent reached its turn limit.";
    if (run.stopReason === "budget") return "Stopped: the run's budget ran out.";
    return "Done.";
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
    const progress = el("pre", { class: "progress", hidden: true });
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
    card.details.open = true;
    card.controls.replaceChildren();
    const reasonId = "reason-" + run.runId + "-" + callId;
    const reasonInput = el("input", { type: "text", id: reasonId, placeholder: "optional", autocomplete: "off" });
    const decide = async (approved) => {
      for (const b of card.controls.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/approve",
          { callId, approved, ...(reasonInput.value.trim() && { reason: reasonInput.value.trim() }) });
        card.controls.replaceChildren(el("p", { class: "state" }, approved ? "Approved" : "Denied"));
        input.focus();
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
    card.details.open = true;
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
        ...options.map((o) => el("button", { type: "button", title: String(o.description || ""), onclick: () => send(String(o.label)) }, String(o.label)))) : null,
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

  function textOf(content) {
    if (typeof content === "string") return content;
    return (content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
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
        run.section.append(userBubble(last ? textOf(last.content) : "", last ? messageMedia(last.content, run.sent) : []));
        break;
      }
      case "turn_started": view.turnNodes = []; break;
      case "text_delta":
        if (!view.text) {
          view.text = textBlock(view.section, "text");
          view.reasoning = null;
          (view.turnNodes || (view.turnNodes = [])).push(view.text.node);
        }
        addText(view.text, ev.delta);
        break;
      case "reasoning_delta":
        if (!view.reasoning) {
          closeText(view);
          view.reasoning = el("div", { class: "reasoning" });
          view.section.append(view.reasoning);
          (view.turnNodes || (view.turnNodes = [])).push(view.reasoning);
        }
        view.reasoning.textContent += ev.delta;
        break;
      case "model_fallback":
        dropTurn(view);
        view.section.append(el("p", { class: "state", role: "note" }, ev.from + " failed; " + ev.to + " answers instead"));
        break;
      case "guardrail_tripped":
        if (ev.stage !== "output") break;
        dropTurn(view);
        view.section.append(el("p", { class: "state", role: "note" }, "The answer was withheld by the guardrail " + ev.guardrail + "."));
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
        // A denial reads as what happened ("… was not approved: why"), not as the hint the model gets.
        const shown = !ev.ok && ev.error && ev.error.kind === "denied" ? ev.error.message : pretty(ev.output);
        card.output.replaceChildren(el("div", { class: "label" }, ev.ok ? "Result" : "Error"), el("pre", {}, shown));
        toolMedia(card, ev);
        if (ev.details && typeof ev.details.diff === "string") card.output.append(el("div", { class: "label" }, "Diff"), diffView(ev.details.diff));
        if (ev.ok && run.calls.size > 2) card.details.open = false;
        waited(view, ev.call);
        break;
      }
      case "warning":
        if (ev.code === "model_reset") dropTurn(view);
        view.section.append(el("p", { class: "state", role: "note" }, "Warning: " + ev.message));
        break;
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
        if (own) { run.status = "completed"; run.stopReason = ev.stopReason; }
        if (ev.stopReason === "cancelled") view.section.append(el("p", { class: "state" }, own ? "Cancelled." : ev.agent + " was cancelled."));
        else if (ev.stopReason !== "completed" && ev.stopReason !== "ends_turn")
          view.section.append(el("p", { class: "state" }, "Stopped: " + ev.stopReason));
        break;
      case "run_failed":
        closeText(view);
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
        const res = await fetch(BASE + "/api/runs/" + encodeURIComponent(run.runId) + "/events?children=1&input=own&after=" + run.lastSeq, { headers: headers(false) });
        if (run.closed) break;
        if (res.status === 401) { refused(); return; }
        if (res.status === 404) { run.status = "gone"; run.section.append(el("p", { class: "state" }, "This run is no longer available.")); break; }
        if (!res.ok || !res.body) throw new Error("stream failed: " + res.status);
        if (run === current) { setStatus(statusOf(run)); busy(true); }
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done || run.closed) break;
          delay = 500;
          buffer += value;
          // Reads the frames in place: slicing the buffer per frame would copy it again and again.
          let start = 0, cut;
          while ((cut = buffer.indexOf("\n\n", start)) >= 0) {
            let data = "";
            for (const line of buffer.slice(start, cut).split("\n"))
              if (line.startsWith("data: ")) data += (data ? "\n" : "") + line.slice(6);
            start = cut + 2;
            if (data) apply(run, JSON.parse(data));
          }
          buffer = buffer.slice(start);
        }
      } catch (err) {
        if (run === current && !run.closed) setStatus("Connection lost, reconnecting…", true);
      }
      if (run.status !== "running" || run.closed) break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 8000);
    }
    if (run === current && !run.closed) {
      setStatus(endStatus(run), run.status === "failed");
      refreshControls();
      loadChats();
    }
  }

  function busy(on) { log.setAttribute("aria-busy", on ? "true" : "false"); }
  function refreshControls() {
    const running = current && current.status === "running";
    busy(running);
    cancelButton.hidden = !running;
    input.placeholder = running
      ? "Message the running agent"
      : "Message the agent (Enter sends, Shift+Enter for a new line)";
  }

  // The one place a message becomes a run: with files, its text and theirs as content parts.
  async function startRun(message, files) {
    const body = files.length ? { content: await contentParts(message, files) } : { message };
    body.sessionId = state.sessionId;
    if (agentSelect.value) body.agent = agentSelect.value;
    const json = JSON.stringify(body);
    if (files.length) checkBodySize(json);
    const { runId } = await api("POST", "/api/runs", json);
    if (state.fresh) { state.fresh = false; save(state); }
    if (files.length) filesSent(files);
    current = makeRun(runId);
    // Its first event shows the message: its images from the files themselves, not decoded again.
    current.sent = files;
    refreshControls();
    follow(current);
    loadChats();
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const message = input.value.trim(), files = pendingFiles();
    if (!message && !files.length) return;
    const running = current && current.status === "running";
    // A running agent takes more text, not files (the server's inject is text only).
    if (running && files.length) {
      attachMessage("Files go with a new message: wait for the agent to finish (or stop it), then send.");
      return;
    }
    sendButton.disabled = true;
    toLatest();
    try {
      if (running) {
        await api("POST", "/api/runs/" + encodeURIComponent(current.runId) + "/inject", { message });
        current.section.append(userBubble(message));
      } else await startRun(message, files);
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
    const run = current;
    if (!run) return;
    try {
      await api("POST", "/api/runs/" + encodeURIComponent(run.runId) + "/cancel", {});
      // The run may have ended (and said so) while the request was on its way.
      if (run === current && run.status === "running") setStatus("Stopping…");
    } catch (err) { setStatus(err.message, true); }
  });

  /** Shows a chat: each of its runs replayed from its first event, the live one followed. */
  let opening = 0;
  async function openSession(sessionId, fresh) {
    const mine = ++opening;
    for (const run of runs.values()) run.closed = true;
    runs.clear();
    log.replaceChildren();
    releaseImages();
    current = null;
    state = { sessionId, fresh: !!fresh };
    save(state);
    setStatus("");
    let info = null;
    if (!fresh) {
      try { info = await api("GET", "/api/sessions/" + encodeURIComponent(sessionId)); }
      catch (err) {
        // Gone (a server without a store restarted): start it afresh rather than ask again.
        if (err.status === 404) { state.fresh = true; save(state); }
        else setStatus(err.message, true);
      }
    }
    if (mine !== opening) return;
    showTitle(info);
    for (const runId of info ? info.runs : []) {
      const run = makeRun(runId);
      current = run;
      follow(run);
    }
    refreshControls();
    markOpenChat();
    toLatest();
  }
  function newChat() {
    openSession(newSessionId(), true);
    input.focus();
  }

  async function boot() {
    try {
      const { agents, default: first } = await api("GET", "/api/agents");
      agentSelect.replaceChildren(...agents.map((a) => el("option", { value: a, selected: a === first }, a)));
      $("agent-field").hidden = agents.length < 2;
    } catch (err) { if (err.status !== 401) setStatus(err.message, true); return; }
    loadChats();
    await openSession(state.sessionId, state.fresh);
    input.focus();
  }
`;
