import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BaseEvent, EventType, HttpAgent, type Message } from "@ag-ui/client";
import { Agent, jsonSchema, type ModelRequest, ScriptedModel, tool } from "quiver-agents";
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { askHuman, HumanChannel } from "quiver-agents/tools";
import { afterEach, describe, expect, it } from "vitest";
import { addStepTool, agentWith, fallingBackAgent, refundTool, slowTool } from "./helpers.js";

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
const servings: Serving[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-ag-ui-"));
  dirs.push(dir);
  return new SqliteStore({ path: join(dir, "runs.db") });
}

async function start(options: ServerOptions): Promise<string> {
  const serving = await serve(createServer(options), { port: 0 });
  servings.push(serving);
  return `${serving.url}/api/ag-ui`;
}

/** An HttpAgent that records every event it receives. */
function client(url: string, threadId: string, headers: Record<string, string> = {}) {
  const agent = new HttpAgent({ url, threadId, headers });
  const seen: BaseEvent[] = [];
  agent.subscribe({ onEvent: ({ event }) => void seen.push(event) });
  return { agent, seen, types: () => seen.map((e) => e.type) };
}

function userMessage(id: string, content: string): Message {
  return { id, role: "user", content };
}

function lastToolText(req: ModelRequest): string {
  const message = req.messages.at(-1);
  return message?.role === "tool" && typeof message.content === "string" ? message.content : "(none)";
}

