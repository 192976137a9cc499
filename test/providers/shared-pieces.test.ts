import { describe, expect, it } from "vitest";
import { objectRootSchema, toStrictSchema } from "../../src/model/schema-lowering.js";
import { repairToolArguments } from "../../src/providers/json-repair.js";
import { retryAfterMs } from "../../src/providers/retry.js";
import { MAX_LINE_CHARS, SseDecoder } from "../../src/providers/sse.js";
import { safeCallId } from "../../src/providers/tool-call-ids.js";

describe("SseDecoder", () => {
  it("decodes events split anywhere, with CRLF, CR, comments and multi-line data", () => {
    const text = ': keep-alive\r\nevent: a\r\ndata: {"x":\r\ndata: 1}\r\n\r\ndata: two\r\rdata: three\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const decoder = new SseDecoder();
      const events = [
        ...decoder.push(text.slice(0, cut)),
        ...decoder.push(text.slice(cut)),
        ...decoder.end(),
      ];
      expect(events).toEqual([{ event: "a", data: '{"x":\n1}' }, { data: "two" }, { data: "three" }]);
    }
  });

  it("decodes a long line sent in small chunks in time linear in its length, and refuses one that never ends", () => {
    const decode = (chars: number) => {
      const payload = "x".repeat(chars);
      const text = `data: {"arguments":"${payload}"}\n\n`;
      const decoder = new SseDecoder();
      const started = performance.now();
      const events = [];
      for (let at = 0; at < text.length; at += 4_096)
        events.push(...decoder.push(text.slice(at, at + 4_096)));
      const ms = performance.now() - started;
      expect(events).toEqual([{ data: `{"arguments":"${payload}"}` }]);
      return ms;
    };
    decode(1_000_000); // warm-up
    const small = Math.max(decode(2_000_000), 1);
    const large = decode(8_000_000);
    // Rescanned from its start at every chunk, four times the line took sixteen times as long.
    expect(large / small).toBeLessThan(8);

    const endless = new SseDecoder();
    const megabyte = "y".repeat(1024 * 1024);
    expect(() => {
      for (let i = 0; i <= MAX_LINE_CHARS / megabyte.length; i++) endless.push(megabyte);
    }).toThrow(/a line of over 64 MiB without ending it/);
  });

  it("dispatches a complete last event without its blank line, but never half a line", () => {
    const complete = new SseDecoder();
    expect([...complete.push('data: {"done":true}\n'), ...complete.end()]).toEqual([
      { data: '{"done":true}' },
    ]);
    const cut = new SseDecoder();
    expect([...cut.push('data: {"a":1}\n\ndata: {"do'), ...cut.end()]).toEqual([{ data: '{"a":1}' }]);
  });
});

describe("repairToolArguments", () => {
  it.each([
    ['{"a": 1,}', '{"a": 1}', ["trailing comma"]],
    ['{"a": [1, 2,],}', '{"a": [1, 2]}', ["trailing comma"]],
    ["{'city': 'Paris'}", '{"city": "Paris"}', ["single-quoted string"]],
    ["{'q': 'say \"hi\"', 'n': 'it\\'s'}", '{"q": "say \\"hi\\"", "n": "it\'s"}', ["single-quoted string"]],
    ['{"a": "unterminated', '{"a": "unterminated"}', ["unterminated string", "unclosed bracket"]],
    ['{"a": {"b": [1, 2', '{"a": {"b": [1, 2]}}', ["unclosed bracket"]],
  ])("repairs %s", (input, text, repairs) => {
    expect(repairToolArguments(input)).toEqual({ text, repairs });
  });

  it.each([
    ['{"a": 1}'], // already valid: untouched
    ['{"a": }'],
    ['{"a": 1 "b": 2}'],
    ["{a: 1}"],
    ['{"a": 1,'],
    ['{"a":'],
    ['{"a": 1}}'],
    ["[1, 2,]"], // not an object
    ['{"a": True}'],
  ])("leaves %s alone", (input) => {
    expect(repairToolArguments(input)).toBeUndefined();
  });
});

describe("tool schemas", () => {
  it("makes a schema strict: closed, all required, optional nullable, defaults noted; idempotent", () => {
    const schema = {
      type: "object",
      properties: {
        q: { type: "string", minLength: 1 },
        limit: { type: "integer", default: 10 },
        tags: { type: "array", items: { type: "object", properties: { name: { type: "string" } } } },
        mode: { enum: ["a", "b"] },
      },
      required: ["q"],
    };
    const strict = toStrictSchema(schema);
    expect(strict).toEqual({
      schema: {
        type: "object",
        properties: {
          q: { type: "string", description: "(minLength: 1)" },
          limit: { type: ["integer", "null"], description: "(default: 10)" },
          tags: {
            type: ["array", "null"],
            items: {
              type: "object",
              properties: { name: { type: ["string", "null"] } },
              required: ["name"],
              additionalProperties: false,
            },
          },
          mode: { anyOf: [{ enum: ["a", "b"] }, { type: "null" }] },
        },
        required: ["q", "limit", "tags", "mode"],
        additionalProperties: false,
      },
    });
    expect(toStrictSchema((strict as { schema: Record<string, unknown> }).schema)).toEqual(strict);
  });

  it("gives a reason instead when strict mode cannot express the schema", () => {
    expect(
      toStrictSchema({
        type: "object",
        properties: { m: { type: "object", additionalProperties: { type: "string" } } },
      }),
    ).toEqual({
      reason: expect.stringContaining("record"),
    });
    expect(toStrictSchema({ type: "object", properties: { x: { allOf: [{ type: "string" }] } } })).toEqual({
      reason: expect.stringContaining("allOf"),
    });
  });

  it("merges a root anyOf of objects into one object, as documented", () => {
    const root = objectRootSchema({
      anyOf: [
        {
          type: "object",
          properties: { id: { type: "string" }, kind: { const: "a" } },
          required: ["id", "kind"],
        },
        {
          type: "object",
          properties: { id: { type: "string" }, size: { type: "number" } },
          required: ["id"],
        },
      ],
    });
    expect(root.schema).toEqual({
      type: "object",
      properties: { id: { type: "string" }, kind: { const: "a" }, size: { type: "number" } },
      required: ["id"],
    });
    expect(root.simplified).toContain("merged");
  });
});

describe("retry and ids", () => {
  it("reads retry-after-ms, Retry-After seconds and HTTP dates", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250", "retry-after": "9" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000);
    const now = Date.parse("2025-06-01T10:00:00Z");
    expect(retryAfterMs(new Headers({ "retry-after": "Sun, 01 Jun 2025 10:00:05 GMT" }), now)).toBe(5000);
    expect(retryAfterMs(new Headers({ "retry-after": "soon" }))).toBeUndefined();
  });

  it("keeps valid ids and maps invalid ones to distinct valid ones", () => {
    expect(safeCallId("toolu_01A-b", 64)).toBe("toolu_01A-b");
    const a = safeCallId("call:1", 40);
    const b = safeCallId("call/1", 40);
    expect(a).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    expect(a).not.toBe(b);
    expect(safeCallId("x".repeat(100), 40)).toHaveLength(40);
  });
});
