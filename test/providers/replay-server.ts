/**
 * A real HTTP server on 127.0.0.1 for provider tests. Each request is checked by the API's
 * validator (answering 400 in the API's own error shape when it finds a problem, as the
 * real API would) and then served by the next scripted reply, in order.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";

export type RecordedRequest = {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
};

/** One scripted reply: write anything to `res` (or destroy the socket). */
export type Reply = (res: ServerResponse, req: RecordedRequest) => void | Promise<void>;

export type ReplayServer = {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  /** Problems the validator found, one entry per rejected request. */
  rejected: string[][];
  close(): Promise<void>;
};

export type Validator = (req: RecordedRequest) => string[];
export type RejectWith = (res: ServerResponse, problems: string[]) => void;

export async function startReplayServer(options: {
  replies: Reply[];
  validate: Validator;
  reject: RejectWith;
}): Promise<ReplayServer> {
  const requests: RecordedRequest[] = [];
  const rejected: string[][] = [];
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body,
      };
      requests.push(recorded);
      const problems = options.validate(recorded);
      if (problems.length > 0) {
        rejected.push(problems);
        options.reject(res, problems);
        return;
      }
      const reply = options.replies[next++];
      if (!reply) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "test server: no reply scripted", type: "test" } }));
        return;
      }
      Promise.resolve(reply(res, recorded)).catch((error) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  });
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    rejected,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The lines of a fixture file (one JSON chunk or `[DONE]` per line). */
export function fixture(name: string): string[] {
  const path = new URL(`../fixtures/providers/${name}`, import.meta.url);
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

export type StreamOptions = {
  /** How each line becomes an SSE frame. Default `data: <line>`. */
  frame?: (line: string) => string;
  /** Send only the first N lines, then behave as `after` says. */
  cutAfter?: number;
  /** After the cut: destroy the socket mid-body, end cleanly, or stall without closing. */
  after?: "disconnect" | "end" | "stall";
  /** Replace line N (0-based) with this raw text. */
  replace?: { [line: number]: string };
  /** Pause between frames. */
  delayMs?: number;
  headers?: Record<string, string>;
};

/** One Chat Completions stream chunk (a line for `streamFixture`) with the given delta and finish. */
export const chatChunk = (delta: object, finish: string | null = null, extra: object = {}) =>
  JSON.stringify({
    id: "c",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });

/** Frames SSE `data:` only (Chat Completions). */
export const dataFrame = (line: string) => `data: ${line}\n\n`;
/** Frames `event: <type>` + `data:` (Anthropic, Responses): the type is the chunk's own `type`. */
export const typedFrame = (line: string) =>
  `event: ${/"type":\s*"([^"]+)"/.exec(line)?.[1] ?? "message"}\ndata: ${line}\n\n`;

/** A reply streaming a fixture as server-sent events. */
export function streamFixture(lines: string[], options: StreamOptions = {}): Reply {
  return async (res) => {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...options.headers,
    });
    const frame = options.frame ?? dataFrame;
    const count = options.cutAfter ?? lines.length;
    for (let i = 0; i < count; i++) {
      const line = options.replace?.[i] ?? lines[i]!;
      res.write(frame(line));
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
    }
    if (options.cutAfter === undefined || options.after === "end") {
      res.end();
      return;
    }
    if (options.after === "stall") return; // keep the connection open, send nothing
    // Let the written frames reach the client first, then drop the connection.
    await new Promise((r) => setTimeout(r, 20));
    res.socket?.destroy();
  };
}

/** A reply with an error status and JSON body. */
export function errorReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return (res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };
}

/** Collects every event of a model stream. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

/** Collects events until the stream throws; returns both. */
export async function collectUntilError<T>(
  stream: AsyncIterable<T>,
): Promise<{ events: T[]; error: unknown }> {
  const events: T[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

/** The servers a test file starts, closed after each test: push every server you start. */
export function closedAfterEach(): ReplayServer[] {
  const servers: ReplayServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return servers;
}

/**
 * Starts replay servers that check requests the way one API does, each closed after its test.
 *
 * @example
 * const serve = replayServers({ validate: validateMessagesRequest, reject: rejectLikeAnthropic });
 * const server = await serve([streamFixture(fixture("anthropic/text.jsonl"), { frame: typedFrame })]);
 */
export function replayServers(api: {
  validate: Validator;
  reject: RejectWith;
}): (replies: Reply[]) => Promise<ReplayServer> {
  const servers = closedAfterEach();
  return async (replies) => {
    const server = await startReplayServer({ replies, ...api });
    servers.push(server);
    return server;
  };
}
