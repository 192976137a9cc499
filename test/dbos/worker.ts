/**
 * A DBOS worker process for the scale-out tests: launches DBOS with a pinned executor id and
 * drives `quiver.run` for five agents. Every tool execution is recorded in a file outside the
 * process (EFFECTS), so the test can tell which calls ran, and where, after a SIGKILL.
 *
 *   DATABASE_URL=postgresql://…  EXECUTOR_ID=worker-a  EFFECTS=/tmp/effects.log  SILENT_MS=2000
 */
import { appendFileSync } from "node:fs";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent, type ModelRequest, ScriptedModel, tool } from "quiver-agents";
import { durableAskHuman, durableRuns } from "quiver-agents/dbos";
import { PostgresStore } from "quiver-agents/store";
import { z } from "zod";

const env = process.env;
const url = env.DATABASE_URL!;
const executor = env.EXECUTOR_ID!;
const record = (line: string) => appendFileSync(env.EFFECTS!, `${line}\n`);

// Not idempotent: a call that started and was cut off must never run again.
const charge = tool({
  name: "charge",
  description: "Charge the customer.",
  parameters: z.object({ cents: z.number() }),
  execute: async ({ cents }, ctx) => {
    record(`start ${ctx.runId} ${executor}`);
    await new Promise((r) => setTimeout(r, 400));
    record(`done ${ctx.runId} ${executor}`);
    return `charged ${cents}`;
  },
});
const refund = tool({
  name: "refund",
  description: "Refund the customer.",
  parameters: z.object({ cents: z.number() }),
  needsApproval: true,
  execute: async ({ cents }, ctx) => {
    record(`refund ${ctx.runId} ${executor}`);
    return `refunded ${cents}`;
  },
});
const wait = tool({
  name: "wait",
  description: "Wait a long time.",
  parameters: z.object({}),
  execute: async (_args, ctx) => {
    record(`wait ${ctx.runId} ${executor}`);
    await new Promise((r) => setTimeout(r, 60_000));
    return "waited";
  },
});

// One tool call, then an answer naming its result: the answer depends only on the transcript.
const oneCall = (name: string, args: object) =>
  new ScriptedModel(
    Array.from({ length: 100 }, () => (req: ModelRequest) => {
      const result = req.messages.find((m) => m.role === "tool");
      if (!result) return { toolCalls: [{ id: "c1", name, args }] };
      const text = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
      return { text: `finished: ${text}` };
    }),
  );

// Asks the person once, then reports the answer it got (or the error it read).
const asker = new ScriptedModel(
  Array.from({ length: 100 }, () => (req: ModelRequest) => {
    const result = req.messages.find((m) => m.role === "tool");
    if (!result) {
      return {
        toolCalls: [
          {
            id: "q1",
            name: "ask_human",
            args: { question: "Which city?", options: [{ label: "Kyoto" }, { label: "Osaka" }] },
          },
        ],
      };
    }
    return { text: `planning ${typeof result.content === "string" ? result.content : ""}` };
  }),
);

// Asks for an approval and a question in one turn, then reports both results.
const mixer = new ScriptedModel(
  Array.from({ length: 100 }, () => (req: ModelRequest) => {
    const results = req.messages.filter((m) => m.role === "tool");
    if (results.length === 0) {
      return {
        toolCalls: [
          { id: "c1", name: "refund", args: { cents: 300 } },
          { id: "q1", name: "ask_human", args: { question: "Why the refund?" } },
        ],
      };
    }
    return { text: results.map((m) => (typeof m.content === "string" ? m.content : "")).join(" / ") };
  }),
);

const store = new PostgresStore({ connectionString: url });
const runs = durableRuns({
  store,
  agents: {
    biller: new Agent({ name: "biller", model: oneCall("charge", { cents: 500 }), tools: [charge] }),
    refunder: new Agent({ name: "refunder", model: oneCall("refund", { cents: 700 }), tools: [refund] }),
    waiter: new Agent({ name: "waiter", model: oneCall("wait", {}), tools: [wait] }),
    planner: new Agent({ name: "planner", model: asker, tools: [durableAskHuman()] }),
    mixer: new Agent({ name: "mixer", model: mixer, tools: [refund, durableAskHuman()] }),
  },
  databaseUrl: url,
  leaseMs: 3_000,
  queue: { workerConcurrency: 3 },
});
DBOS.setConfig({
  name: "quiver-test",
  systemDatabaseUrl: url,
  executorID: executor,
  applicationVersion: "test-1",
  logLevel: "error",
});
await DBOS.launch();
await runs.startWorker({ reaper: { silentMs: Number(env.SILENT_MS ?? 60_000), everyMs: 300 } });
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  DBOS.shutdown().finally(() => process.exit(0));
});
