import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Message, Role, type Task, TaskState } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Agent, jsonSchema, type ModelRequest, ScriptedModel, tool } from "quiver-agents";
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { MemoryStore, SqliteStore } from "quiver-agents/store";
import { askHuman, HumanChannel } from "quiver-agents/tools";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, refundTool, slowTool } from "./helpers.js";

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
  const dir = mkdtempSync(join(tmpdir(), "quiver-a2a-"));
  dirs.push(dir);
  return new SqliteStore({ path: join(dir, "runs.db") });
}

async function start(options: Omit<ServerOptions, "a2a">): Promise<string> {
  const serving = await serve(createServer({ ...options, a2a: true }), { port: 0 });
  servings.push(serving);
  return serving.url;
}

/** The SDK's own client, sending `Authorization: Bearer <token>` when given one. */
function a2aClient(baseUrl: string, token?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(baseUrl);
}

let counter = 0;

/** A 0.3 `message/send` of a user message with these parts, as raw JSON-RPC. */
function sendParts(url: string, parts: unknown[]): Promise<Response> {
  return fetch(`${url}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: { kind: "message", messageId: `m${++counter}`, role: "user", parts } },
    }),
  });
}
function userText(text: string, task?: { taskId: string; contextId: string }): Message {
  return {
    messageId: `m${++counter}`,
    contextId: task?.contextId ?? "",
    taskId: task?.taskId ?? "",
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function send(message: Message, returnImmediately = false) {
  return {
    tenant: "",
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

function asTask(result: unknown): Task {
  expect(result).toHaveProperty("status");
  return result as Task;
}

function textOf(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .join("|");
}

function statusText(task: Task): string {
  const part = task.status?.message?.parts[0];
  return part?.content?.$case === "text" ? part.content.value : "";
}

function lastToolText(req: ModelRequest): string {
  const message = req.messages.at(-1);
  return message?.role === "tool" && typeof message.content === "string" ? message.content : "(none)";
}

describe("A2A with createServer({ a2a: true }), with @a2a-js/sdk's client", () => {
  it("serves an agent card: name, skills from the tools, streaming, and bearer auth when auth is a token", async () => {
    const url = await start({ agent: agentWith([{ text: "hi" }], [lookup], "orders"), auth: "s3cret" });
    const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card).toMatchObject({
      name: "orders",
      capabilities: { streaming: true },
      skills: [{ id: "lookup", name: "lookup", description: "Look up an order" }],
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } } },
      securityRequirements: [{ schemes: { bearer: {} } }],
    });
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${url}/a2a`, protocolBinding: "JSONRPC" });

    const client = await a2aClient(url, "s3cret");
    expect((await client.getAgentCard()).name).toBe("orders");
    const refused = await fetch(`${url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
    });
    expect(refused.status).toBe(401);
    const foreign = await fetch(`${url}/a2a`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer s3cret",
        origin: "https://evil.example",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
    });
    expect(foreign.status).toBe(403);
  });

  it("message/send: a task whose id is the run's, completed, with the answer as an artifact", async () => {
    const url = await start({
      agent: agentWith(
        [{ toolCalls: [{ id: "c1", name: "lookup", args: { order: "A1" } }] }, { text: "It shipped." }],
        [lookup],
      ),
    });
    const client = await a2aClient(url);
    const task = asTask(await client.sendMessage(send(userText("where is A1?"))));
    expect(task.id).toMatch(/^run_/);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe("It shipped.");
    expect(task.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
    // The same run through the native API.
    const native = (await (await fetch(`${url}/api/runs/${task.id}`)).json()) as { status: string };
    expect(native.status).toBe("completed");
    expect((await client.getTask({ tenant: "", id: task.id })).status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
  });

  it("message/stream: the task, its text as artifact updates, then the final status", async () => {
    const url = await start({ agent: agentWith([{ text: "hello there" }]) });
    const client = await a2aClient(url);
    const seen: string[] = [];
    let text = "";
    let final: TaskState | undefined;
    for await (const event of client.sendMessageStream(send(userText("hi")))) {
      const payload = event.payload;
      if (!payload) continue;
      seen.push(payload.$case);
      if (payload.$case === "artifactUpdate")
        for (const part of payload.value.artifact?.parts ?? [])
          if (part.content?.$case === "text") text += part.content.value;
      if (payload.$case === "statusUpdate") final = payload.value.status?.state;
    }
    expect(seen[0]).toBe("task");
    expect(seen).toContain("artifactUpdate");
    expect(seen.at(-1)).toBe("statusUpdate");
    expect(text).toBe("hello there");
    expect(final).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  for (const stored of [false, true]) {
    it(`input-required while an approval waits; the next message answers it${stored ? " (stored: the run parks)" : ""}`, async () => {
      const ran: string[] = [];
      const url = await start({
        agent: agentWith(
          [
            { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
            (req) => ({ text: `Done: ${lastToolText(req)}` }),
          ],
          [refundTool(ran)],
        ),
        ...(stored && { store: sqlite() }),
      });
      const client = await a2aClient(url);
      const waiting = asTask(await client.sendMessage(send(userText("refund A1"))));
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      expect(statusText(waiting)).toContain('Approve refund {"order":"A1"}');
      expect(ran).toEqual([]);

      const done = asTask(
        await client.sendMessage(send(userText("yes", { taskId: waiting.id, contextId: waiting.contextId }))),
      );
      expect(done.id).toBe(waiting.id);
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(ran).toEqual(["A1"]);
      expect(textOf(done)).toBe("Done: refunded A1");
    });
  }

  it("message/stream ends at input-required, and a streamed answer continues the same task to its end", async () => {
    const ran: string[] = [];
    const url = await start({
      agent: agentWith(
        [
          { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
          (req) => ({ text: `Done: ${lastToolText(req)}` }),
        ],
        [refundTool(ran)],
      ),
    });
    const client = await a2aClient(url);
    const states = async (message: Message) => {
      const seen: Array<{ state: TaskState | undefined; taskId: string; contextId: string }> = [];
      for await (const event of client.sendMessageStream(send(message))) {
        const p = event.payload;
        if (p?.$case === "task")
          seen.push({ state: p.value.status?.state, taskId: p.value.id, contextId: p.value.contextId });
        if (p?.$case === "statusUpdate")
          seen.push({ state: p.value.status?.state, taskId: p.value.taskId, contextId: p.value.contextId });
      }
      return seen;
    };
    const first = await states(userText("refund A1"));
    expect(first.map((s) => s.state)).toEqual([
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_INPUT_REQUIRED,
    ]);
    const { taskId, contextId } = first[0]!;
    const second = await states(userText("yes", { taskId, contextId }));
    expect(second.map((s) => s.state)).toEqual([
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    expect(second.every((s) => s.taskId === taskId)).toBe(true);
    expect(ran).toEqual(["A1"]);
  });

  it("any reply but yes denies, and the agent hears it; an ask_human question is answered by the next message", async () => {
    const ran: string[] = [];
    const channel = new HumanChannel();
    const url = await start({
      agent: agentWith(
        [
          { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
          { toolCalls: [{ id: "q1", name: "ask_human", args: { question: "Which order then?" } }] },
          (req) => ({ text: `Noted: ${lastToolText(req)}` }),
        ],
        [refundTool(ran), askHuman(channel)],
      ),
      human: channel,
    });
    const client = await a2aClient(url);
    const first = asTask(await client.sendMessage(send(userText("refund A1"))));
    const ids = { taskId: first.id, contextId: first.contextId };
    const asked = asTask(await client.sendMessage(send(userText("no, not that one", ids))));
    expect(ran).toEqual([]);
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(asked)).toBe("Which order then?");
    const done = asTask(await client.sendMessage(send(userText("B2", ids))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(done)).toBe("Noted: B2");
  });

  it("tasks/cancel stops a working task", async () => {
    const slow = slowTool();
    const url = await start({
      agent: agentWith(
        [{ toolCalls: [{ id: "c1", name: "slow", args: { step: "one" } }] }, { text: "never" }],
        [slow.tool],
      ),
    });
    const client = await a2aClient(url);
    const working = asTask(await client.sendMessage(send(userText("go"), true)));
    expect(working.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const cancelled = await client.cancelTask({ tenant: "", id: working.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    slow.release();
    await expect(client.cancelTask({ tenant: "", id: working.id, metadata: undefined })).rejects.toThrow();
  });

  it("a second user's task is not found: get, cancel and messages to it", async () => {
    const url = await start({
      agent: agentWith(
        [{ toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }],
        [refundTool([])],
      ),
      auth: (req) => req.headers.get("authorization")?.replace(/^Bearer /, "") ?? null,
    });
    const alice = await a2aClient(url, "alice");
    const bob = await a2aClient(url, "bob");
    const task = asTask(await alice.sendMessage(send(userText("refund A1"))));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await expect(bob.getTask({ tenant: "", id: task.id })).rejects.toThrow(/no task/);
    await expect(bob.cancelTask({ tenant: "", id: task.id, metadata: undefined })).rejects.toThrow(/no task/);
    await expect(
      bob.sendMessage(send(userText("yes", { taskId: task.id, contextId: task.contextId }))),
    ).rejects.toThrow(/no task/);
    await expect(
      bob.sendMessage(send(userText("hi", { taskId: "", contextId: task.contextId }))),
    ).rejects.toThrow(/no context/);
    expect((await alice.getTask({ tenant: "", id: task.id })).status?.state).toBe(
      TaskState.TASK_STATE_INPUT_REQUIRED,
    );
  });

  it("a store failure is answered -32603 with a request id, never the error's text, and reported to onError", async () => {
    const secret = "connect ECONNREFUSED postgres://quiver:hunter2@10.0.0.5:5432/prod";
    const working = new MemoryStore();
    const broken = new Proxy(working, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        if (["getRun", "read", "listRuns", "acquireLease", "append"].includes(String(key)))
          return () => Promise.reject(new Error(secret));
        return value.bind(target);
      },
    });
    const reported: Array<{ error: unknown; requestId: string }> = [];
    const url = await start({
      agent: agentWith([{ text: "never" }]),
      store: broken,
      onError: (error, { requestId }) => reported.push({ error, requestId }),
    });
    const rpc = async (method: string, params: unknown) => {
      const response = await fetch(`${url}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
      });
      return response.text();
    };
    const message = { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "hi" }] };
    const answers = [
      await rpc("tasks/get", { id: "run_somebody_elses" }),
      await rpc("message/send", { message }),
      await rpc("message/stream", { message: { ...message, messageId: "m2" } }),
    ];
    for (const text of answers) {
      expect(text).not.toContain("hunter2");
      expect(text).toContain("-32603");
      expect(text).toMatch(/the server failed to answer this request \(request req_[\w-]+\)/);
    }
    expect(reported.length).toBeGreaterThanOrEqual(answers.length);
    for (const { error, requestId } of reported) {
      expect(String(error)).toContain("hunter2");
      expect(answers.some((text) => text.includes(requestId))).toBe(true);
    }
  });

  it("speaks A2A 0.3 JSON-RPC too (message/send, tasks/get) for clients that send no A2A-Version", async () => {
    const url = await start({ agent: agentWith([{ text: "hello from 0.3" }]) });
    const rpc = async (method: string, params: unknown) =>
      (await (
        await fetch(`${url}/a2a`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
        })
      ).json()) as { result?: any; error?: any };
    const sent = await rpc("message/send", {
      message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "hi" }] },
    });
    expect(sent.error).toBeUndefined();
    expect(sent.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    const got = await rpc("tasks/get", { id: sent.result.id });
    expect(got.result).toMatchObject({ id: sent.result.id, status: { state: "completed" } });
    const missing = await rpc("tasks/get", { id: "run_nope" });
    expect(missing.error).toMatchObject({ code: -32001 });
  });

  it("a message's files reach the model as image and document parts (1.0 raw bytes and url, 0.3 file parts); one over the limit is invalid params naming it", async () => {
    const model = new ScriptedModel([{ text: "A chart and a report." }, { text: "A logo." }]);
    const url = await start({
      agent: new Agent({ name: "reader", model }),
      runOptions: () => ({ maxAttachmentBytes: 4_000 }),
    });
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");
    const client = await a2aClient(url);
    const message = userText("What is in these?");
    message.parts.push(
      { content: { $case: "raw", value: png }, metadata: undefined, filename: "chart.png", mediaType: "" },
      {
        content: { $case: "url", value: "https://example.com/report.pdf" },
        metadata: undefined,
        filename: "report.pdf",
        mediaType: "application/pdf",
      },
    );
    const task = asTask(await client.sendMessage(send(message)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(model.requests[0]?.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in these?" },
        { type: "image", data: png.toString("base64"), mimeType: "image/png" },
        {
          type: "file",
          url: "https://example.com/report.pdf",
          mimeType: "application/pdf",
          filename: "report.pdf",
        },
      ],
    });
    const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as {
      defaultInputModes: string[];
    };
    expect(card.defaultInputModes).toEqual(["text/plain", "image/*", "application/pdf"]);

    const rpc = async (parts: unknown[]) =>
      (await (await sendParts(url, parts)).json()) as {
        result?: any;
        error?: { code: number; message: string };
      };
    const old = await rpc([
      { kind: "file", file: { bytes: png.toString("base64"), mimeType: "image/png", name: "logo.png" } },
    ]);
    expect(old.error).toBeUndefined();
    expect(old.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    expect(model.requests[1]?.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "image", data: png.toString("base64"), mimeType: "image/png" }],
    });

    const big = await rpc([
      { kind: "text", text: "and this" },
      {
        kind: "file",
        file: { bytes: Buffer.alloc(5_000).toString("base64"), mimeType: "image/png", name: "big.png" },
      },
    ]);
    expect(big.error?.code).toBe(-32602);
    expect(big.error?.message).toMatch(/big\.png|over maxAttachmentBytes/);
    const bad = await rpc([
      { kind: "file", file: { uri: "ftp://example.com/x.pdf", mimeType: "application/pdf" } },
    ]);
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toMatch(/message part 0/);
    expect(model.requests).toHaveLength(2);
  });

  it("a message may carry a file of several MB, as the other endpoints' messages may", async () => {
    const model = new ScriptedModel([{ text: "A big picture." }]);
    const url = await start({ agent: new Agent({ name: "reader", model }) });
    const photo = Buffer.alloc(1_500_000, 7).toString("base64");
    const response = await sendParts(url, [
      { kind: "file", file: { bytes: photo, mimeType: "image/png", name: "photo.png" } },
    ]);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result?: { status: { state: string } } };
    expect(body.result?.status.state).toBe("completed");
    expect(model.requests[0]?.messages.at(-1)?.content).toEqual([
      { type: "image", data: photo, mimeType: "image/png" },
    ]);
  });

  for (const stored of [false, true]) {
    it(`ListTasks: the caller's tasks newest first, by context and state, paged, with artifacts only when asked${stored ? " (stored)" : ""}`, async () => {
      const url = await start({
        agent: agentWith(
          [
            { text: "one" },
            { text: "two" },
            { toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
            { text: "bob's" },
          ],
          [refundTool([])],
        ),
        auth: (req) => req.headers.get("authorization")?.replace(/^Bearer /, "") ?? null,
        ...(stored && { store: sqlite() }),
      });
      const alice = await a2aClient(url, "alice");
      const bob = await a2aClient(url, "bob");
      const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
      const first = asTask(await alice.sendMessage(send(userText("first"))));
      await pause();
      const context = { taskId: "", contextId: first.contextId };
      const second = asTask(await alice.sendMessage(send(userText("second", context))));
      await pause();
      const third = asTask(await alice.sendMessage(send(userText("refund A1"))));
      expect(third.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      await pause();
      const bobs = asTask(await bob.sendMessage(send(userText("mine"))));

      const list = (client: Client, params: Partial<Parameters<Client["listTasks"]>[0]> = {}) =>
        client.listTasks({
          tenant: "",
          contextId: "",
          status: TaskState.TASK_STATE_UNSPECIFIED,
          pageToken: "",
          statusTimestampAfter: undefined,
          ...params,
        });
      const all = await list(alice);
      expect(all.tasks.map((t) => t.id)).toEqual([third.id, second.id, first.id]);
      expect(all.totalSize).toBe(3);
      expect(all.nextPageToken).toBe("");
      expect(all.tasks.every((t) => t.artifacts.length === 0)).toBe(true);
      expect(all.tasks[2]?.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

      const inContext = await list(alice, { contextId: first.contextId });
      expect(inContext.tasks.map((t) => t.id)).toEqual([second.id, first.id]);
      const waiting = await list(alice, { status: TaskState.TASK_STATE_INPUT_REQUIRED });
      expect(waiting.tasks.map((t) => t.id)).toEqual([third.id]);
      expect(waiting.totalSize).toBe(1);

      const page1 = await list(alice, { pageSize: 2, includeArtifacts: true, historyLength: 1 });
      expect(page1.tasks.map((t) => t.id)).toEqual([third.id, second.id]);
      expect(page1.tasks[1]?.artifacts.flatMap((a) => a.parts).map((p) => p.content)).toEqual([
        { $case: "text", value: "two" },
      ]);
      expect(page1.tasks[1]?.history).toHaveLength(1);
      expect(page1.nextPageToken).not.toBe("");
      const page2 = await list(alice, { pageSize: 2, pageToken: page1.nextPageToken });
      expect(page2.tasks.map((t) => t.id)).toEqual([first.id]);
      expect(page2.nextPageToken).toBe("");

      // Another user's tasks and contexts are not listed.
      expect((await list(bob)).tasks.map((t) => t.id)).toEqual([bobs.id]);
      expect((await list(bob, { contextId: first.contextId })).tasks).toEqual([]);
      await expect(list(alice, { pageSize: 101 })).rejects.toThrow(/pageSize/);
      await expect(list(alice, { pageToken: "abc" })).rejects.toThrow(/pageToken/);
      await expect(list(alice, { statusTimestampAfter: "yesterday" })).rejects.toThrow(
        /statusTimestampAfter/,
      );
      const later = await list(alice, { statusTimestampAfter: new Date(Date.now() + 60_000).toISOString() });
      expect(later.tasks).toEqual([]);
    });
  }

  it("push notifications: a webhook gets each change of the task's state, with its token; internal addresses need allowing", async () => {
    const received: Array<{ headers: IncomingHttpHeaders; body: any }> = [];
    const receiver = createHttpServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => (text += chunk));
      req.on("end", () => {
        received.push({ headers: req.headers, body: JSON.parse(text) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    try {
      const auth = (req: Request) => req.headers.get("authorization")?.replace(/^Bearer /, "") ?? null;
      const agent = agentWith(
        [{ toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }, { text: "Refunded." }],
        [refundTool([])],
      );
      const serving = await serve(
        createServer({ agent, auth, a2a: { push: { allowHosts: ["127.0.0.1"], attempts: 1 } } }),
        { port: 0 },
      );
      servings.push(serving);
      const card = (await (await fetch(`${serving.url}/.well-known/agent-card.json`)).json()) as {
        capabilities: { pushNotifications?: boolean };
      };
      expect(card.capabilities.pushNotifications).toBe(true);
      const alice = await a2aClient(serving.url, "alice");
      const bob = await a2aClient(serving.url, "bob");
      const task = asTask(await alice.sendMessage(send(userText("refund A1"))));
      expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const config = {
        tenant: "",
        id: "",
        taskId: task.id,
        url: hook,
        token: "tok-1",
        authentication: { scheme: "Bearer", credentials: "hook-secret" },
      };
      const stored = await alice.createTaskPushNotificationConfig(config);
      expect(stored.id).not.toBe("");
      expect(
        (
          await alice.listTaskPushNotificationConfig({
            tenant: "",
            taskId: task.id,
            pageSize: 10,
            pageToken: "",
          })
        ).configs,
      ).toHaveLength(1);
      expect(
        (await alice.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: stored.id })).url,
      ).toBe(hook);
      await expect(bob.createTaskPushNotificationConfig(config)).rejects.toThrow(/no task/);
      await expect(
        alice.createTaskPushNotificationConfig({ ...config, url: "ftp://hooks.example/x" }),
      ).rejects.toThrow(/must be http\(s\)/);
      await expect(
        alice.createTaskPushNotificationConfig({ ...config, url: "https://user:pw@hooks.example/x" }),
      ).rejects.toThrow(/must not carry credentials/);
      await expect(
        alice.createTaskPushNotificationConfig({ ...config, url: "http://169.254.169.254/latest/meta-data" }),
      ).rejects.toThrow(/link-local|metadata|169\.254/);

      await alice.sendMessage(send(userText("yes", { taskId: task.id, contextId: task.contextId })));
      const until = Date.now() + 10_000;
      while (received.at(-1)?.body.task?.status?.state !== "TASK_STATE_COMPLETED" && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const last = received.at(-1)!;
      expect(last.body.task).toMatchObject({ id: task.id, status: { state: "TASK_STATE_COMPLETED" } });
      expect(JSON.stringify(last.body.task.artifacts)).toContain("Refunded.");
      expect(last.headers["x-a2a-notification-token"]).toBe("tok-1");
      expect(last.headers.authorization).toBe("Bearer hook-secret");
      expect(last.headers["content-type"]).toBe("application/a2a+json");
      // Every notification was a change: no state twice in a row.
      const states = received.map((r) => r.body.task.status.state);
      expect(states.every((state, i) => i === 0 || state !== states[i - 1])).toBe(true);
      await alice.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: stored.id });
      await expect(
        alice.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: stored.id }),
      ).rejects.toThrow(/no webhook/);

      // With push on but no private hosts allowed, a webhook on loopback is refused; with push off, any.
      for (const a2a of [{ push: true }, true] as const) {
        const other = await serve(createServer({ agent: agentWith([{ text: "hi" }]), a2a }), { port: 0 });
        servings.push(other);
        const client = await a2aClient(other.url);
        const hi = asTask(await client.sendMessage(send(userText("hi"))));
        // The SDK's client refuses at once (it throws, not rejects) when the card says "no push".
        const registering = async () => client.createTaskPushNotificationConfig({ ...config, taskId: hi.id });
        await expect(registering()).rejects.toThrow(a2a === true ? /not supported/i : /loopback/);
      }
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("an A2A 0.3 client (@a2a-js/sdk 0.3) reads the card it gets without asking for 1.0, and sends, streams and gets tasks", async () => {
    const legacy = await import("a2a-sdk-v03/client");
    const url = await start({
      agent: agentWith([{ text: "hello from 1.0" }, { text: "streamed" }], [lookup], "orders"),
      auth: "s3cret",
    });
    const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card).toMatchObject({
      url: `${url}/a2a`,
      preferredTransport: "JSONRPC",
      protocolVersion: "0.3.0",
      skills: [{ id: "lookup", tags: [] }],
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      security: [{ bearer: [] }],
    });
    const v1 = (await (
      await fetch(`${url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    ).json()) as Record<string, unknown>;
    expect(v1.url).toBeUndefined();
    expect(v1.supportedInterfaces).toEqual(card.supportedInterfaces);

    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", "Bearer s3cret");
      return fetch(input, { ...init, headers });
    };
    const factory = new legacy.ClientFactory(
      legacy.ClientFactoryOptions.createFrom(legacy.ClientFactoryOptions.default, {
        transports: [new legacy.JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new legacy.DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    const client = await factory.createFromUrl(url);
    const message = (text: string) => ({
      message: {
        kind: "message" as const,
        messageId: `m${++counter}`,
        role: "user" as const,
        parts: [{ kind: "text" as const, text }],
      },
    });
    const sent = (await client.sendMessage(message("hi"))) as {
      kind: string;
      id: string;
      status: { state: string };
    };
    expect(sent).toMatchObject({ kind: "task", status: { state: "completed" } });
    expect((await client.getTask({ id: sent.id })).status.state).toBe("completed");
    const kinds: string[] = [];
    for await (const event of client.sendMessageStream(message("again")))
      kinds.push((event as { kind: string }).kind);
    expect(kinds[0]).toBe("task");
    expect(kinds.at(-1)).toBe("status-update");
  });
});