describe("AG-UI at POST /api/ag-ui, with @ag-ui/client's HttpAgent", () => {
  it("a body nested thousands of levels deep is a 400, not a 500 the operator is told of", async () => {
    const reported: unknown[] = [];
    const url = await start({ agent: agentWith([{ text: "hi" }]), onError: (error) => reported.push(error) });
    // Built as text: the test's own JSON.stringify would overflow on it too.
    const deep = `${'{"a":'.repeat(5_000)}{}${"}".repeat(5_000)}`;
    const input = {
      threadId: "t-deep",
      runId: "r-deep",
      state: "DEEP",
      messages: [{ id: "m1", role: "user", content: "hi" }],
      tools: [],
      context: [],
      forwardedProps: {},
    };
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(input).replace('"DEEP"', deep),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: "bad_request", message: /nested more than 256 levels/ },
    });
    expect(reported).toEqual([]);
  });

  it("streams text and reasoning as steps, text and reasoning messages", async () => {
    const url = await start({ agent: agentWith([{ reasoning: "thinking", text: "hello there" }]) });
    const { agent, seen, types } = client(url, "t-text");
    agent.addMessage(userMessage("u1", "hi"));
    const result = await agent.runAgent();
    expect(types()).toEqual([
      EventType.RUN_STARTED,
      EventType.STEP_STARTED,
      EventType.REASONING_START,
      EventType.REASONING_MESSAGE_START,
      EventType.REASONING_MESSAGE_CONTENT,
      EventType.REASONING_MESSAGE_END,
      EventType.REASONING_END,
      EventType.TEXT_MESSAGE_START,
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TEXT_MESSAGE_END,
      EventType.STEP_FINISHED,
      EventType.RUN_FINISHED,
    ]);
    expect(result.result).toBe("hello there");
    const reply = agent.messages.find((m) => m.role === "assistant");
    expect(reply?.content).toBe("hello there");
    const finished = seen.at(-1) as BaseEvent & { outcome?: unknown; runId?: string };
    expect(finished.outcome).toEqual({ type: "success" });
    expect(finished.runId).toBe((seen[0] as BaseEvent & { runId?: string }).runId);
  });

  it("names the messages a fallback discarded, so the client can drop them", async () => {
    const url = await start({ agent: fallingBackAgent() });
    const { agent, seen } = client(url, "t-fallback");
    agent.addMessage(userMessage("u1", "where is my order?"));
    await agent.runAgent();
    const custom = seen.find((e) => e.type === EventType.CUSTOM) as BaseEvent & {
      name: string;
      value: { from: string; to: string; discardedMessageIds: string[] };
    };
    expect(custom).toMatchObject({
      name: "quiver.model_fallback",
      value: { from: "openai:gpt-a", to: "anthropic:claude-b" },
    });
    const started = seen.filter((e) => e.type === EventType.TEXT_MESSAGE_START) as Array<
      BaseEvent & { messageId: string }
    >;
    expect(started).toHaveLength(2);
    expect(custom.value.discardedMessageIds).toEqual([started[0]!.messageId]);
    // The discarded message was closed before the event, and the answer is a message of its own.
    const kept = agent.messages.filter(
      (m) => m.role === "assistant" && !custom.value.discardedMessageIds.includes(m.id),
    );
    expect(kept.map((m) => m.content)).toEqual(["Your order shipped."]);
  });

  it("shows a server tool's call, arguments and result, then the answer; the next message continues the thread", async () => {
    const url = await start({
      agent: agentWith(
        [
          { toolCalls: [{ id: "c1", name: "lookup", args: { order: "A1" } }] },
          { text: "It shipped." },
          (req) => ({ text: `I remember ${req.messages.length} messages` }),
        ],
        [lookup],
      ),
    });
    const { agent, types } = client(url, "t-tool");
    agent.addMessage(userMessage("u1", "where is A1?"));
    await agent.runAgent();
    expect(types().filter((t) => t === EventType.STEP_STARTED)).toHaveLength(2);
    const call = agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
    expect(call?.role === "assistant" && call.toolCalls?.[0]).toMatchObject({
      id: "c1",
      function: { name: "lookup", arguments: JSON.stringify({ order: "A1" }) },
    });
    const result = agent.messages.find((m) => m.role === "tool");
    expect(result).toMatchObject({ toolCallId: "c1", content: "order A1 shipped" });
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "It shipped." });

    agent.addMessage(userMessage("u2", "thanks"));
    await agent.runAgent();
    // user, assistant(call), tool, assistant(text), user
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "I remember 5 messages" });
  });

  for (const stored of [false, true]) {
    it(`runs a tool the client declares: the call ends the request, the next one brings its result${stored ? " (stored: the run parks)" : ""}`, async () => {
      const url = await start({
        agent: agentWith([
          { text: "Let me ask.", toolCalls: [{ id: "c1", name: "pick_color", args: { hint: "warm" } }] },
          (req) => ({ text: `You picked ${lastToolText(req)}.` }),
        ]),
        ...(stored && { store: sqlite() }),
      });
      const tools = [
        {
          name: "pick_color",
          description: "Ask the user to pick a color",
          parameters: { type: "object", properties: { hint: { type: "string" } } },
        },
      ];
      const { agent, seen } = client(url, `t-client-${stored}`);
      let pending: string[] = [];
      agent.addMessage(userMessage("u1", "paint it"));
      await agent.runAgent(
        { tools },
        {
          onRunFinishedEvent: (params) => {
            if (params.outcome === "success") pending = params.pendingToolCallIds;
          },
        },
      );
      expect(pending).toEqual(["c1"]);
      expect(seen.some((e) => e.type === EventType.TOOL_CALL_RESULT)).toBe(false);
      const asked = agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
      expect(asked).toMatchObject({ content: "Let me ask.", toolCalls: [{ id: "c1" }] });

      agent.addMessage({ id: "r1", role: "tool", toolCallId: "c1", content: "teal" });
      await agent.runAgent({ tools });
      expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "You picked teal." });
      // The client's own result is not sent back to it.
      expect(agent.messages.filter((m) => m.role === "tool")).toHaveLength(1);
    });
  }

  it("a parked client-tool call survives a restart: another server on the same store takes the result", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-ag-ui-"));
    dirs.push(dir);
    const path = join(dir, "runs.db");
    // Each server's model starts from its first turn: the turn answers from what the request holds.
    const turn = (req: ModelRequest) =>
      req.messages.at(-1)?.role === "tool"
        ? { text: `You picked ${lastToolText(req)}.` }
        : { toolCalls: [{ id: "c1", name: "pick_color", args: {} }] };
    const turns = () => agentWith([turn, turn]);
    const tools = [{ name: "pick_color", description: "Ask the user to pick a color" }];
    const first = new SqliteStore({ path });
    const serving = await serve(createServer({ agent: turns(), store: first }), { port: 0 });
    const { agent: ui } = client(`${serving.url}/api/ag-ui`, "t-restart");
    ui.addMessage(userMessage("u1", "paint it"));
    await ui.runAgent({ tools });
    await serving.close();
    await first.close();

    ui.url = await start({ agent: turns(), store: new SqliteStore({ path }) });
    ui.addMessage({ id: "r1", role: "tool", toolCallId: "c1", content: "ochre" });
    await ui.runAgent({ tools });
    expect(ui.messages.at(-1)).toMatchObject({ role: "assistant", content: "You picked ochre." });
  });

  it("a client tool's call waits for the client even when the agent's approval handler allows everything", async () => {
    const agent = new Agent({
      name: "eager",
      model: new ScriptedModel([
        { toolCalls: [{ id: "c1", name: "confirm", args: {} }] },
        (req) => ({ text: `Client said ${lastToolText(req)}.` }),
      ]),
      approvalHandler: () => true,
    });
    const url = await start({ agent });
    const tools = [{ name: "confirm", description: "Ask the user to confirm" }];
    const { agent: ui } = client(url, "t-client-eager");
    ui.addMessage(userMessage("u1", "go"));
    await ui.runAgent({ tools });
    expect(ui.messages.some((m) => m.role === "tool")).toBe(false);
    ui.addMessage({ id: "r1", role: "tool", toolCallId: "c1", content: "confirmed" });
    await ui.runAgent({ tools });
    expect(ui.messages.at(-1)).toMatchObject({ role: "assistant", content: "Client said confirmed." });
  });

  for (const stored of [false, true]) {
    it(`an approval ends the request with an interrupt; resume answers it${stored ? " (stored: the run parks)" : ""}`, async () => {
      const ran: string[] = [];
      const url = await start({
        agent: agentWith(
          [
            { text: "Let me refund.", toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
            (req) => ({ text: `Done: ${lastToolText(req)}` }),
          ],
          [refundTool(ran)],
        ),
        ...(stored && { store: sqlite() }),
      });
      const { agent } = client(url, `t-approve-${stored}`);
      agent.addMessage(userMessage("u1", "refund A1"));
      await agent.runAgent();
      expect(ran).toEqual([]);
      expect(agent.pendingInterrupts).toMatchObject([
        {
          id: "c1",
          reason: "tool_approval",
          toolCallId: "c1",
          metadata: { name: "refund", args: { order: "A1" } },
        },
      ]);

      await agent.runAgent({
        resume: [{ interruptId: "c1", status: "resolved", payload: { approved: true } }],
      });
      expect(ran).toEqual(["A1"]);
      expect(agent.pendingInterrupts).toEqual([]);
      expect(agent.messages.find((m) => m.role === "tool")).toMatchObject({ content: "refunded A1" });
      expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done: refunded A1" });
    });
  }

  it("a denial in resume reaches the model, and the tool never runs (nor a client tool of its name)", async () => {
    const ran: string[] = [];
    const url = await start({
      agent: agentWith(
        [
          { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
          (req) => ({ text: `Not done: ${lastToolText(req)}` }),
        ],
        [refundTool(ran)],
      ),
    });
    const { agent } = client(url, "t-deny");
    agent.addMessage(userMessage("u1", "refund A1"));
    // A client tool of the same name does not replace the agent's: its call is still an approval.
    const tools = [{ name: "refund", description: "The page's own refund" }];
    await agent.runAgent({ tools });
    expect(agent.pendingInterrupts).toMatchObject([{ id: "c1", reason: "tool_approval" }]);
    await agent.runAgent({
      tools,
      resume: [{ interruptId: "c1", status: "resolved", payload: { approved: false, reason: "too late" } }],
    });
    expect(ran).toEqual([]);
    expect(String(agent.messages.at(-1)?.content)).toContain("too late");
  });

  it("ask_human ends the request with an interrupt whose answer the next request carries", async () => {
    const channel = new HumanChannel();
    const url = await start({
      agent: agentWith(
        [
          {
            toolCalls: [
              {
                id: "q1",
                name: "ask_human",
                args: { question: "Which colour?", options: [{ label: "red" }, { label: "blue" }] },
              },
            ],
          },
          (req) => ({ text: `You chose ${lastToolText(req)}.` }),
        ],
        [askHuman(channel)],
      ),
      human: channel,
    });
    const { agent } = client(url, "t-ask");
    agent.addMessage(userMessage("u1", "paint it"));
    await agent.runAgent();
    expect(agent.pendingInterrupts).toMatchObject([
      {
        id: "q1",
        reason: "input_required",
        message: "Which colour?",
        responseSchema: { type: "string", examples: ["red", "blue"] },
        metadata: { options: [{ label: "red" }, { label: "blue" }], multiSelect: false },
      },
    ]);
    await agent.runAgent({ resume: [{ interruptId: "q1", status: "resolved", payload: "blue" }] });
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "You chose blue." });
  });

  it("reconnecting to a thread mid-run sends a messages snapshot, then the run from its start", async () => {
    const slow = slowTool();
    const url = await start({
      agent: agentWith(
        [
          { text: "Working.", toolCalls: [{ id: "c1", name: "slow", args: { step: "one" } }] },
          { text: "All done." },
        ],
        [slow.tool],
      ),
    });
    const first = client(url, "t-reconnect");
    first.agent.addMessage(userMessage("u1", "go"));
    const running = first.agent.runAgent();
    await eventuallyTrue(() => first.seen.some((e) => e.type === EventType.TOOL_CALL_END));
    first.agent.abortRun();
    await running.catch(() => {});

    // A reload: a fresh client on the same thread, with nothing to send.
    const again = client(url, "t-reconnect");
    const resumed = again.agent.runAgent();
    await eventuallyTrue(() => again.seen.some((e) => e.type === EventType.TOOL_CALL_END));
    slow.release();
    await resumed;
    expect(again.types().slice(0, 2)).toEqual([EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT]);
    expect(again.agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(again.agent.messages[0]).toMatchObject({ content: "go" });
    expect(again.agent.messages.at(-1)).toMatchObject({ content: "All done." });

    // Once it is over, a reconnect is the thread as a snapshot.
    const later = client(url, "t-reconnect");
    await later.agent.runAgent();
    expect(later.types()).toEqual([
      EventType.RUN_STARTED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.RUN_FINISHED,
    ]);
    expect(later.agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("the same user message sent again is a reconnect, not a second run", async () => {
    const url = await start({ agent: agentWith([{ text: "first answer" }, { text: "second run" }]) });
    const post = async () => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({
          threadId: "t-retry",
          runId: crypto.randomUUID(),
          messages: [userMessage("u1", "hi")],
        }),
      });
      return (await response.text())
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)) as { type: string; delta?: string; messages?: Message[] });
    };
    const first = await post();
    expect(first.find((e) => e.type === EventType.TEXT_MESSAGE_CONTENT)?.delta).toBe("first answer");
    const again = await post();
    expect(again.map((e) => e.type)).toEqual([
      EventType.RUN_STARTED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.RUN_FINISHED,
    ]);
    expect(again[1]!.messages!.map((m) => m.content)).toEqual(["hi", "first answer"]);
  });

  it("a thread is its user's: another user's thread id is a 404, and a bad body a 400", async () => {
    const url = await start({
      agent: agentWith([{ text: "for alice" }, { text: "again" }]),
      auth: (req) => req.headers.get("authorization")?.replace(/^Bearer /, "") ?? null,
    });
    const alice = client(url, "t-owned", { authorization: "Bearer alice" });
    alice.agent.addMessage(userMessage("u1", "hi"));
    await alice.agent.runAgent();
    expect(alice.agent.messages.at(-1)).toMatchObject({ content: "for alice" });

    const body = (headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
        body: JSON.stringify({
          threadId: "t-owned",
          runId: "r-bob",
          messages: [userMessage("u9", "what did alice say?")],
          tools: [],
          context: [],
          ...extra,
        }),
      });
    const bob = await body({ authorization: "Bearer bob" });
    expect(bob.status).toBe(404);
    expect(await bob.json()).toMatchObject({ error: { code: "not_found" } });
    const nobody = await body({});
    expect(nobody.status).toBe(401);
    const bad = await body({ authorization: "Bearer alice" }, { messages: [{ role: "user" }] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain("RunAgentInput");
    // A page elsewhere cannot make a browser post here with the user's credentials.
    const foreign = await body({ authorization: "Bearer alice", origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
  });
  it("shares state: the client's state reaches the tools, each change comes back as STATE_SNAPSHOT, and a reconnect gets it", async () => {
    const url = await start({
      agent: agentWith(
        [
          { toolCalls: [{ id: "c1", name: "add_step", args: { step: "book flights" } }] },
          { text: "Added." },
          { toolCalls: [{ id: "c2", name: "add_step", args: { step: "pack" } }] },
          { text: "Added again." },
        ],
        [addStepTool],
      ),
      store: sqlite(),
    });
    const { agent, seen } = client(url, "t-state");
    agent.setState({ steps: ["pick dates"] });
    agent.addMessage(userMessage("u1", "add flights"));
    await agent.runAgent();
    const snapshots = seen.filter((e) => e.type === EventType.STATE_SNAPSHOT);
    expect(snapshots.map((e) => (e as BaseEvent & { snapshot: unknown }).snapshot)).toEqual([
      { steps: ["pick dates"] },
      { steps: ["pick dates", "book flights"] },
    ]);
    expect(agent.state).toEqual({ steps: ["pick dates", "book flights"] });
    expect(agent.messages.find((m) => m.role === "tool")).toMatchObject({ content: "plan has 2 steps" });

    // The next message carries the client's state (as it applied the snapshot) on.
    agent.addMessage(userMessage("u2", "and packing"));
    await agent.runAgent();
    expect(agent.state).toEqual({ steps: ["pick dates", "book flights", "pack"] });

    // A fresh client on the thread (a reload) gets the state back with the messages.
    const later = client(url, "t-state");
    await later.agent.runAgent();
    expect(later.types()).toEqual([
      EventType.RUN_STARTED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.STATE_SNAPSHOT,
      EventType.RUN_FINISHED,
    ]);
    expect(later.agent.state).toEqual({ steps: ["pick dates", "book flights", "pack"] });
  });
});

/** AG-UI's protobuf encoding: an HttpAgent that asks for it, and what each response was sent as. */
class ProtoAgent extends HttpAgent {
  protected override requestInit(input: Parameters<HttpAgent["requestInit"]>[0]): RequestInit {
    const init = super.requestInit(input);
    return {
      ...init,
      headers: { ...(init.headers as Record<string, string>), Accept: "application/vnd.ag-ui.event+proto" },
    };
  }
}

function recordingFetch(types: string[]) {
  return async (url: string, init: RequestInit) => {
    const response = await fetch(url, init);
    types.push(response.headers.get("content-type") ?? "");
    return response;
  };
}

describe("AG-UI over protobuf (Accept: application/vnd.ag-ui.event+proto)", () => {
  /** The same thread, played against a fresh server by the given client: what the client ends up with. */
  async function play(kind: "sse" | "proto") {
    const channel = new HumanChannel();
    const url = await start({
      agent: agentWith(
        [
          {
            reasoning: "planning",
            toolCalls: [{ id: "c1", name: "add_step", args: { step: "book flights" } }],
          },
          {
            text: "Added. One question:",
            toolCalls: [
              {
                id: "q1",
                name: "ask_human",
                args: { question: "Which seat?", options: [{ label: "aisle" }, { label: "window" }] },
              },
            ],
          },
          (req) => ({ text: `Booked: ${lastToolText(req)}.` }),
        ],
        [addStepTool, askHuman(channel)],
      ),
      human: channel,
    });
    const contentTypes: string[] = [];
    const options = { url, threadId: `t-${kind}`, fetch: recordingFetch(contentTypes) };
    const agent = kind === "proto" ? new ProtoAgent(options) : new HttpAgent(options);
    const seen: BaseEvent[] = [];
    agent.subscribe({ onEvent: ({ event }) => void seen.push(event) });
    agent.setState({ steps: ["pick dates"] });
    agent.addMessage(userMessage("u1", "plan my trip"));
    await agent.runAgent();
    const interrupts = agent.pendingInterrupts.map(({ id, message, responseSchema }) => ({
      id,
      message,
      responseSchema,
    }));
    await agent.runAgent({ resume: [{ interruptId: "q1", status: "resolved", payload: "aisle" }] });
    // A reload: a fresh client of the same kind gets the thread back.
    const later = kind === "proto" ? new ProtoAgent({ ...options }) : new HttpAgent({ ...options });
    await later.runAgent();
    const shape = (messages: Message[]) =>
      messages.map((m) => ({
        role: m.role,
        content: "content" in m ? m.content : undefined,
        calls:
          m.role === "assistant"
            ? m.toolCalls?.map((c) => [c.id, c.function.name, c.function.arguments])
            : undefined,
      }));
    return {
      contentTypes,
      types: seen.map((e) => e.type),
      interrupts,
      messages: shape(agent.messages),
      state: agent.state,
      reloaded: { messages: shape(later.messages), state: later.state },
    };
  }

  it("gives a client that asks for protobuf the same run, interrupt, state and reload as SSE gives another", async () => {
    const sse = await play("sse");
    const proto = await play("proto");
    expect(sse.contentTypes.every((t) => t.startsWith("text/event-stream"))).toBe(true);
    expect(proto.contentTypes).toEqual(Array(3).fill("application/vnd.ag-ui.event+proto"));
    expect(proto.types).toEqual(sse.types);
    expect(proto.types).toContain(EventType.STATE_SNAPSHOT);
    expect(proto.interrupts).toEqual(sse.interrupts);
    expect(proto.interrupts).toMatchObject([{ id: "q1", message: "Which seat?" }]);
    expect(proto.messages).toEqual(sse.messages);
    expect(proto.messages.at(-1)).toMatchObject({ role: "assistant", content: "Booked: aisle." });
    expect(proto.state).toEqual({ steps: ["pick dates", "book flights"] });
    expect(proto.reloaded).toEqual(sse.reloaded);
  });

  it("answers SSE to wildcards and to clients that rank SSE higher", async () => {
    const url = await start({ agent: agentWith([{ text: "hi" }, { text: "hi" }, { text: "hi" }]) });
    const body = (threadId: string) =>
      JSON.stringify({
        threadId,
        runId: "r1",
        messages: [{ id: "u1", role: "user", content: "hello" }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      });
    const typeFor = async (threadId: string, accept: string) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept },
        body: body(threadId),
      });
      await response.arrayBuffer();
      return response.headers.get("content-type");
    };
    expect(await typeFor("w1", "*/*")).toMatch(/^text\/event-stream/);
    expect(await typeFor("w2", "text/event-stream, application/vnd.ag-ui.event+proto;q=0.5")).toMatch(
      /^text\/event-stream/,
    );
    expect(await typeFor("w3", "application/vnd.ag-ui.event+proto, text/event-stream;q=0.9")).toBe(
      "application/vnd.ag-ui.event+proto",
    );
  });
});

async function eventuallyTrue(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}
