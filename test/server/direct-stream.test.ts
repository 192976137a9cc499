import { connect, type Socket } from "node:net";
import { createServer, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { agentWith, BASE, chattyAgent, events, post, readSse, slowTool } from "./helpers.js";

// Under serve() an event stream is written to Node's response directly, not through a web
// stream: what a client reads must be what server.fetch() gives anywhere else.

describe("event streams under serve()", () => {
  it("carry the same headers and events as through server.fetch, and end with the run", async () => {
    const server = createServer({ agent: chattyAgent(300, 50) });
    const serving = await serve(server, { port: 0 });
    try {
      const { runId } = (await (await server.fetch(post("/api/runs", { message: "talk" }))).json()) as {
        runId: string;
      };
      const overHttp = await fetch(`${serving.url}/api/runs/${runId}/events`);
      expect(overHttp.status).toBe(200);
      const inProcess = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`));
      for (const name of ["content-type", "cache-control", "x-accel-buffering"])
        expect(overHttp.headers.get(name)).toBe(inProcess.headers.get(name));
      expect(overHttp.headers.get("x-hono-already-sent")).toBeNull();
      const read = events(await readSse(overHttp));
      expect(read.filter((e) => e.type === "text_delta")).toHaveLength(300);
      expect(read.at(-1)!.type).toBe("run_completed");
      expect(read).toEqual(events(await readSse(inProcess)));
      // The response ends with the run's stream (a reader's text() settles).
      const whole = await Promise.race([
        fetch(`${serving.url}/api/runs/${runId}/events`).then((r) => r.text()),
        new Promise<string>((resolve) => setTimeout(() => resolve("(still open)"), 3_000)),
      ]);
      expect(whole.trimEnd().endsWith("}")).toBe(true);
      expect(whole).toContain('"type":"run_completed"');
      // Resumed after an id, as EventSource does.
      const resumed = events(
        await readSse(
          await fetch(`${serving.url}/api/runs/${runId}/events`, { headers: { "last-event-id": "10" } }),
        ),
      );
      expect(resumed.map((e) => e.seq)).toEqual(read.filter((e) => e.seq > 10).map((e) => e.seq));
    } finally {
      await serving.close();
    }
  });

  it("let clients hang up at any time; the run and later clients carry on", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [{ toolCalls: [{ id: "s1", name: "slow", args: { step: "one" } }] }, { text: "finished" }],
      [slow.tool],
    );
    const server = createServer({ agent });
    const serving = await serve(server, { port: 0 });
    try {
      const { runId } = (await (await server.fetch(post("/api/runs", { message: "go" }))).json()) as {
        runId: string;
      };
      const open = () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(serving.port, "127.0.0.1", () =>
            socket.write(`GET /api/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1:${serving.port}\r\n\r\n`),
          );
          socket.once("data", () => resolve(socket));
          socket.once("error", reject);
        });
      const sockets = await Promise.all(Array.from({ length: 50 }, open));
      for (const socket of sockets) socket.destroy();
      const reading = fetch(`${serving.url}/api/runs/${runId}/events`).then((r) => readSse(r));
      slow.release();
      const read = events(await reading);
      expect(read.at(-1)).toMatchObject({
        type: "run_completed",
        stopReason: "completed",
        output: "finished",
      });
    } finally {
      await serving.close();
    }
  });
});
