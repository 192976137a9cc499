import { Agent, jsonSchema, type Model, type RunEvent, ScriptedModel, tool } from "quiver-agents";
import { type RunStore, StoreError } from "quiver-agents/store";

/** A tool that needs approval and records what ran. */
export function refundTool(ran: string[]) {
  return tool({
    name: "refund",
    description: "Refund an order",
    parameters: jsonSchema<{ order: string }>({
      type: "object",
      properties: { order: { type: "string" } },
      required: ["order"],
    }),
    needsApproval: true,
    execute: async ({ order }) => {
      ran.push(order);
      return `refunded ${order}`;
    },
  });
}

/** A tool that reports progress, then waits until `release()` (to hold a run mid-way). */
export function slowTool() {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const t = tool({
    name: "slow",
    description: "Takes a while",
    parameters: jsonSchema<{ step: string }>({
      type: "object",
      properties: { step: { type: "string" } },
      required: ["step"],
    }),
    execute: async ({ step }, ctx) => {
      ctx.update({ progress: `working on ${step}` });
      await Promise.race([gate, new Promise((r) => setTimeout(r, 15_000))]);
      return `done ${step}`;
    },
  });
  return { tool: t, release: () => release() };
}

/** A tool that adds a step to the run's shared plan (`{ steps: string[] }`) and says how long it is. */
export const addStepTool = tool({
  name: "add_step",
  description: "Add a step to the shared plan.",
  parameters: jsonSchema<{ step: string }>({
    type: "object",
    properties: { step: { type: "string" } },
    required: ["step"],
  }),
  execute: async ({ step }, ctx) => {
    ctx.setState((previous: unknown) => ({
      steps: [...((previous as { steps?: string[] } | undefined)?.steps ?? []), step],
    }));
    return `plan has ${(ctx.state as { steps: string[] }).steps.length} steps`;
  },
});

export function agentWith(
  turns: ConstructorParameters<typeof ScriptedModel>[0],
  tools: ReturnType<typeof tool>[] = [],
  name = "helper",
) {
  return new Agent({ name, model: new ScriptedModel(turns), tools });
}

export const BASE = "http://127.0.0.1";

export function post(path: string, body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(`${BASE}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Reads SSE frames from a response until `until` says stop (or the stream ends); bounded by `timeoutMs`. */
export async function readSse(
  response: Response,
  until: (frames: SseFrame[]) => boolean = () => false,
  timeoutMs = 5_000,
): Promise<SseFrame[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const frames: SseFrame[] = [];
  let buffer = "";
  const deadline = setTimeout(() => void reader.cancel(new Error("readSse timed out")), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      let cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const frame: SseFrame = {};
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) frame.id = line.slice(4);
          else if (line.startsWith("data: ")) frame.data = line.slice(6);
        }
        if (frame.data !== undefined) frames.push(frame);
        cut = buffer.indexOf("\n\n");
      }
      if (until(frames)) break;
    }
  } finally {
    clearTimeout(deadline);
    await reader.cancel().catch(() => {});
  }
  return frames;
}

export type SseFrame = { id?: string; data?: string };

export function events(frames: SseFrame[]): RunEvent[] {
  return frames.map((f) => JSON.parse(f.data!) as RunEvent);
}

/** Polls until `check` is true, bounded. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A model that streams `count` text deltas of `size` characters in one turn (for volume and backpressure). */
export function chattyAgent(count: number, size = 100, name = "chatty") {
  const chunk = "x".repeat(size);
  return new Agent({
    name,
    model: {
      name: "chatty",
      async *stream() {
        for (let i = 0; i < count; i++) yield { type: "text_delta" as const, delta: chunk };
        yield { type: "finish" as const, reason: "stop" as const };
      },
    },
  });
}

/**
 * An agent whose model fails over mid-answer: "Half an answer" from the first model, then a
 * fallback, then "Your order shipped." from the next (what a fallback chain streams).
 */
export function fallingBackAgent(): Agent {
  const model: Model = {
    name: "chain",
    async *stream() {
      yield { type: "text_delta", delta: "Half an answer" };
      yield { type: "fallback", from: "openai:gpt-a", to: "anthropic:claude-b", reason: "503" };
      yield { type: "text_delta", delta: "Your order shipped." };
      yield { type: "finish", reason: "stop" };
    },
  };
  return new Agent({ name: "support", model });
}

/** `store`, whose leases fail retryably (as a database restarting does) while `down()` says so. */
export function failingWhile<S extends RunStore>(store: S, down: () => boolean): S {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      if (key === "acquireLease")
        return (...args: unknown[]) =>
          down()
            ? Promise.reject(
                new StoreError("connection refused: the database is restarting", { retryable: true }),
              )
            : value.apply(target, args);
      return value.bind(target);
    },
  });
}
