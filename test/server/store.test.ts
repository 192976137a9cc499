import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonSchema, tool } from "quiver-agents";
import { createServer, type QuiverServer } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { chatClient, lastAssistant, textOf, VERSIONS } from "./chat-clients.js";
import { agentWith, BASE, events, eventually, post, readSse, refundTool } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "quiver-server-store-"));
  dirs.push(dir);
  return join(dir, "runs.db");
}

/** The agent before the restart asks for the refund; the one after it (a fresh scripted model) answers. */
function refundAgent(ran: string[], afterRestart = false) {
  const turns = afterRestart
    ? [{ text: "Refunded." }]
    : [{ toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }];
  return agentWith(turns, [refundTool(ran)]);
}

describe("with a SqliteStore, a parked run survives a restart", () => {
  it("native: the run parks, a new server replays it, an approval resumes it on the same stream", async () => {
    const path = dbPath();
    const ran: string[] = [];
    const storeA = new SqliteStore({ path });
    const serverA = createServer({ agent: refundAgent(ran), store: storeA });
    const { runId } = (await (await serverA.fetch(post("/api/runs", { message: "refund A1" }))).json()) as {
      runId: string;
    };
    const before = events(
      await readSse(await serverA.fetch(new Request(`${BASE}/api/runs/${runId}/events`)), (fs) =>
        events(fs).some((e) => e.type === "run_parked"),
      ),
    );
    expect(before.some((e) => e.type === "approval_required")).toBe(true);
    serverA.close();
    await storeA.close();

    // A new process: nothing in memory, the store has the parked run.
    const storeB = new SqliteStore({ path });
    const serverB = createServer({ agent: refundAgent(ran, true), store: storeB });
    const summary = (await (await serverB.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as {
      status: string;
      awaitingApproval: Array<{ callId: string; args: unknown }>;
    };
    expect(summary.status).toBe("parked");
    expect(summary.awaitingApproval).toEqual([{ callId: "c1", name: "refund", args: { order: "A1" } }]);
    const steer = await serverB.fetch(post(`/api/runs/${runId}/inject`, { message: "hurry" }));
    expect(steer.status).toBe(409);
    expect(((await steer.json()) as { error: { message: string } }).error.message).toMatch(
      /waiting for a decision: approve or deny/,
    );

    const lastSeen = before.at(-1)!.seq;
    const stream = await serverB.fetch(
      new Request(`${BASE}/api/runs/${runId}/events`, { headers: { "last-event-id": String(lastSeen) } }),
    );
    const approving = serverB.fetch(post(`/api/runs/${runId}/approve`, { callId: "c1", approved: true }));
    const after = events(await readSse(stream, (fs) => events(fs).some((e) => e.type === "run_completed")));
    expect((await approving).status).toBe(202);
    expect(after[0]!.seq).toBe(lastSeen + 1);
    expect(after.map((e) => e.type)).toEqual(
      expect.arrayContaining(["approval_resolved", "run_resumed", "tool_call_completed"]),
    );
    const done = after.at(-1)!;
    expect(done.type === "run_completed" && done.output).toBe("Refunded.");
    expect(ran).toEqual(["A1"]);
    serverB.close();
    await storeB.close();
  });

  it("a run that parked, resumed and parked again is waiting on its second call after a restart", async () => {
    const path = dbPath();
    const ran: string[] = [];
    const turns = [
      { toolCalls: [{ id: "d0", name: "refund", args: { order: "A0" } }] },
      { toolCalls: [{ id: "d1", name: "refund", args: { order: "A1" } }] },
      {
        toolCalls: [
          { id: "d2", name: "refund", args: { order: "A2" } },
          { id: "d3", name: "refund", args: { order: "A3" } },
        ],
      },
      { text: "All refunded." },
    ];
    const parkedOn = async (server: QuiverServer, runId: string, calls: string[]) =>
      eventually(async () => {
        const res = await server.fetch(new Request(`${BASE}/api/runs/${runId}`));
        const body = (await res.json()) as { status: string; awaitingApproval: Array<{ callId: string }> };
        return body.status === "parked" && body.awaitingApproval.map((c) => c.callId).join() === calls.join();
      });
    let store = new SqliteStore({ path });
    let server = createServer({ agent: agentWith(turns, [refundTool(ran)]), store });
    const { runId } = (await (await server.fetch(post("/api/runs", { message: "refund all" }))).json()) as {
      runId: string;
    };
    await parkedOn(server, runId, ["d0"]);
    expect(
      (await server.fetch(post(`/api/runs/${runId}/approve`, { callId: "d0", approved: true }))).status,
    ).toBe(202);
    await parkedOn(server, runId, ["d1"]);

    const restart = async (remaining: typeof turns) => {
      server.close();
      await store.close();
      store = new SqliteStore({ path });
      server = createServer({ agent: agentWith(remaining, [refundTool(ran)]), store });
    };
    // A new process reads the run back: it waits on d1 only (d0 was decided and has run).
    await restart(turns.slice(2));
    await parkedOn(server, runId, ["d1"]);
    expect(
      (await server.fetch(post(`/api/runs/${runId}/approve`, { callId: "d1", approved: true }))).status,
    ).toBe(202);
    await parkedOn(server, runId, ["d2"]);

    // Two calls that need approval in one turn: the first is asked (the second's preflight waits
    // behind it); decided, the run goes on and asks the second.
    expect(
      (await server.fetch(post(`/api/runs/${runId}/approve`, { callId: "d2", approved: true }))).status,
    ).toBe(202);
    await parkedOn(server, runId, ["d3"]);
    await restart(turns.slice(3));
    await parkedOn(server, runId, ["d3"]);
    expect(
      (await server.fetch(post(`/api/runs/${runId}/approve`, { callId: "d3", approved: true }))).status,
    ).toBe(202);
    await eventually(async () => {
      const res = await server.fetch(new Request(`${BASE}/api/runs/${runId}`));
      return ((await res.json()) as { status: string }).status === "completed";
    });
    expect(ran).toEqual(["A0", "A1", "A2", "A3"]);
    server.close();
    await store.close();
  });

  it.each(VERSIONS)(
    "useChat (%s): the approval answered after a restart continues the same message",
    async (version) => {
      const path = dbPath();
      const ran: string[] = [];
      let store = new SqliteStore({ path });
      let server = createServer({ agent: refundAgent(ran), store });
      // The client keeps its messages; only the server behind it restarts.
      const proxy: QuiverServer = { ...server, fetch: (req, env) => server.fetch(req, env) };
      const chat = chatClient(version, proxy, { id: "chat-restart", autoSend: "approvals" });
      await chat.sendMessage({ text: "refund A1" });
      const part = lastAssistant(chat).parts.find((p) => p.type === "tool-refund")!;
      expect(part.state).toBe("approval-requested");
      // The response ends as the run asks; the process stops once the run has parked (a
      // process killed before that holds the run's lease until it expires).
      const runId = lastAssistant(chat).id;
      await eventually(async () => {
        const res = await server.fetch(new Request(`${BASE}/api/runs/${runId}`));
        return ((await res.json()) as { status: string }).status === "parked";
      });

      server.close();
      await store.close();
      store = new SqliteStore({ path });
      server = createServer({ agent: refundAgent(ran, true), store });

      // The page reloads too: the chat's stream replays the parked run and ends at the approval.
      const reloaded = chatClient(version, proxy, { id: "chat-restart" });
      await reloaded.resumeStream();
      expect(reloaded.error).toBeUndefined();
      expect(lastAssistant(reloaded).parts.find((p) => p.type === "tool-refund")?.state).toBe(
        "approval-requested",
      );

      await chat.addToolApprovalResponse({ id: part.approval!.id, approved: true });
      await eventually(() => chat.status === "ready" && textOf(lastAssistant(chat)) === "Refunded.");
      expect(chat.error).toBeUndefined();
      expect(lastAssistant(chat).parts.find((p) => p.type === "tool-refund")).toMatchObject({
        state: "output-available",
        output: "refunded A1",
      });
      expect(chat.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
      expect(ran).toEqual(["A1"]);
      server.close();
      await store.close();
    },
  );
});

describe("a new run's id", () => {
  it("is answered once the run's start is stored: the store knows every id the server hands out", async () => {
    const inner = new SqliteStore({ path: dbPath() });
    // A store that takes 300 ms to store anything (like a remote database: it does not apply calls
    // in the order they were made): the 201 waits for the run's first append.
    const slow = new Proxy(inner, {
      get(target, key, receiver) {
        if (key === Symbol.for("quiver.appendsInCallOrder")) return false;
        const value = Reflect.get(target, key, receiver);
        if (key === "append")
          return async (...args: Parameters<typeof inner.append>) => {
            await new Promise((r) => setTimeout(r, 300));
            return inner.append(...args);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const server = createServer({ agent: agentWith([{ text: "hello" }], []), store: slow });
    try {
      const response = await server.fetch(post("/api/runs", { message: "hi" }));
      expect(response.status).toBe(201);
      const { runId } = (await response.json()) as { runId: string };
      const stored = await inner.read(runId);
      expect(stored[0]).toMatchObject({ type: "run_started", input: [{ role: "user", content: "hi" }] });
    } finally {
      await inner.close();
    }
  });
});

describe("a run whose process died", () => {
  it("is picked up when a client asks for it after a restart, and its stream goes on to the end", async () => {
    const { execFile } = await import("node:child_process");
    const { resolve: resolvePath } = await import("node:path");
    const { writeFileSync } = await import("node:fs");
    const root = resolvePath(import.meta.dirname, "../..");
    const db = dbPath();
    const effects = `${db}.effects`;
    writeFileSync(effects, "");
    // A process that starts run r-crashed and dies inside its first tool call.
    const signal = await new Promise<NodeJS.Signals | null>((done) =>
      execFile(
        process.execPath,
        ["--import", "tsx", join(root, "test/fixtures/durability/session-crash-agent.ts")],
        { cwd: root, env: { ...process.env, DB: db, EFFECTS: effects }, timeout: 60_000 },
        (error) => done((error as { signal?: NodeJS.Signals } | null)?.signal ?? null),
      ),
    );
    expect(signal).toBe("SIGKILL");
    const store = new SqliteStore({ path: db });
    const charge = tool({
      name: "charge",
      description: "Charge the card.",
      parameters: jsonSchema<{ cents: number }>({
        type: "object",
        properties: { cents: { type: "number" } },
      }),
      execute: () => "charged",
    });
    const server = createServer({
      agent: agentWith([{ text: "The charge was interrupted; please check it." }], [charge], "shop"),
      store,
    });
    try {
      const frames = await readSse(
        await server.fetch(new Request(`${BASE}/api/runs/r-crashed/events`)),
        (fs) => events(fs).some((e) => e.type === "run_completed" || e.type === "run_failed"),
      );
      const seen = events(frames);
      expect(seen.find((e) => e.type === "run_resumed")).toBeDefined();
      expect(seen.find((e) => e.type === "tool_call_completed")).toMatchObject({
        error: { kind: "interrupted" },
      });
      expect(seen.at(-1)).toMatchObject({
        type: "run_completed",
        output: "The charge was interrupted; please check it.",
      });
      expect((await store.getRun("r-crashed"))?.status).toBe("completed");
    } finally {
      await store.close();
    }
  }, 60_000);
});
