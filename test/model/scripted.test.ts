import { ProviderError, ScriptedModel } from "quiver-agents";
import { describe, expect, it } from "vitest";

const request = (signal?: AbortSignal) => ({
  messages: [],
  tools: [],
  settings: {},
  ...(signal && { signal }),
});

async function drain(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

describe("ScriptedModel", () => {
  it("plays a turn when its stream is first read, as a provider request would", async () => {
    const model = new ScriptedModel([{ text: "hi", toolCalls: [{ name: "add", args: { a: 1, b: 2 } }] }]);
    const stream = model.stream(request());
    expect(model.remaining).toBe(1);
    expect(model.requests).toHaveLength(0);
    expect(await drain(stream)).toEqual([
      { type: "text_delta", delta: "hi" },
      { type: "tool_call", index: 0, id: "call_1", name: "add", args: '{"a":1,"b":2}' },
      { type: "finish", reason: "tool_calls" },
    ]);
    expect(model.remaining).toBe(0);
    expect(model.requests).toHaveLength(1);
  });

  it("ends at return(), and stays ended", async () => {
    const model = new ScriptedModel([{ text: "a", reasoning: "r" }]);
    const iterator = model.stream(request())[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ value: { type: "reasoning_delta", delta: "r" }, done: false });
    expect(await iterator.return?.()).toEqual({ value: undefined, done: true });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it("rejects the first read when no turn is left, with what it was given", async () => {
    const model = new ScriptedModel([{ text: "only" }]);
    await drain(model.stream(request()));
    const iterator = model.stream(request())[Symbol.asyncIterator]();
    const error = await iterator.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toMatch(/no turn left: it was given 1 and was asked for turn 2/);
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it("waits delayMs before the first event, and stops waiting when the request is aborted", async () => {
    const model = new ScriptedModel([
      { text: "late", delayMs: 40 },
      { text: "never", delayMs: 10_000 },
    ]);
    const started = Date.now();
    expect(await drain(model.stream(request()))).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);

    const controller = new AbortController();
    const reading = drain(model.stream(request(controller.signal)));
    setTimeout(() => controller.abort(new Error("stop")), 10);
    await expect(reading).rejects.toThrow("stop");
  });
});
