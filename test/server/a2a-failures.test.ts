import { Role } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { MemoryStore, StoreError } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";

// What an A2A caller is told when something fails: the protocol's own errors and the errors
// the server raises for the caller keep their text; anything else is -32603 with a fixed
// message naming a request id, and goes to onError — never the error's own text.

const SECRET = "connect ECONNREFUSED postgres://quiver:hunter2@10.0.0.5:5432/prod";
const FIXED = /the server failed to answer this request \(request (req_[\w-]+)\)/;

const servings: Serving[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
});

type Reported = { error: unknown; requestId: string; status: number };

async function start(options: Omit<ServerOptions, "a2a" | "onError">) {
  const reported: Reported[] = [];
  const server = createServer({
    ...options,
    a2a: true,
    onError: (error, { requestId, status }) => reported.push({ error, requestId, status }),
  });
  const serving = await serve(server, { port: 0 });
  servings.push(serving);
  return { url: serving.url, server, reported };
}

/** A store whose reads and writes fail the way a database's driver does: naming where it is. */
function brokenStore(failure: () => Error = () => new Error(SECRET)): MemoryStore {
  const working = new MemoryStore();
  return new Proxy(working, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      if (["getRun", "read", "listRuns", "listSessions", "acquireLease", "append"].includes(String(key)))
        return () => Promise.reject(failure());
      return value.bind(target);
    },
  });
}

/** A raw JSON-RPC call: 0.3 unless `v1`. The answer's text, and its `x-request-id`. */
async function rpc(url: string, method: string, params: unknown, v1 = false) {
  const response = await fetch(`${url}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(v1 && { "a2a-version": "1.0" }) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  });
  return { text: await response.text(), header: response.headers.get("x-request-id") };
}

const legacyMessage = (text: string) => ({
  kind: "message",
  messageId: `m-${text}`,
  role: "user",
  parts: [{ kind: "text", text }],
});

function client(url: string) {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({})],
    }),
  ).createFromUrl(url);
}

describe("A2A failures", () => {
  it("a store failure is -32603 with a request id on every method, plain or streamed, and each goes to onError", async () => {
    const { url, reported } = await start({ agent: agentWith([{ text: "never" }]), store: brokenStore() });
    const answers = [
      await rpc(url, "tasks/get", { id: "run_x" }),
      await rpc(url, "message/send", { message: legacyMessage("a") }),
      await rpc(url, "message/stream", { message: legacyMessage("b") }),
      await rpc(url, "tasks/resubscribe", { id: "run_x" }),
      await rpc(url, "GetTask", { id: "run_x" }, true),
      await rpc(url, "ListTasks", {}, true),
      await rpc(url, "SubscribeToTask", { id: "run_x" }, true),
    ];
    for (const { text, header } of answers) {
      expect(text).not.toContain("hunter2");
      expect(text).toContain("-32603");
      const requestId = FIXED.exec(text)?.[1];
      expect(requestId, text).toBeDefined();
      // The same id the REST 500 would give: in the header too, so a proxy's log can name it.
      expect(header).toBe(requestId);
      const told = reported.filter((r) => r.requestId === requestId);
      expect(told).toHaveLength(1);
      expect(String(told[0]!.error)).toContain("hunter2");
      expect(told[0]!.status).toBe(500);
    }
    expect(reported).toHaveLength(answers.length);

    // The SDK's own client reads the same fixed message.
    const sdk = await client(url);
    const got = await sdk.getTask({ tenant: "", id: "run_x" }).catch((error: unknown) => error);
    expect(String(got)).toMatch(FIXED);
    expect(String(got)).not.toContain("hunter2");
    const streamed = (async () => {
      const message = {
        messageId: "m-c",
        contextId: "",
        taskId: "",
        role: Role.ROLE_USER,
        parts: [
          {
            content: { $case: "text" as const, value: "c" },
            metadata: undefined,
            filename: "",
            mediaType: "",
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      for await (const _ of sdk.sendMessageStream({
        tenant: "",
        message,
        configuration: undefined,
        metadata: undefined,
      }));
    })().catch((error: unknown) => error);
    expect(String(await streamed)).toMatch(FIXED);
    expect(String(await streamed)).not.toContain("hunter2");
    expect(reported).toHaveLength(answers.length + 2);
  });

  it("a store that is down for a while is said to be, as on REST (503 to onError), still without its text", async () => {
    const { url, reported } = await start({
      agent: agentWith([{ text: "never" }]),
      store: brokenStore(() => new StoreError(SECRET, { retryable: true })),
    });
    const { text, header } = await rpc(url, "tasks/get", { id: "run_x" });
    expect(text).not.toContain("hunter2");
    expect(text).toContain(`the server's store is not answering; try again shortly (request ${header})`);
    expect(reported.map((r) => [r.requestId, r.status])).toEqual([[header, 503]]);
  });

  it("params the SDK cannot read are invalid params with a fixed message, not a failure of the server", async () => {
    const { url, reported } = await start({ agent: agentWith([{ text: "never" }]) });
    const answers = [
      (await rpc(url, "SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [null] } }, true))
        .text,
      (
        await rpc(
          url,
          "SendMessage",
          { message: { messageId: "m", role: "ROLE_USER", parts: [{ raw: 5 }] } },
          true,
        )
      ).text,
      (await rpc(url, "SendStreamingMessage", { message: { messageId: "m", parts: [null] } }, true)).text,
      (
        await rpc(url, "message/send", {
          message: { ...legacyMessage("x"), parts: [{ kind: "file", file: null }] },
        })
      ).text,
    ];
    for (const text of answers) {
      expect(JSON.parse(text).error).toEqual({
        code: -32602,
        message: "the params are not a valid A2A request",
      });
    }
    expect(reported).toEqual([]);
  });

  it("what the server tells the caller on purpose keeps its text and is no failure: a server shutting down", async () => {
    const { url, server, reported } = await start({ agent: agentWith([{ text: "never" }]) });
    await server.close();
    for (const { text } of [
      await rpc(url, "message/send", { message: legacyMessage("late") }),
      await rpc(url, "message/stream", { message: legacyMessage("later") }),
    ]) {
      expect(JSON.parse(text).error).toMatchObject({
        code: -32603,
        message: "the server is shutting down; try again shortly",
      });
    }
    expect(reported).toEqual([]);
  });
});
