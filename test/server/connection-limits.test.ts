// A client that sends its request slowly, or opens many connections, holds the server's sockets
// for a bounded time only: headers and body have deadlines (408, then closed), and connections
// beyond the cap are closed at once. An event stream, whose request was sent in full, is not
// cut by those deadlines however long its run goes on.
import { connect, type Socket } from "node:net";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, events, readSse, slowTool } from "./helpers.js";

const open: Array<Serving | Socket> = [];
afterEach(async () => {
  for (const item of open.splice(0)) {
    if ("destroy" in item) item.destroy();
    else await item.close();
  }
});

async function listening(
  options: Omit<Parameters<typeof serve>[1], "port">,
  agent = agentWith([{ text: "hi" }]),
) {
  const serving = await serve(createServer({ agent }), { port: 0, ...options });
  open.push(serving);
  return serving;
}

function connected(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  open.push(socket);
  socket.on("error", () => {});
  return new Promise((resolve) => socket.once("connect", () => resolve(socket)));
}

/** Resolves with what the server sent and how long after `since` the connection closed. */
function closing(socket: Socket, since: number): Promise<{ ms: number; received: string }> {
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  return new Promise((resolve) => socket.once("close", () => resolve({ ms: Date.now() - since, received })));
}

/** Writes `text` a character at a time, every `everyMs`, while the socket is open. */
function trickle(socket: Socket, text: string, everyMs = 50): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
}

describe("slow clients", () => {
  it("a client trickling its headers gets 408 and a closed socket at headersTimeoutMs", async () => {
    const serving = await listening({ headersTimeoutMs: 400, requestTimeoutMs: 2_000 });
    const socket = await connected(serving.port);
    const started = Date.now();
    const closed = closing(socket, started);
    socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    trickle(socket, `X-Slow: ${"a".repeat(1_000)}`);
    const { ms, received } = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(ms).toBeLessThan(1_500);
  });

  it("a client that connects and sends nothing is closed at headersTimeoutMs", async () => {
    const serving = await listening({ headersTimeoutMs: 400, requestTimeoutMs: 2_000 });
    const socket = await connected(serving.port);
    const { ms } = await closing(socket, Date.now());
    expect(ms).toBeLessThan(1_500);
  });

  it("a client trickling its body gets 408 and a closed socket at requestTimeoutMs", async () => {
    const serving = await listening({ headersTimeoutMs: 400, requestTimeoutMs: 800 });
    const socket = await connected(serving.port);
    const started = Date.now();
    const closed = closing(socket, started);
    const body = JSON.stringify({ message: "x".repeat(2_000) });
    socket.write(
      `POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    trickle(socket, body);
    const { ms, received } = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeGreaterThanOrEqual(750);
    expect(ms).toBeLessThan(2_000);
  });

  it("an event stream stays open well past requestTimeoutMs, to the end of its run", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [{ toolCalls: [{ name: "slow", args: { step: "one" } }] }, { text: "all done" }],
      [slow.tool],
    );
    // 500 ms: the run's own POST must still be answered within it on a loaded machine (at 200 ms
    // it sometimes was not, beside another test file).
    const serving = await listening({ headersTimeoutMs: 250, requestTimeoutMs: 500 }, agent);
    const started = await fetch(`${serving.url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "go" }),
    });
    const { runId } = (await started.json()) as { runId: string };
    const stream = await fetch(`${serving.url}/api/runs/${runId}/events`);
    // Five times the request timeout with the stream idle, then the run goes on and ends.
    setTimeout(() => slow.release(), 2_500);
    const frames = await readSse(stream, (f) => f.some((x) => x.data?.includes('"run_completed"')), 10_000);
    const all = events(frames);
    expect(all.map((e) => e.type)).toContain("tool_call_completed");
    expect(all.at(-1)).toMatchObject({ type: "run_completed" });
  });
});

describe("many connections", () => {
  it("connections beyond maxConnections are closed at once; one frees a place when it closes", async () => {
    const serving = await listening({ maxConnections: 3 });
    const held = await Promise.all([1, 2, 3].map(() => connected(serving.port)));
    for (const socket of held) socket.write("GET / HTTP/1.1\r\n");

    const refused = await connected(serving.port);
    const { ms, received } = await closing(refused, Date.now());
    expect(received).toBe("");
    expect(ms).toBeLessThan(500);
    // The held ones are untouched.
    expect(held.every((socket) => !socket.destroyed)).toBe(true);

    held[0]!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const page = await fetch(`${serving.url}/`, { headers: { connection: "close" } });
    expect(page.status).toBe(200);
    await page.text();
  });

  it("rejects limits that are not positive integers, and a header timeout above the request timeout", async () => {
    const server = createServer({ agent: agentWith([{ text: "hi" }]) });
    expect(() => serve(server, { port: 0, maxConnections: 0 })).toThrow(
      /maxConnections must be a positive integer/,
    );
    expect(() => serve(server, { port: 0, requestTimeoutMs: 1.5 })).toThrow(/requestTimeoutMs/);
    expect(() => serve(server, { port: 0, headersTimeoutMs: 40_000 })).toThrow(
      /headersTimeoutMs \(40000\) must not be more than requestTimeoutMs \(30000\)/,
    );
  });
});
