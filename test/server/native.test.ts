import { Agent, ScriptedModel } from "quiver-agents";
import { createServer, MAX_MESSAGE_BODY_BYTES } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { agentWith, BASE, events, post, readSse, refundTool, slowTool } from "./helpers.js";

describe("native run stream and control endpoints", () => {
  it("streams a run's events with ids, and resumes after Last-Event-ID without repeats", async () => {
    const server = createServer({ agent: agentWith([{ text: "hello there" }]) });
    const started = await server.fetch(post("/api/runs", { message: "hi" }));
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };

    const response = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`));
    expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
    const frames = await readSse(response);
    const all = events(frames);
    expect(all.map((e) => e.type)).toContain("text_delta");
    expect(all.at(-1)!.type).toBe("run_completed");
    expect(frames.map((f) => Number(f.id))).toEqual(all.map((e) => e.seq));

    const cut = all[2]!.seq;
    const again = await server.fetch(
      new Request(`${BASE}/api/runs/${runId}/events`, { headers: { "last-event-id": String(cut) } }),
    );
    const rest = events(await readSse(again));
    expect(rest.map((e) => e.seq)).toEqual(all.filter((e) => e.seq > cut).map((e) => e.seq));
    const viaQuery = events(
      await readSse(await server.fetch(new Request(`${BASE}/api/runs/${runId}/events?after=${cut}`))),
    );
    expect(viaQuery.map((e) => e.seq)).toEqual(rest.map((e) => e.seq));
  });

  it("approves and denies calls over POST while the stream stays open", async () => {
    const ran: string[] = [];
    const agent = agentWith(
      [
        { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
        { toolCalls: [{ id: "c2", name: "refund", args: { order: "B2" } }] },
        { text: "all done" },
      ],
      [refundTool(ran)],
    );
    const server = createServer({ agent });
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "refund" }))).json()) as {
      runId: string;
    };
    const stream = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`));
    const seen: string[] = [];
    const frames = await readSse(stream, (fs) => {
      const evs = events(fs);
      const asked = evs.filter((e) => e.type === "approval_required");
      for (const ev of asked) {
        if (ev.type !== "approval_required" || seen.includes(ev.call.id)) continue;
        seen.push(ev.call.id);
        const approved = ev.call.id === "c1";
        void server.fetch(post(`/api/runs/${runId}/approve`, { callId: ev.call.id, approved, reason: "no" }));
      }
      return evs.some((e) => e.type === "run_completed");
    });
    const evs = events(frames);
    expect(ran).toEqual(["A1"]);
    const resolved = evs.filter((e) => e.type === "approval_resolved");
    expect(resolved.map((e) => (e.type === "approval_resolved" ? [e.call.id, e.decision] : []))).toEqual([
      ["c1", "approved"],
      ["c2", "denied"],
    ]);
    const summary = (await (await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as {
      status: string;
    };
    expect(summary.status).toBe("completed");
  });

  it("a client that disconnects detaches; cancel is explicit", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [{ toolCalls: [{ id: "s1", name: "slow", args: { step: "one" } }] }, { text: "finished" }],
      [slow.tool],
    );
    const server = createServer({ agent });
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "go" }))).json()) as {
      runId: string;
    };
    // Read until the tool reports progress, then hang up.
    const first = await readSse(await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`)), (fs) =>
      events(fs).some((e) => e.type === "tool_call_update"),
    );
    const update = events(first).find((e) => e.type === "tool_call_update");
    expect(update && update.type === "tool_call_update" && update.partial).toEqual({
      progress: "working on one",
    });
    let summary = (await (await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as {
      status: string;
    };
    expect(summary.status).toBe("running");

    const cancelled = await server.fetch(post(`/api/runs/${runId}/cancel`, {}));
    expect(cancelled.status).toBe(202);
    const rest = events(await readSse(await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`))));
    const end = rest.at(-1)!;
    expect(end.type === "run_completed" && end.stopReason).toBe("cancelled");
    summary = (await (await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as {
      status: string;
    };
    expect(summary.status).toBe("completed");
    slow.release();
  });

  it("injects a message into a running run", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [
        { toolCalls: [{ id: "s1", name: "slow", args: { step: "one" } }] },
        (req) => ({ text: `last said: ${String(req.messages.at(-1)?.content)}` }),
      ],
      [slow.tool],
    );
    const server = createServer({ agent });
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "go" }))).json()) as {
      runId: string;
    };
    const stream = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`));
    let injected = false;
    const frames = await readSse(stream, (fs) => {
      const evs = events(fs);
      if (evs.some((e) => e.type === "tool_call_started") && !injected) {
        injected = true;
        void server
          .fetch(post(`/api/runs/${runId}/inject`, { message: "only 2024" }))
          .then(() => slow.release());
      }
      return evs.some((e) => e.type === "run_completed");
    });
    const done = events(frames).at(-1)!;
    expect(done.type === "run_completed" && done.output).toBe("last said: only 2024");
  });

  it("refuses bad input with JSON errors: 400, 404, 409, 413, 415", async () => {
    const server = createServer({ agent: agentWith([{ text: "x" }]) });
    const bad = await server.fetch(
      new Request(`${BASE}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{nope",
      }),
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("bad_json");
    const missing = await server.fetch(post("/api/runs", { nothing: true }));
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/"message"/);
    const unknown = await server.fetch(new Request(`${BASE}/api/runs/run_nope/events`));
    expect(unknown.status).toBe(404);
    // A new run's body may carry attachments (32 MB); a control request's may not (1 MB).
    const big = await server.fetch(post("/api/runs", { message: "x".repeat(MAX_MESSAGE_BODY_BYTES) }));
    expect(big.status).toBe(413);
    const first = (await (await server.fetch(post("/api/runs", { message: "hi" }))).json()) as {
      runId: string;
    };
    const bigAnswer = await server.fetch(
      post(`/api/runs/${first.runId}/answer`, { callId: "c", answer: "x".repeat(1_100_000) }),
    );
    expect(bigAnswer.status).toBe(413);
    const text = await server.fetch(
      new Request(`${BASE}/api/runs`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "{}",
      }),
    );
    expect(text.status).toBe(415);
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "x" }))).json()) as {
      runId: string;
    };
    const notWaiting = await server.fetch(
      post(`/api/runs/${runId}/approve`, { callId: "zzz", approved: true }),
    );
    expect(notWaiting.status).toBe(409);
    const badApprove = await server.fetch(
      post(`/api/runs/${runId}/approve`, { callId: "zzz", approved: "yes" }),
    );
    expect(badApprove.status).toBe(400);
    const badAfter = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events?after=-1`));
    expect(badAfter.status).toBe(400);
  });

  it("?children=1 carries an agent-as-tool's events between the run's own, resumable by the last id", async () => {
    const clerk = new Agent({ name: "clerk", model: new ScriptedModel([{ text: "clerk answer" }]) });
    const boss = new Agent({
      name: "boss",
      model: new ScriptedModel([
        { toolCalls: [{ id: "p1", name: "clerk", args: { input: "look" } }] },
        { text: "boss answer" },
      ]),
      tools: [clerk.asTool()],
    });
    const server = createServer({ agent: boss });
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "go" }))).json()) as {
      runId: string;
    };
    const frames = await readSse(
      await server.fetch(new Request(`${BASE}/api/runs/${runId}/events?children=1`)),
    );
    const all = events(frames);
    const child = all.find((e) => e.runId !== runId)!;
    expect(child).toMatchObject({
      type: "run_started",
      agent: "clerk",
      parentRunId: runId,
      parentCallId: "p1",
    });
    expect(all.filter((e) => e.runId !== runId).map((e) => e.type)).toContain("text_delta");
    // Only the run's own events carry an id: the last one seen resumes the stream.
    for (const [i, frame] of frames.entries())
      expect(frame.id, all[i]!.type).toBe(all[i]!.runId === runId ? String(all[i]!.seq) : undefined);
    const started = all.findIndex((e) => e.runId === runId && e.type === "tool_call_started");
    const cut = all[started]!.seq;
    const rest = events(
      await readSse(
        await server.fetch(new Request(`${BASE}/api/runs/${runId}/events?children=1&after=${cut}`)),
      ),
    );
    expect(rest).toEqual(all.slice(started + 1));
    // Without it, the stream is the run's own; a child run is not reachable by its own id.
    const own = events(await readSse(await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`))));
    expect(own).toEqual(all.filter((e) => e.runId === runId));
    expect((await server.fetch(new Request(`${BASE}/api/runs/${child.runId}/events`))).status).toBe(404);
  });
});
