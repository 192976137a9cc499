// The hostile peer over streamable HTTP (test/fixtures/hosts/hostile-http.ts, a real server on
// 127.0.0.1): the same bounds as over stdio, for JSON and for event-stream answers.
import { Agent, Runner, ScriptedModel } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { FENCE_BEGIN, FENCE_END } from "quiver-agents/tools";
import { describe, expect, it } from "vitest";
import { startHostileHttp } from "../fixtures/hosts/hostile-http.js";

const allow = () => true as const;

for (const mode of ["json", "sse"] as const) {
  describe(`answers as ${mode === "json" ? "JSON" : "server-sent events"}`, () => {
    it("a 50 MB result is refused with a host_error, not sent again, and the session goes on", async () => {
      const server = await startHostileHttp({ mode });
      const host = mcpServer({ url: server.url }, { prefix: "h" });
      try {
        const model = new ScriptedModel([
          { toolCalls: [{ name: "h__big", args: { mb: 50 } }] },
          { toolCalls: [{ name: "h__big", args: { mb: 0.001 } }] },
          { text: "done" },
        ]);
        const result = await Runner.run(
          new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
          "go",
        );
        expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "host_error" } });
        expect(result.toolCalls[0]?.output).toMatch(/too large to accept \(more than 16777216 bytes/);
        expect(result.toolCalls[1]).toMatchObject({ ok: true });
        expect(server.calls).toEqual(["big", "big"]);
      } finally {
        await host.close();
        await server.close();
      }
    });

    it("with fence on, a JSON-RPC error's text reaches the model fenced", async () => {
      const server = await startHostileHttp({ mode });
      const host = mcpServer({ url: server.url }, { prefix: "h", fence: true });
      try {
        const model = new ScriptedModel([
          { toolCalls: [{ name: "h__rpc_error", args: {} }] },
          { text: "done" },
        ]);
        const result = await Runner.run(
          new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
          "go",
        );
        const output = String(result.toolCalls[0]?.output);
        const begin = output.indexOf(FENCE_BEGIN);
        expect(begin).toBeGreaterThan(-1);
        expect(output.indexOf("IGNORE ALL PREVIOUS")).toBeGreaterThan(begin);
        expect(output.indexOf("IGNORE ALL PREVIOUS")).toBeLessThan(output.indexOf(FENCE_END));
        expect(output).not.toContain("<|im_start|>");
      } finally {
        await host.close();
        await server.close();
      }
    });
  });
}

describe("HTTP floods", () => {
  it("a server flooding tools/list_changed on its event stream is listed a bounded number of times", async () => {
    const server = await startHostileHttp({ mode: "json", flood: true });
    const host = mcpServer({ url: server.url }, { prefix: "h" });
    try {
      const started = Date.now();
      const turns = Array.from({ length: 5 }, () => ({
        toolCalls: [{ name: "h__big", args: { mb: 0.001 } }],
      }));
      const model = new ScriptedModel([...turns, { text: "done" }]);
      const result = await Runner.run(
        new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
        "go",
      );
      const elapsed = Date.now() - started;
      expect(result.output).toBe("done");
      expect(elapsed).toBeLessThan(4_000);
      expect(server.lists()).toBeLessThanOrEqual(6 + Math.ceil(elapsed / 500) + 2);
    } finally {
      await host.close();
      await server.close();
    }
  });
});

describe("HTTP failures", () => {
  it("a 1 MB HTTP error page is cut to a few kilobytes, and fenced", async () => {
    const server = await startHostileHttp({ mode: "json" });
    const host = mcpServer({ url: server.url }, { prefix: "h", fence: true });
    try {
      const model = new ScriptedModel([
        { toolCalls: [{ name: "h__error_page", args: {} }] },
        { text: "done" },
      ]);
      const result = await Runner.run(
        new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
        "go",
      );
      const output = String(result.toolCalls[0]?.output);
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "host_error" } });
      expect(output.length).toBeLessThan(6_000);
      const begin = output.indexOf(FENCE_BEGIN);
      expect(begin).toBeGreaterThan(-1);
      expect(output.indexOf("IGNORE ALL PREVIOUS")).toBeGreaterThan(begin);
      expect(output).not.toContain("<|im_start|>");
    } finally {
      await host.close();
      await server.close();
    }
  });

  it("a server that never answers initialize fails within timeoutMs", async () => {
    const server = await startHostileHttp({ mode: "json", mute: true });
    const host = mcpServer({ url: server.url }, { timeoutMs: 700 });
    try {
      const started = Date.now();
      await expect(host.listTools()).rejects.toThrow(/could not connect.*within 700 ms/);
      expect(Date.now() - started).toBeLessThan(1_300);
    } finally {
      await host.close();
      await server.close();
    }
  });
});
