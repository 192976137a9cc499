/**
 * Tools that appear while an agent runs: an InProcessToolHost whose "log in" tool registers
 * the tools that need a login. The model sees them from its next request on.
 *
 *   npx tsx examples/host-in-process.ts
 */

import { Agent, InProcessToolHost, Runner, ScriptedModel, tool } from "quiver-agents";
import { z } from "zod";

const orders = new Map([["A123", { status: "shipped", total: 42 }]]);
const host = new InProcessToolHost();

const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up one of the customer's orders.",
  parameters: z.object({ orderId: z.string() }),
  readOnly: true,
  execute: async ({ orderId }) => orders.get(orderId) ?? `no order ${orderId}`,
});

const logOut = tool({
  name: "log_out",
  description: "End the customer session.",
  parameters: z.object({}),
  execute: async () => {
    host.unregister("lookup_order");
    host.unregister("log_out");
    return "logged out";
  },
});

const logIn = tool({
  name: "log_in",
  description: "Log the customer in; unlocks their order tools.",
  parameters: z.object({ customerId: z.string() }),
  execute: async ({ customerId }) => {
    if (!host.has("lookup_order")) host.register(lookupOrder).register(logOut);
    return `logged in as ${customerId}`;
  },
});
host.register(logIn);

// Someone watching the host (a UI listing the available tools, say).
const watching = new AbortController();
const watcher = (async () => {
  for await (const change of host.watch(watching.signal))
    console.log(`  [host] ${change.kind} ${change.name}`);
})();

const model = new ScriptedModel([
  { toolCalls: [{ name: "log_in", args: { customerId: "c-7" } }] },
  { toolCalls: [{ name: "lookup_order", args: { orderId: "A123" } }] },
  { toolCalls: [{ name: "log_out", args: {} }] },
  { text: "Your order A123 has shipped." },
]);
const agent = new Agent({ name: "support", model, tools: host });
const result = await Runner.run(agent, "Where is my order A123?");

for (const [i, request] of model.requests.entries()) {
  console.log(`request ${i + 1} offered: ${request.tools.map((t) => t.name).join(", ")}`);
}
for (const call of result.toolCalls) console.log(`${call.call.name} → ${call.output}`);
console.log(result.output);

watching.abort();
await watcher;
