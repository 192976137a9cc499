import { Agent, ScriptedModel } from "quiver-agents";
import { createServer } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { chatClient, lastAssistant, textOf, VERSIONS } from "./chat-clients.js";
import { eventually, refundTool } from "./helpers.js";

describe.each(VERSIONS)("useChat (%s) with an agent as a tool", (version) => {
  for (const stored of [false, true])
    it(`shows the child's call before asking to approve it, then continues the parent${stored ? " (with a store: the child waits, the parent never goes on without it)" : ""}`, async () => {
      const ran: string[] = [];
      const clerk = new Agent({
        name: "clerk",
        model: new ScriptedModel([
          { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
          { text: "clerk refunded it" },
        ]),
        tools: [refundTool(ran)],
      });
      const boss = new Agent({
        name: "boss",
        model: new ScriptedModel([
          { toolCalls: [{ id: "p1", name: "clerk", args: { input: "refund A1" } }] },
          { text: "The clerk is done." },
        ]),
        tools: [clerk.asTool()],
      });
      const store = stored ? new SqliteStore({ path: ":memory:" }) : undefined;
      const server = createServer({ agent: boss, ...(store && { store }) });
      const chat = chatClient(version, server, { id: "chat-child", autoSend: "approvals" });
      await chat.sendMessage({ text: "please refund" });
      expect(chat.error).toBeUndefined();
      // The child's call shows inside the parent's call (its preliminary output), and the
      // approval is asked on the parent's call: the one the client knows.
      const asked = lastAssistant(chat).parts.find((p) => p.type === "tool-clerk")!;
      expect(asked.state).toBe("approval-requested");
      expect(asked.approval!.id).toMatch(/^run_.+\/c1$/);
      expect(asked.output).toMatchObject({
        agent: "clerk",
        calls: [{ name: "refund", input: { order: "A1" }, state: "awaiting approval" }],
      });
      expect(lastAssistant(chat).parts.some((p) => p.type === "tool-refund")).toBe(false);

      await chat.addToolApprovalResponse({ id: asked.approval!.id, approved: true });
      await eventually(() => chat.status === "ready" && textOf(lastAssistant(chat)) === "The clerk is done.");
      expect(chat.error).toBeUndefined();
      expect(ran).toEqual(["A1"]);
      const done = lastAssistant(chat).parts.find((p) => p.type === "tool-clerk")!;
      expect(done).toMatchObject({ state: "output-available", output: "clerk refunded it" });
      expect(done.preliminary).toBeFalsy();
      await store?.close();
    });
});
