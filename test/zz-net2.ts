import { createServer, connect } from "node:net";
import pg from "pg";
import { startPostgresCluster } from "./store/postgres-cluster.js";
const cluster = await startPostgresCluster({ durable: true });
const url = new URL(cluster.connectionString);
const proxy = createServer((c) => {
  const s = connect(Number(url.port), "127.0.0.1");
  c.on("data", (d) => { const b = Buffer.from(d); setTimeout(() => s.write(b), 1); }); s.on("data", (d) => { const b = Buffer.from(d); setTimeout(() => c.write(b), 1); });
  c.on("close", () => { console.log("c close"); s.destroy(); }); s.on("close", () => { console.log("s close"); c.destroy(); }); c.on("error", (e) => console.log("c", e)); s.on("error", (e) => console.log("s", e));
});
await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
const port = (proxy.address() as any).port;
console.log(url.port, port);
const c = new pg.Client({ connectionString: `postgresql://quiver@127.0.0.1:${port}/postgres` });
await c.connect(); console.log((await c.query("SELECT 1 AS x")).rows);
await c.end(); proxy.close(); await cluster.stop();
