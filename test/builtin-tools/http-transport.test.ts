import { execFile, execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import nodePath from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import {
  brotliCompressSync,
  createBrotliCompress,
  createGzip,
  deflateRawSync,
  deflateSync,
  gzipSync,
} from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpReader, type LookupFunction } from "../../src/builtin-tools/http-reader.js";
import { ToolError } from "../../src/errors.js";
import { send, startServer, type TestServer } from "./helpers.js";

const TEXT = `${"Compressed pages read as plain text. ".repeat(400)}end`;

/** What the server saw of each request and each connection. */
let server: TestServer;
const acceptEncodings: string[] = [];
/** Per path, resolves when the server's side of that request has closed. */
const closed = new Map<string, Promise<void>>();

/** An endless stream of zero bytes: compressed, it is a bomb with no end at all. */
const zeros = () =>
  new Readable({
    read() {
      this.push(Buffer.alloc(64 * 1024));
    },
  });

beforeAll(async () => {
  server = await startServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    acceptEncodings.push(String(req.headers["accept-encoding"]));
    closed.set(
      path,
      once(res, "close").then(() => {}),
    );
    const plain = Buffer.from(TEXT);
    switch (path) {
      case "/gzip":
        return send(res, 200, "text/plain", gzipSync(plain), { "content-encoding": "gzip" });
      case "/deflate":
        return send(res, 200, "text/plain", deflateSync(plain), { "content-encoding": "deflate" });
      case "/deflate-raw":
        return send(res, 200, "text/plain", deflateRawSync(plain), { "content-encoding": "deflate" });
      case "/br":
        return send(res, 200, "text/plain", brotliCompressSync(plain), { "content-encoding": "br" });
      case "/gzip-then-br":
        return send(res, 200, "text/plain", brotliCompressSync(gzipSync(plain)), {
          "content-encoding": "gzip, br",
        });
      case "/html-gzip":
        return send(
          res,
          200,
          "text/html; charset=utf-8",
          gzipSync(`<main><h1>Zipped</h1><p>${TEXT}</p></main>`),
          { "content-encoding": "gzip" },
        );
      case "/endless-gzip":
      case "/endless-br": {
        res.writeHead(200, {
          "content-type": "text/plain",
          "content-encoding": path === "/endless-gzip" ? "gzip" : "br",
        });
        const source = zeros();
        const compress = path === "/endless-gzip" ? createGzip() : createBrotliCompress();
        res.on("close", () => source.destroy());
        source.pipe(compress).pipe(res);
        return;
      }
      case "/half-then-wait":
        // Headers and a first part of the body, then nothing: a slow or stuck server.
        res.writeHead(200, { "content-type": "text/plain", "content-length": "100000" });
        res.write("x".repeat(1_000));
        return;
      case "/truncated":
        res.writeHead(200, { "content-type": "text/plain", "content-length": "100000" });
        res.write("y".repeat(1_000));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      default:
        return send(res, 200, "text/plain", `plain ${path}`);
    }
  });
});
afterAll(() => server.close());

const reader = (options: ConstructorParameters<typeof HttpReader>[0] = {}) =>
  new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0, ...options });

/** A server that counts its connections (the shared helper does not say). */
async function countingServer(handler: http.RequestListener) {
  const sockets: net.Socket[] = [];
  const httpServer = http.createServer(handler);
  httpServer.on("connection", (socket) => sockets.push(socket));
  httpServer.listen(0, "127.0.0.1");
  await once(httpServer, "listening");
  const origin = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  return {
    origin,
    sockets,
    close: () => {
      httpServer.closeAllConnections();
      httpServer.close();
    },
  };
}

describe("compressed bodies", () => {
  it("asks for gzip, deflate and br and decodes each (deflate zlib-wrapped or raw, and a chain)", async () => {
    const r = reader();
    for (const path of ["/gzip", "/deflate", "/deflate-raw", "/br", "/gzip-then-br"]) {
      const page = await r.read(`${server.origin}${path}`);
      expect(page.text, path).toBe(TEXT);
      expect(page.byteLength, path).toBe(Buffer.byteLength(TEXT));
    }
    expect(new Set(acceptEncodings)).toEqual(new Set(["gzip, deflate, br"]));
    const html = await r.read(`${server.origin}/html-gzip`);
    expect(html.text).toContain("# Zipped");
    await r.close();
  });

  it("stops inflating an endless gzip or br stream at maxBytes and closes the connection", async () => {
    const r = reader({ maxBytes: 200_000 });
    for (const path of ["/endless-gzip", "/endless-br"]) {
      const started = performance.now();
      const page = await r.read(`${server.origin}${path}`);
      // The stream never ends, so a reader that inflated it all would never get here.
      expect(page.sizeCapped, path).toBe(true);
      expect(page.text, path).toBe("\0".repeat(200_000));
      await closed.get(path);
      expect(performance.now() - started, path).toBeLessThan(10_000);
    }
    await r.close();
  });
});

