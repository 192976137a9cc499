// Durable runs through a TCP proxy that delays every chunk by 1 ms each way (a 2 ms round trip).
import { createServer, connect } from "node:net";
import { startPostgresCluster } from "./store/postgres-cluster.js";
const q = await import(`${process.env.DIST}/index.js`);
const stores = await import(`${process.env.DIST}/store/index.js`);
const { Agent, Runner, ScriptedModel, tool } = q as any;
import { z } from "zod";
const cluster = await startPostgresCluster({ durable: true });
const url = new URL(cluster.connectionString);
const proxy = createServer((c) => {
  const s = connect(Number(url.port), "127.0.0.1");
  c.on("data", (d) => { const b = Buffer.from(d); setTimeout(() => s.write(b), 1); }); s.on("data", (d) => { const b = Buffer.from(d); setTimeout(() => c.write(b), 1); });
  c.on("close", () => s.destroy()); s.on("close", () => c.destroy()); c.on("error", () => {}); s.on("error", () => {});
});
await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
const store = new stores.PostgresStore({ connectionString: `postgresql://quiver@127.0.0.1:${(proxy.address() as any).port}/postgres`, schema: "net" });
const add = tool({ name: "add", description: "add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }: any) => a + b });
const steps: any[] = []; for (let i = 0; i < 20; i++) steps.push({ toolCalls: [{ name: "add", args: { a: i, b: 1 } }] }); steps.push({ text: "done" });
async function once() { const agent = new Agent({ name: "b", model: new ScriptedModel(steps, { record: false }), tools: [add] }); const r = await Runner.run(agent, "go", { maxTurns: 21, store }); if (r.stopReason !== "completed") throw new Error(r.stopReason); }
await once();
const t0 = performance.now(); for (let i = 0; i < 5; i++) await once();
console.log(process.env.DIST, ((performance.now() - t0) / 100).toFixed(2), "ms per call");
await store.close(); proxy.close(); await cluster.stop(); process.exit(0);
