/**
 * The load generator of bench/chat-load.ts, in a process of its own: `node bench/chat-load.mjs
 * <port> <concurrency> <requests> <warm-up requests>` keeps `concurrency` `POST /api/chat`
 * streams open on 127.0.0.1 (each connection starts the next request once its response has
 * ended) until `requests` have completed, after `warm-up` untimed ones; it prints one JSON line:
 * time to the stream's first byte (the first body chunk) p50/p99, runs per second, and what the
 * first response held (to check both servers did the same work). Plain node:http, no parsing:
 * the generator must cost little, the same for every server.
 */
import http from "node:http";

const [port, concurrency, requests, warmUp] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

/**
 * One chat request. A kept-alive socket the server closed just as it was reused fails with
 * ECONNRESET before anything was sent back (node's docs: check `reusedSocket`): asked again on a
 * fresh socket, as a browser would.
 */
async function chat(i) {
  try {
    return await chatOnce(i);
  } catch (error) {
    if (error.code === "ECONNRESET" && error.reusedSocket) return chatOnce(i);
    throw error;
  }
}

function chatOnce(i) {
  const body = JSON.stringify({
    id: `chat-${i}`,
    messages: [{ id: `m${i}`, role: "user", parts: [{ type: "text", text: "Add 1 and 2, then talk." }] }],
  });
  return new Promise((done, fail) => {
    const started = performance.now();
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/chat",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let first = 0;
        const chunks = i === 0 ? [] : undefined;
        res.on("data", (chunk) => {
          if (!first) first = performance.now();
          chunks?.push(chunk);
        });
        res.on("end", () =>
          done({
            status: res.statusCode,
            firstByteMs: first - started,
            text: chunks && Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", fail);
      },
    );
    req.on("error", (error) => {
      error.reusedSocket = req.reusedSocket;
      fail(error);
    });
    req.end(body);
  });
}

/** Runs `total` requests, `concurrency` at a time; returns their first-byte times and the wall time. */
async function load(total, offset) {
  let next = 0;
  const firstBytes = [];
  let sample;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = offset + next++;
        const r = await chat(i);
        if (r.status !== 200) throw new Error(`request ${i}: status ${r.status}`);
        firstBytes.push(r.firstByteMs);
        if (r.text !== undefined) sample = r.text;
      }
    }),
  );
  return { firstBytes, ms: performance.now() - started, sample };
}

const warm = await load(warmUp, 0);
const measured = await load(requests, warmUp);
const sorted = measured.firstBytes.sort((a, b) => a - b);
const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const sample = warm.sample ?? "";
process.stdout.write(
  `${JSON.stringify({
    requests,
    concurrency,
    runsPerSecond: requests / (measured.ms / 1000),
    firstByteP50: at(0.5),
    firstByteP99: at(0.99),
    textDeltas: sample.split('"type":"text-delta"').length - 1,
    toolOutputs: sample.split('"type":"tool-output-available"').length - 1,
    bytes: Buffer.byteLength(sample),
  })}\n`,
);
agent.destroy();
