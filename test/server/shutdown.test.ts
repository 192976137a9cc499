import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunEvent } from "quiver-agents";
import { createServer, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { agentWith, events, readSse, refundTool, slowTool } from "./helpers.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-shutdown-"));
  dirs.push(dir);
  return new SqliteStore({ path: join(dir, "runs.db") });
}

const json = { "content-type": "application/json" };

async function startRun(url: string, message: string): Promise<string> {
  const started = await fetch(`${url}/api/runs`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ message }),
  });
  expect(started.status).toBe(201);
  return ((await started.json()) as { runId: string }).runId;
}

/** Follows a run's event stream to its end; resolves with what it got, rejects if the connection drops. */
function follow(url: string, runId: string, query = "") {
  const seen: RunEvent[] = [];
  let onEvent: (() => void) | undefined;
  const done = (async () => {
    const response = await fetch(`${url}/api/runs/${runId}/events${query}`);
    const frames = await readSse(
      response,
      (all) => {
        seen.splice(0, seen.length, ...events(all));
        onEvent?.();
        return false;
      },
      20_000,
    );
    return events(frames);
  })();
  const saw = (type: RunEvent["type"]) =>
    new Promise<void>((resolve, reject) => {
      const check = () => seen.some((e) => e.type === type) && resolve();
      onEvent = check;
      check();
      void done.then(check, reject);
    });
  return { done, saw };
}

describe("shutting down", () => {
  it("close() cancels runs in progress, their watchers get run_completed before the stream ends, and it resolves once the end is stored", async () => {
    const store = sqlite();
    const slow = slowTool();
    const agent = agentWith(
      [{ toolCalls: [{ id: "c1", name: "slow", args: { step: "one" } }] }, { text: "never" }],
      [slow.tool],
    );
    const serving = await serve(createServer({ agent, store }), { port: 0 });
    try {
      const runId = await startRun(serving.url, "go");
      const plain = follow(serving.url, runId);
      const family = follow(serving.url, runId, "?children=1");
      await Promise.all([plain.saw("tool_call_update"), family.saw("tool_call_update")]);

      await serving.close();
      // By now the run has ended and stored that end: the store can be closed at once.
      const summary = await store.getRun(runId);
      expect(summary?.status).toBe("completed");
      const stored = await store.read(runId);
      expect(stored.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });

      for (const watcher of [plain, family]) {
        const got = await watcher.done; // rejects if the connection was cut
        expect(got.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
      }
    } finally {
      slow.release();
      await serving.close();
      await store.close();
    }
  }, 30_000);

  it("a watcher of a parked run gets a stream that ends, not a dropped connection; new runs are refused meanwhile", async () => {
    const store = sqlite();
    const agent = agentWith(
      [{ toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }, { text: "ok" }],
      [refundTool([])],
    );
    const server = createServer({ agent, store });
    const serving = await serve(server, { port: 0 });
    try {
      const runId = await startRun(serving.url, "refund A1");
      const watcher = follow(serving.url, runId);
      await watcher.saw("run_parked"); // the stream stays open: a decision would resume the run
      const closing = serving.close();
      const got = await watcher.done;
      expect(got.at(-1)?.type).toBe("run_parked");
      await closing;

      // A server closed for good takes no new runs (a request through `fetch` still gets an answer).
      const refused = await server.fetch(
        new Request("http://127.0.0.1/api/runs", {
          method: "POST",
          headers: json,
          body: JSON.stringify({ message: "again" }),
        }),
      );
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("shutting_down");
      expect((await store.getRun(runId))?.status).toBe("parked");
    } finally {
      await serving.close();
      await store.close();
    }
  }, 30_000);

  it("close() on the handler alone (another runtime) resolves once its runs have ended", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [{ toolCalls: [{ id: "c1", name: "slow", args: { step: "one" } }] }, { text: "never" }],
      [slow.tool],
    );
    const server = createServer({ agent });
    try {
      const started = await server.fetch(
        new Request("http://127.0.0.1/api/runs", {
          method: "POST",
          headers: json,
          body: JSON.stringify({ message: "go" }),
        }),
      );
      const { runId } = (await started.json()) as { runId: string };
      const stream = await server.fetch(new Request(`http://127.0.0.1/api/runs/${runId}/events`));
      const reading = readSse(stream, undefined, 20_000);
      const status = async () =>
        (
          (await (await server.fetch(new Request(`http://127.0.0.1/api/runs/${runId}`))).json()) as {
            status: string;
          }
        ).status;
      while ((await status()) !== "running") await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 50));
      await server.close();
      expect(await status()).toBe("completed");
      expect(events(await reading).at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    } finally {
      slow.release();
    }
  }, 30_000);
});
