/**
 * A local stand-in for a model API, for the benchmarks: `node bench/replay-server.mjs <file>`
 * answers every request with the bytes of `<file>` as a `text/event-stream` (a recorded stream,
 * replayed), and prints `{ "port": N }` once it listens on 127.0.0.1. Its own process, so what it
 * costs is not counted in the client's CPU time. Plain JavaScript: no loader, no dependency.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const body = readFileSync(process.argv[2]);
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "content-length": body.length,
    });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
