import { connect } from "node:net";
import { createServer, type ServerErrorContext, serve } from "quiver-agents/server";
import { MemoryStore } from "quiver-agents/store";
import { afterEach, describe, expect, it, vi } from "vitest";
import { agentWith } from "./helpers.js";

const SECRET = "SQLITE_IOERR: disk I/O error at /var/lib/app/secret-tenant-42/quiver.db";

/** A store whose session listing fails with a message full of internals. */
class FailingStore extends MemoryStore {
  override async listSessions(): Promise<never> {
    throw new Error(SECRET);
  }
}

type ErrorBody = { error: { code: string; message: string; requestId?: string } };

afterEach(() => vi.restoreAllMocks());

describe("server errors", () => {
  it("a 500 tells the client a request id, not the error; the error is logged under that id", async () => {
    const logged: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args));
    const server = createServer({ agent: agentWith([{ text: "hi" }]), store: new FailingStore() });
    const serving = await serve(server, { port: 0 });
    try {
      const response = await fetch(`${serving.url}/api/sessions`);
      const text = await response.text();
      expect(response.status).toBe(500);
      expect(text).not.toContain("secret-tenant");
      expect(text).not.toContain("SQLITE_IOERR");
      const body = JSON.parse(text) as ErrorBody;
      expect(body.error.code).toBe("internal");
      const id = body.error.requestId!;
      expect(id).toMatch(/^req_/);
      expect(body.error.message).toContain(id);
      expect(response.headers.get("x-request-id")).toBe(id);

      expect(logged).toHaveLength(1);
      const [line, error] = logged[0]!;
      expect(line).toContain(id);
      expect(line).toContain("GET /api/sessions");
      expect((error as Error).message).toBe(SECRET);

      // A proxy's own request id is kept, so its logs and the server's meet; a forged one is not.
      const tagged = await fetch(`${serving.url}/api/sessions`, { headers: { "x-request-id": "lb-7f3a.1" } });
      expect(((await tagged.json()) as ErrorBody).error.requestId).toBe("lb-7f3a.1");
      const forged = await fetch(`${serving.url}/api/sessions`, {
        headers: { "x-request-id": "x\u0085 500 GET /admin" },
      });
      expect(((await forged.json()) as ErrorBody).error.requestId).toMatch(/^req_/);
    } finally {
      await serving.close();
    }
  });

  it("onError routes the failure to the application's logger instead of the console", async () => {
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    const seen: Array<{ error: unknown; context: ServerErrorContext }> = [];
    const server = createServer({
      agent: agentWith([{ text: "hi" }]),
      store: new FailingStore(),
      onError: (error, context) => void seen.push({ error, context }),
    });
    const serving = await serve(server, { port: 0 });
    try {
      const response = await fetch(`${serving.url}/api/sessions`);
      const body = (await response.json()) as ErrorBody;
      expect(response.status).toBe(500);
      expect(seen).toHaveLength(1);
      expect((seen[0]!.error as Error).message).toBe(SECRET);
      expect(seen[0]!.context.requestId).toBe(body.error.requestId);
      expect(seen[0]!.context.status).toBe(500);
      expect(new URL(seen[0]!.context.request.url).pathname).toBe("/api/sessions");
      expect(consoleError).not.toHaveBeenCalled();

      // Refusals meant for the client keep their own words, and are nobody's error to log.
      const missing = await fetch(`${serving.url}/api/runs/run_nope`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as ErrorBody).error.message).toBe("no run run_nope");
      expect(seen).toHaveLength(1);
    } finally {
      await serving.close();
    }
  });

  it("an auth function that throws is a 503 reported like a 500, not a 401; returning null is the 401", async () => {
    const seen: Array<{ error: unknown; context: ServerErrorContext }> = [];
    const server = createServer({
      agent: agentWith([{ text: "hi" }]),
      auth: async (request) => {
        const token = request.headers.get("authorization");
        if (token === "Bearer outage") throw new Error("redis: connect ECONNREFUSED 10.0.0.5:6379");
        return token === "Bearer alice" ? "alice" : null;
      },
      onError: (error, context) => void seen.push({ error, context }),
    });
    const serving = await serve(server, { port: 0 });
    try {
      const down = await fetch(`${serving.url}/api/agents`, { headers: { authorization: "Bearer outage" } });
      const text = await down.text();
      expect(down.status).toBe(503);
      expect(down.headers.get("www-authenticate")).toBeNull();
      expect(text).not.toContain("ECONNREFUSED");
      expect(text).not.toContain("Bearer");
      const body = JSON.parse(text) as ErrorBody;
      expect(body.error.code).toBe("auth_unavailable");
      expect(seen).toHaveLength(1);
      expect((seen[0]!.error as Error).message).toContain("ECONNREFUSED");
      expect(seen[0]!.context).toMatchObject({ status: 503, requestId: body.error.requestId });

      const refused = await fetch(`${serving.url}/api/agents`, {
        headers: { authorization: "Bearer mallory" },
      });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as ErrorBody).error.code).toBe("unauthorized");
      const allowed = await fetch(`${serving.url}/api/agents`, {
        headers: { authorization: "Bearer alice" },
      });
      expect(allowed.status).toBe(200);
      expect(seen).toHaveLength(1);
    } finally {
      await serving.close();
    }
  });

  it("a client that goes away mid-body is not a server failure: nothing is reported", async () => {
    const seen: unknown[] = [];
    let reached!: () => void;
    const authenticated = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const server = createServer({
      agent: agentWith([{ text: "hi" }]),
      auth: () => {
        reached();
        return "alice";
      },
      onError: (error) => void seen.push(error),
    });
    const serving = await serve(server, { port: 0 });
    try {
      const socket = connect(serving.port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.write(
        "POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
          'content-length: 1000\r\n\r\n{"message": "a half',
      );
      await authenticated; // the body is being read now
      socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(seen).toEqual([]);
    } finally {
      await serving.close();
    }
  });
});
