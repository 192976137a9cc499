import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";

// A client may put any object in an AG-UI `state`, a client tool's `parameters`, `forwardedProps`,
// a message, an A2A data part…: nested thousands of levels deep (well under the size limit) it
// overflowed the stack of whatever walked it, a 500 the operator was told of for the client's own
// bad input. Every route refuses a body nested more than 256 levels with a 400 naming the field;
// anything up to the limit is served as before.

const servings: Serving[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
});

async function start(options: Omit<ServerOptions, "onError" | "a2a"> = { agent: agentWith(replies()) }) {
  const reported: unknown[] = [];
  const serving = await serve(createServer({ ...options, a2a: true, onError: (e) => reported.push(e) }), {
    port: 0,
  });
  servings.push(serving);
  return { url: serving.url, reported };
}

function replies() {
  return Array.from({ length: 20 }, () => ({ text: "ok" }));
}

/** An object `levels` deep, counting itself; built as text, as JSON.stringify would overflow on it. */
const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;

let thread = 0;
/** A RunAgentInput with `deep` (JSON text) put in one place. */
function agUiInput(
  where: "state" | "tools" | "forwardedProps" | "messages" | "context",
  deep: string,
): string {
  const parts = {
    threadId: JSON.stringify(`t-${++thread}`),
    runId: '"r"',
    state: "{}",
    tools: "[]",
    forwardedProps: "{}",
    context: "[]",
    messages: '[{"id":"m1","role":"user","content":"hi"}]',
  };
  if (where === "state") parts.state = deep;
  if (where === "tools")
    parts.tools = `[{"name":"pick","description":"d","parameters":{"type":"object","properties":{"p":${deep}}}}]`;
  if (where === "forwardedProps") parts.forwardedProps = `{"x":${deep}}`;
  if (where === "context") parts.context = `[{"description":"d","value":"v","x":${deep}}]`;
  if (where === "messages") parts.messages = `[{"id":"m1","role":"user","content":"hi","x":${deep}}]`;
  return `{${Object.entries(parts)
    .map(([k, v]) => `"${k}":${v}`)
    .join(",")}}`;
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
    body,
  });
  return { status: response.status, text: await response.text() };
}

const PLACES = ["state", "tools", "forwardedProps", "messages", "context"] as const;

describe("request bodies nested too deep", () => {
  it("AG-UI: state, a client tool's parameters, forwardedProps, messages or context thousands deep is a 400 naming the field, never a 500 nor onError", async () => {
    const { url, reported } = await start();
    for (const where of PLACES) {
      for (const levels of [5_000, 50_000]) {
        const { status, text } = await post(`${url}/api/ag-ui`, agUiInput(where, nested(levels)));
        expect(status, `${where} ${levels}: ${text.slice(0, 200)}`).toBe(400);
        expect(JSON.parse(text).error).toEqual({
          code: "bad_request",
          message: `the body's "${where}" is nested more than 256 levels deep`,
        });
      }
    }
    expect(reported).toEqual([]);
  });

  it("AG-UI: up to the limit, deep state and tool schemas are served", async () => {
    const { url, reported } = await start();
    for (const where of PLACES) {
      // The field sits at level 2 and tools' schema a few levels further in: 250 stays within 256.
      const { status, text } = await post(`${url}/api/ag-ui`, agUiInput(where, nested(250)));
      expect(status, `${where}: ${text.slice(0, 200)}`).toBe(200);
      expect(text).toContain('"type":"RUN_FINISHED"');
    }
    expect(reported).toEqual([]);
  });

  it("the native API, the chat endpoint and A2A: a 400 past the limit, served up to it, never a 500", async () => {
    const { url, reported } = await start();
    const bodies = (deep: string, n: number) => [
      { path: "/api/runs", field: "content", body: `{"content":[{"type":"text","text":"hi","x":${deep}}]}` },
      {
        path: "/api/chat",
        field: "messages",
        body: `{"id":"chat-${n}","messages":[{"id":"u","role":"user","metadata":${deep},"parts":[{"type":"text","text":"hi"}]}]}`,
      },
      {
        path: "/a2a",
        field: "params",
        body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m${n}","role":"user","metadata":${deep},"parts":[{"kind":"text","text":"hi"},{"kind":"data","data":${deep}}]}}}`,
      },
    ];
    for (const { path, field, body } of bodies(nested(5_000), 1)) {
      const { status, text } = await post(`${url}${path}`, body);
      expect(status, `${path}: ${text.slice(0, 200)}`).toBe(400);
      expect(JSON.parse(text).error.message).toBe(
        `the body's "${field}" is nested more than 256 levels deep`,
      );
    }
    for (const { path, body } of bodies(nested(240), 2)) {
      const { status, text } = await post(`${url}${path}`, body);
      expect(status, `${path}: ${text.slice(0, 200)}`).toBeLessThan(300);
      expect(text).not.toContain('"error"');
    }
    expect(reported).toEqual([]);
  });
});
