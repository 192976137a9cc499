/**
 * The agent both sides of bench/workloads/dbos.ts drive (its child and its worker processes):
 * CALLS `add` calls, one per turn, then an answer, over a scripted model that reads the turn
 * from the request. `q` is Quiver's module (dist/ or src/), `z` zod.
 */
export function benchAgent(q, z, calls) {
  const add = q.tool({
    name: "add",
    description: "Add two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    idempotent: true,
    execute: async ({ a, b }) => String(a + b),
  });
  const model = new q.ScriptedModel(
    Array.from({ length: 20_000 }, () => (req) => {
      const done = req.messages.filter((m) => m.role === "tool").length;
      return done < calls
        ? { toolCalls: [{ id: `c${done}`, name: "add", args: { a: done, b: 1 } }] }
        : { text: `added ${done} times` };
    }),
    { record: false },
  );
  return new q.Agent({ name: "bench", model, tools: [add] });
}
