import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonSchema, tool } from "quiver-agents";
import { createServer } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { askHuman, HumanChannel } from "quiver-agents/tools";
import { afterEach, describe, expect, it } from "vitest";
import { chatClient, lastAssistant, textOf, VERSIONS } from "./chat-clients.js";
import {
  addStepTool,
  agentWith,
  BASE,
  events,
  eventually,
  fallingBackAgent,
  post,
  readSse,
  refundTool,
  slowTool,
} from "./helpers.js";

const lookup = tool({
  name: "lookup",
  description: "Look up an order",
  parameters: jsonSchema<{ order: string }>({
    type: "object",
    properties: { order: { type: "string" } },
    required: ["order"],
  }),
  execute: async ({ order }) => `order ${order} shipped`,
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-server-"));
  dirs.push(dir);
  return new SqliteStore({ path: join(dir, "runs.db") });
}

describe.each(VERSIONS)("useChat (%s) against POST /api/chat", (version) => {
  it("streams text into one assistant message whose id is the run id", async () => {
    const server = createServer({ agent: agentWith([{ reasoning: "thinking", text: "hello there" }]) });
    const chat = chatClient(version, server, { id: "chat-text" });
    await chat.sendMessage({ text: "hi" });
    expect(chat.error).toBeUndefined();
    expect(chat.status).toBe("ready");
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const reply = lastAssistant(chat);
    expect(reply.id).toMatch(/^run_/);
    expect(textOf(reply)).toBe("hello there");
    expect(reply.parts.find((p) => p.type === "reasoning")?.text).toBe("thinking");
    expect(reply.metadata).toMatchObject({ quiver: { stopReason: "completed" } });
  });

  it("shows tool calls with their input and output, then the answer; the next message continues the chat", async () => {
    const agent = agentWith(
      [
        { toolCalls: [{ id: "c1", name: "lookup", args: { order: "A1" } }] },
        { text: "It shipped." },
        (req) => ({ text: `I remember ${req.messages.length} messages` }),
      ],
      [lookup],
    );
    const server = createServer({ agent });
    const chat = chatClient(version, server, { id: "chat-tools" });
    await chat.sendMessage({ text: "where is A1?" });
    expect(chat.error).toBeUndefined();
    const reply = lastAssistant(chat);
    const call = reply.parts.find((p) => p.type === "tool-lookup")!;
    expect(call).toMatchObject({ toolCallId: "c1", state: "output-available", input: { order: "A1" } });
    expect(call.output).toBe("order A1 shipped");
    expect(textOf(reply)).toBe("It shipped.");
    expect(reply.parts.filter((p) => p.type === "step-start")).toHaveLength(2);

    await chat.sendMessage({ text: "thanks" });
    // user, assistant(call), tool, assistant(text), user
    expect(textOf(lastAssistant(chat))).toBe("I remember 5 messages");
    expect(chat.messages).toHaveLength(4);
  });

  it("marks the text a fallback discarded with a data-quiver-fallback part after it, in the same step", async () => {
    const chat = chatClient(version, createServer({ agent: fallingBackAgent() }), {
      id: "chat-fallback",
    });
    await chat.sendMessage({ text: "where is my order?" });
    expect(chat.error).toBeUndefined();
    const parts = lastAssistant(chat).parts.filter((p) => p.type !== "step-start");
    expect(parts.map((p) => p.type)).toEqual(["text", "data-quiver-fallback", "text"]);
    expect(parts[1]).toMatchObject({ data: { from: "openai:gpt-a", to: "anthropic:claude-b", turn: 1 } });
    expect((parts[2] as { text: string }).text).toBe("Your order shipped.");
  });

  it("streams the run's shared state as one data-state part, replaced at each change, carried on by the stored chat", async () => {
    const agent = agentWith(
      [
        {
          toolCalls: [
            { id: "c1", name: "add_step", args: { step: "book" } },
            { id: "c2", name: "add_step", args: { step: "pack" } },
          ],
        },
        { text: "Planned." },
        { toolCalls: [{ id: "c3", name: "add_step", args: { step: "go" } }] },
        { text: "Planned more." },
      ],
      [addStepTool],
    );
    const server = createServer({ agent, store: sqlite() });
    const chat = chatClient(version, server, { id: "chat-state" });
    await chat.sendMessage({ text: "plan it" });
    expect(chat.error).toBeUndefined();
    const states = lastAssistant(chat).parts.filter((p) => p.type === "data-state");
    expect(states).toEqual([{ type: "data-state", id: "state", data: { steps: ["book", "pack"] } }]);
    await chat.sendMessage({ text: "and then?" });
    expect(
      lastAssistant(chat)
        .parts.filter((p) => p.type === "data-state")
        .map((p) => p.data),
    ).toEqual([{ steps: ["book", "pack", "go"] }]);
  });

  for (const stored of [false, true]) {
    it(`approval round trip${stored ? " with a store (the run parks)" : " in memory"}`, async () => {
      const ran: string[] = [];
      const agent = agentWith(
        [
          { text: "Let me refund.", toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
          { toolCalls: [{ id: "c2", name: "refund", args: { order: "B2" } }] },
          { text: "Refunded A1, not B2." },
        ],
        [refundTool(ran)],
      );
      const store = stored ? sqlite() : undefined;
      const server = createServer({ agent, ...(store && { store }) });
      const chat = chatClient(version, server, { id: `chat-approve-${stored}`, autoSend: "approvals" });
      await chat.sendMessage({ text: "refund both" });
      expect(chat.error).toBeUndefined();
      // The response ended at the approval request: the client can answer it.
      let reply = lastAssistant(chat);
      const runId = reply.id;
      let part = reply.parts.find((p) => p.type === "tool-refund")!;
      expect(part).toMatchObject({ state: "approval-requested", input: { order: "A1" } });
      expect(ran).toEqual([]);

      await chat.addToolApprovalResponse({ id: part.approval!.id, approved: true });
      await eventually(() => {
        const p = lastAssistant(chat).parts.filter((x) => x.type === "tool-refund");
        return chat.status === "ready" && p.length === 2 && p[1]!.state === "approval-requested";
      });
      expect(ran).toEqual(["A1"]);
      reply = lastAssistant(chat);
      expect(reply.id).toBe(runId);
      part = reply.parts.filter((p) => p.type === "tool-refund")[1]!;
      await chat.addToolApprovalResponse({ id: part.approval!.id, approved: false, reason: "not this one" });
      await eventually(() => chat.status === "ready" && textOf(lastAssistant(chat)).includes("Refunded A1"));
      expect(chat.error).toBeUndefined();
      reply = lastAssistant(chat);
      expect(reply.id).toBe(runId);
      expect(chat.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
      const parts = reply.parts.filter((p) => p.type === "tool-refund");
      expect(parts.map((p) => p.state)).toEqual(["output-available", "output-denied"]);
      expect(parts[0]!.output).toBe("refunded A1");
      expect(ran).toEqual(["A1"]);
      expect(textOf(reply)).toBe("Let me refund.Refunded A1, not B2.");
      await store?.close();
    });
  }

  it("resumes a chat's run from another client: replay, then live, no duplicated text", async () => {
    const slow = slowTool();
    const agent = agentWith(
      [
        { text: "Working on it.", toolCalls: [{ id: "s1", name: "slow", args: { step: "one" } }] },
        { text: "Done." },
      ],
      [slow.tool],
    );
    const server = createServer({ agent });
    const first = chatClient(version, server, { id: "chat-resume" });
    const sending = first.sendMessage({ text: "go" });
    await eventually(() =>
      first.messages.some(
        (m) => m.role === "assistant" && m.parts.some((p) => p.type === "tool-slow" && p.preliminary),
      ),
    );
    // The first tab goes away: the run goes on.
    await first.stop();
    await sending;

    const second = chatClient(version, server, { id: "chat-resume" });
    const resuming = second.resumeStream();
    await eventually(() => second.messages.some((m) => m.role === "assistant"));
    slow.release();
    await resuming;
    expect(second.error).toBeUndefined();
    const reply = lastAssistant(second);
    expect(reply.id).toBe(lastAssistant(first).id);
    expect(textOf(reply)).toBe("Working on it.Done.");
    expect(reply.parts.find((p) => p.type === "tool-slow")).toMatchObject({
      state: "output-available",
      output: "done one",
    });

    // Idle now: the stream endpoint says so with 204 and the client stays as it is.
    const third = chatClient(version, server, { id: "chat-resume" });
    await third.resumeStream();
    expect(third.messages).toEqual([]);
    expect(third.error).toBeUndefined();
  });

  it("stop() only detaches; cancelling the message's run stops it", async () => {
    const slow = slowTool();
    const server = createServer({
      agent: agentWith(
        [{ toolCalls: [{ id: "s1", name: "slow", args: { step: "one" } }] }, { text: "x" }],
        [slow.tool],
      ),
    });
    const chat = chatClient(version, server, { id: "chat-stop" });
    const sending = chat.sendMessage({ text: "go" });
    await eventually(() => chat.messages.some((m) => m.role === "assistant"));
    await chat.stop();
    await sending;
    const runId = lastAssistant(chat).id;
    const status = async () =>
      ((await (await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as { status: string })
        .status;
    expect(await status()).toBe("running");
    expect((await server.fetch(post(`/api/runs/${runId}/cancel`, {}))).status).toBe(202);
    await eventually(async () => (await status()) === "completed");
    const replay = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`));
    const end = events(await readSse(replay)).at(-1)!;
    expect(end.type === "run_completed" && end.stopReason).toBe("cancelled");
    slow.release();
  });

  it("answers ask_human with a client tool output", async () => {
    const channel = new HumanChannel();
    const agent = agentWith(
      [
        { toolCalls: [{ id: "q1", name: "ask_human", args: { question: "Which colour?" } }] },
        (req) => ({ text: `You chose ${String(req.messages.at(-1)?.content)}.` }),
      ],
      [askHuman(channel)],
    );
    const server = createServer({ agent, human: channel });
    const chat = chatClient(version, server, { id: "chat-ask", autoSend: "tool-calls" });
    await chat.sendMessage({ text: "paint it" });
    expect(chat.error).toBeUndefined();
    const part = lastAssistant(chat).parts.find((p) => p.type === "tool-ask_human")!;
    expect(part).toMatchObject({ state: "input-available", input: { question: "Which colour?" } });
    await chat.addToolOutput({ tool: "ask_human", toolCallId: part.toolCallId!, output: "blue" });
    await eventually(() => chat.status === "ready" && textOf(lastAssistant(chat)) !== "");
    expect(chat.error).toBeUndefined();
    expect(textOf(lastAssistant(chat))).toBe("You chose blue.");
    expect(chat.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
  });
});