describe("the connection", () => {
  it("reuses one kept-alive connection for reads of the same host, and close() ends it", async () => {
    const counting = await countingServer((req, res) => send(res, 200, "text/plain", `at ${req.url}`));
    try {
      const r = reader();
      expect((await r.read(`${counting.origin}/one`)).text).toBe("at /one");
      expect((await r.read(`${counting.origin}/two`)).text).toBe("at /two");
      expect((await r.read(`${counting.origin}/three`)).text).toBe("at /three");
      expect(counting.sockets).toHaveLength(1);
      const ended = once(counting.sockets[0]!, "close");
      await r.close();
      await ended; // the server sees the pooled connection go
    } finally {
      counting.close();
    }
  });

  it("sends a request again on a new connection when a pooled one was dropped by the server", async () => {
    // Answers the first request of each connection and resets the connection on the second.
    let accepted = 0;
    const raw = net.createServer((socket) => {
      accepted++;
      let requests = 0;
      socket.on("data", (data) => {
        if (!data.includes("\r\n\r\n")) return;
        if (++requests > 1) return socket.resetAndDestroy();
        socket.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok");
      });
      socket.on("error", () => {});
    });
    raw.listen(0, "127.0.0.1");
    await once(raw, "listening");
    const origin = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    try {
      const r = reader();
      expect((await r.read(`${origin}/a`)).text).toBe("ok");
      expect((await r.read(`${origin}/b`)).text).toBe("ok");
      expect(accepted).toBe(2);
      await r.close();
    } finally {
      raw.close();
    }
  });

  it("aborting mid-body rejects with the caller's reason and closes the connection", async () => {
    const controller = new AbortController();
    const reason = new Error("run cancelled");
    const r = reader();
    const read = r.read(`${server.origin}/half-then-wait`, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort(reason);
    await expect(read).rejects.toBe(reason);
    await closed.get("/half-then-wait"); // the server's side of the connection closed
  });

  it("the whole-read timeout covers the body too, and closes the connection", async () => {
    const path = "/half-then-wait?timeout";
    const error = await reader({ timeoutMs: 300 })
      .read(`${server.origin}${path}`)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(/timed out after 300 ms/);
    await closed.get("/half-then-wait");
  });

  it("a body cut short by the server is an error, not a short page", async () => {
    const error = await reader()
      .read(`${server.origin}/truncated`)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(
      /could not fetch .*\/truncated: .*closed before the body was complete/,
    );
  });
});

describe("redirects into blocked literals", () => {
  it("refuses a redirect from an opened name to a loopback literal in any notation, before connecting", async () => {
    const lookup: LookupFunction = (_host, options, callback) => {
      if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
      else callback(null, "127.0.0.1", 4);
    };
    const seen: string[] = [];
    const hops = await countingServer((req, res) => {
      seen.push(new URL(req.url ?? "/", "http://x").pathname);
      const to = new URL(req.url ?? "/", "http://x").searchParams.get("to");
      if (to) {
        res.writeHead(302, { location: to });
        return res.end();
      }
      send(res, 200, "text/plain", "secret");
    });
    try {
      const r = new HttpReader({ allowHosts: ["wiki.test"], lookup, cacheTtlMs: 0 });
      const port = new URL(hops.origin).port;
      for (const target of [
        `http://0x7f.1:${port}/admin`,
        `http://[::ffff:7f00:1]:${port}/admin`,
        `http://127.0.0.1:${port}/admin`,
      ]) {
        const error = await r
          .read(`http://wiki.test:${port}/hop?to=${encodeURIComponent(target)}`)
          .catch((e: unknown) => e);
        expect(error, target).toBeInstanceOf(ToolError);
        expect((error as ToolError).message, target).toMatch(/refused to fetch .* is a loopback address/);
      }
      expect(seen).toEqual(["/hop", "/hop", "/hop"]); // nothing reached /admin
      await r.close();
    } finally {
      hops.close();
    }
  });
});

describe("https", () => {
  const src = nodePath.resolve(nodePath.dirname(fileURLToPath(import.meta.url)), "../../src");
  let dir: string;
  let tls: https.Server;
  let origin: string;
  let tlsConnections = 0;
  beforeAll(async () => {
    dir = mkdtempSync(nodePath.join(tmpdir(), "quiver-https-"));
    // A certificate for 127.0.0.1 that only a client told to trust it will accept.
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
        ...["-keyout", nodePath.join(dir, "key.pem"), "-out", nodePath.join(dir, "cert.pem"), "-days", "1"],
        ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
      ],
      { stdio: "ignore" },
    );
    tls = https.createServer(
      {
        key: readFileSync(nodePath.join(dir, "key.pem")),
        cert: readFileSync(nodePath.join(dir, "cert.pem")),
      },
      (req, res) =>
        send(res, 200, "text/plain", gzipSync(`secure ${req.url}`), { "content-encoding": "gzip" }),
    );
    tls.on("secureConnection", () => tlsConnections++);
    tls.listen(0, "127.0.0.1");
    await once(tls, "listening");
    origin = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    tls.closeAllConnections();
    tls.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("verifies certificates: one that does not verify is a tool error", async () => {
    const error = await reader()
      .read(`${origin}/x`)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(
      /could not fetch https:\/\/127\.0\.0\.1:\d+\/x: .*self-signed certificate/,
    );
  });

  it("reads over TLS on one kept-alive connection once the certificate is trusted", async () => {
    const script = nodePath.join(dir, "read.mts");
    const readerModule = pathToFileURL(nodePath.join(src, "builtin-tools/http-reader.ts")).href;
    writeFileSync(
      script,
      [
        `const { HttpReader } = await import(${JSON.stringify(readerModule)});`,
        'const reader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0 });',
        `const a = await reader.read(${JSON.stringify(`${origin}/a`)});`,
        `const b = await reader.read(${JSON.stringify(`${origin}/b`)});`,
        "await reader.close();",
        "console.log(JSON.stringify([a.text, b.text]));",
      ].join("\n"),
    );
    const before = tlsConnections;
    // Asynchronously: the server answering it runs on this thread.
    const { stdout: out } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
      cwd: nodePath.resolve(src, ".."),
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: nodePath.join(dir, "cert.pem") },
    });
    expect(JSON.parse(out.trim().split("\n").at(-1)!)).toEqual(["secure /a", "secure /b"]);
    expect(tlsConnections - before).toBe(1);
  });
});
