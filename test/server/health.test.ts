import { createServer, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";

describe("GET /api/health", () => {
  it("answers 200 without credentials, and 503 once the server is shutting down", async () => {
    const server = createServer({ agent: agentWith([{ text: "hi" }]), auth: "s3cret" });
    const serving = await serve(server, { port: 0 });
    try {
      const up = await fetch(`${serving.url}/api/health`);
      expect(up.status).toBe(200);
      expect(up.headers.get("cache-control")).toBe("no-store");
      expect(await up.json()).toEqual({ status: "ok" });
      // Everything else still needs the token.
      expect((await fetch(`${serving.url}/api/agents`)).status).toBe(401);

      await server.close();
      const down = await fetch(`${serving.url}/api/health`);
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ status: "shutting_down" });
    } finally {
      await serving.close();
    }
  });
});
