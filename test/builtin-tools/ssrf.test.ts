import type dns from "node:dns";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AddressPolicy, BlockedAddressError, blockedRange } from "../../src/builtin-tools/address-policy.js";
import type { GuardedAgents } from "../../src/builtin-tools/guarded-agent.js";
import { HttpReader, type LookupFunction } from "../../src/builtin-tools/http-reader.js";
import { webFetch } from "../../src/builtin-tools/web-fetch.js";
import { ToolError } from "../../src/errors.js";
import { send, startServer, type TestServer, testContext } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const to = url.searchParams.get("to");
    if (url.pathname === "/redirect" && to) {
      res.writeHead(302, { location: to });
      return res.end();
    }
    send(res, 200, "text/plain", `secret internal data at ${url.pathname}`);
  });
});
afterAll(() => server.close());

/** A resolver that answers from a table, as a split-horizon or hostile DNS server would. */
function fakeDns(table: Record<string, string[]>): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const lookup = ((hostname: string, options: dns.LookupOptions, callback: any) => {
    calls.push(hostname);
    const answers = table[hostname];
    if (!answers) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = "ENOTFOUND";
      return callback(error);
    }
    const all = answers.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    if (options.all) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  }) as LookupFunction & { calls: string[] };
  lookup.calls = calls;
  return lookup;
}

async function expectBlocked(url: string, reader = new HttpReader(), pattern: RegExp = /refused to fetch/) {
  const error = await Promise.resolve(webFetch(reader).execute({ url }, testContext())).then(
    (out: unknown) => new Error(`expected a block, got: ${String(out).slice(0, 200)}`),
    (e: unknown) => e,
  );
  expect(error, url).toBeInstanceOf(ToolError);
  expect((error as ToolError).message, url).toMatch(pattern);
  expect((error as ToolError).hint).toMatch(/Private and internal network addresses are blocked/);
  return error as ToolError;
}

describe("SSRF guard (on by default)", () => {
  it("blocks literal loopback addresses in every notation", async () => {
    const port = server.port;
    const forms = [
      `http://127.0.0.1:${port}/`,
      `http://127.1:${port}/`, // short form
      `http://2130706433:${port}/`, // decimal
      `http://0177.0.0.1:${port}/`, // octal
      `http://0x7f.0.0.1:${port}/`, // hex
      `http://0x7f000001:${port}/`, // one hex number
      `http://017700000001:${port}/`, // one octal number
      `http://127.0.0.2:${port}/`, // the rest of 127/8
      `http://[::1]:${port}/`, // IPv6 loopback
      `http://[0:0:0:0:0:0:0:1]:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`, // IPv4-mapped IPv6
      `http://[::ffff:7f00:1]:${port}/`,
      `http://[::ffff:0:127.0.0.1]:${port}/`, // SIIT
      `http://[64:ff9b::127.0.0.1]:${port}/`, // NAT64
      `http://[64:ff9b:1::7f00:1]:${port}/`, // local-use NAT64
      `http://[2002:7f00:1::]:${port}/`, // 6to4 carrying 127.0.0.1
      `http://[::127.0.0.1]:${port}/`, // IPv4-compatible (deprecated)
      `http://0.0.0.0:${port}/`,
      `http://0:${port}/`,
      `http://[::]:${port}/`,
    ];
    for (const url of forms) await expectBlocked(url);
    expect(server.requests).toEqual([]); // nothing got through
  });

  it("blocks private, link-local, metadata, CGNAT and other internal ranges", async () => {
    for (const host of [
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "169.254.169.254", // AWS/GCP/Azure metadata
      "100.100.100.200", // Alibaba metadata (CGNAT range)
      "100.64.0.1",
      "168.63.129.16", // Azure wire server
      "192.0.0.192", // Oracle metadata (IETF reserved)
      "198.18.0.1",
      "224.0.0.1",
      "255.255.255.255",
      "240.0.0.1",
      "[fd00:ec2::254]", // AWS IPv6 metadata (unique local)
      "[fe80::1]",
      "[fc00::1]",
      "[ff02::1]",
      "[2001:db8::1]",
      "[::ffff:169.254.169.254]",
      "[::ffff:10.0.0.1]",
      "[64:ff9b::a9fe:a9fe]",
    ]) {
      await expectBlocked(`http://${host}/latest/meta-data/`);
    }
  });

  it("blocks localhost names before any lookup", async () => {
    for (const host of ["localhost", "LOCALHOST", "localhost.", "api.localhost", "foo.bar.localhost"]) {
      await expectBlocked(`http://${host}:${server.port}/`, new HttpReader(), /loopback name/);
    }
  });

  it("blocks DNS names that resolve into private space, checking the address actually used", async () => {
    const lookup = fakeDns({
      "intranet.example.com": ["10.1.2.3"],
      "metadata.example.com": ["169.254.169.254"],
      "looks-public.example.com": ["127.0.0.1"],
      "v6.example.com": ["::1"],
      "mapped.example.com": ["::ffff:127.0.0.1"],
      "mixed.example.com": ["93.184.215.14", "127.0.0.1"],
    });
    const reader = new HttpReader({ lookup });
    const reasons: Record<string, RegExp> = {
      "intranet.example.com": /intranet\.example\.com \(10\.1\.2\.3\) is a private network address/,
      "metadata.example.com": /link-local/,
      "looks-public.example.com": /\(127\.0\.0\.1\) is a loopback address/,
      "v6.example.com": /\(::1\) is a loopback address/,
      "mapped.example.com": /loopback/,
      "mixed.example.com": /\(127\.0\.0\.1\) is a loopback/, // one bad answer is enough
    };
    for (const [host, reason] of Object.entries(reasons)) {
      await expectBlocked(`http://${host}:${server.port}/`, reader, reason);
    }
    expect(lookup.calls).toEqual(expect.arrayContaining(Object.keys(reasons)));
    expect(server.requests).toEqual([]);
  });

  it("closes DNS rebinding: each connection checks the very answer it connects to", async () => {
    // A hostile resolver answers "public" first and "loopback" afterwards. A guard that
    // resolves once to validate and again to connect would validate the first answer and
    // connect to the second. Here the only lookup is the one the socket uses.
    let answers = 0;
    const rebinding: LookupFunction = (_host, options, callback) => {
      const address = answers++ === 0 ? "93.184.215.14" : "127.0.0.1";
      if (options.all) callback(null, [{ address, family: 4 }]);
      else callback(null, address, 4);
    };
    const reader = new HttpReader({ lookup: rebinding, timeoutMs: 1_000, cacheTtlMs: 0 });
    // First connection: the public answer is used as is (and goes nowhere in a sandbox).
    const first = await reader.read(`http://rebind.example.com:${server.port}/`).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ToolError);
    expect(answers).toBe(1);
    // Second connection: the loopback answer is refused before any socket opens.
    await expectBlocked(
      `http://rebind.example.com:${server.port}/`,
      reader,
      /rebind\.example\.com \(127\.0\.0\.1\) is a loopback/,
    );
    expect(answers).toBe(2);
    expect(server.requests).toEqual([]);
  });

  it("blocks a redirect from an allowed host into private space", async () => {
    const reader = new HttpReader({ allowHosts: ["127.0.0.1"] });
    const into = (target: string) => `${server.origin}/redirect?to=${encodeURIComponent(target)}`;
    await expectBlocked(into(`http://localhost:${server.port}/admin`), reader, /loopback name/);
    await expectBlocked(into(`http://[::1]:${server.port}/admin`), reader, /::1 is a loopback address/);
    await expectBlocked(into("http://169.254.169.254/latest/meta-data/"), reader, /link-local/);
    // An opened intranet name does not open the addresses it redirects to.
    const intranet = new HttpReader({
      allowHosts: ["intranet.test"],
      lookup: fakeDns({ "intranet.test": ["127.0.0.1"] }),
    });
    const viaIntranet = `http://intranet.test:${server.port}/redirect?to=${encodeURIComponent(`http://2130706433:${server.port}/admin`)}`;
    await expectBlocked(viaIntranet, intranet, /127\.0\.0\.1 is a loopback/);
    expect(server.requests.filter((r) => r.startsWith("/admin"))).toEqual([]);
  });

  it("allowHosts opens exactly the named hosts, wildcards and ranges", async () => {
    const lookup = fakeDns({
      "wiki.corp": ["127.0.0.1"],
      "docs.wiki.corp": ["127.0.0.1"],
      "other.corp": ["127.0.0.1"],
    });
    const read = (reader: HttpReader, host: string) => reader.read(`http://${host}:${server.port}/page`);

    expect((await read(new HttpReader({ lookup, allowHosts: ["wiki.corp"] }), "wiki.corp")).text).toContain(
      "secret internal data",
    );
    await expectBlocked(
      `http://other.corp:${server.port}/`,
      new HttpReader({ lookup, allowHosts: ["wiki.corp"] }),
    );

    const wildcard = new HttpReader({ lookup, allowHosts: ["*.wiki.corp"] });
    expect((await read(wildcard, "docs.wiki.corp")).status).toBe(200);
    await expectBlocked(`http://other.corp:${server.port}/`, wildcard);

    const range = new HttpReader({ lookup, allowHosts: ["127.0.0.0/8"] });
    expect((await read(range, "other.corp")).status).toBe(200);

    const literal = new HttpReader({ allowHosts: ["127.0.0.1"] });
    expect((await literal.read(`${server.origin}/x`)).status).toBe(200);
    await expectBlocked(`http://[::1]:${server.port}/`, literal);
  });

  it("allowPrivateNetwork opens everything", async () => {
    const reader = new HttpReader({ allowPrivateNetwork: true });
    expect((await reader.read(`http://localhost:${server.port}/open`)).text).toBe(
      "secret internal data at /open",
    );
    expect((await reader.read(`http://2130706433:${server.port}/open`)).status).toBe(200);
  });
});

describe("the connect-time check on its own", () => {
  /** One GET through `agents` straight from node:http: no reader, so none of its pre-checks. */
  const getThrough = (agents: GuardedAgents, url: string) =>
    new Promise<unknown>((resolve) => {
      const target = new URL(url);
      const request = http.get(
        {
          agent: agents.http,
          host: target.hostname.replace(/^\[|\]$/g, ""),
          port: target.port,
          path: target.pathname,
        },
        (res) => {
          res.resume();
          resolve(`answered ${res.statusCode}`);
        },
      );
      request.on("error", resolve);
    });

  it("refuses literal and resolved private addresses even without the reader's pre-checks", async () => {
    const { createGuardedAgents } = await import("../../src/builtin-tools/guarded-agent.js");
    const agents = createGuardedAgents({
      policy: new AddressPolicy(),
      lookup: fakeDns({
        "sneaky.example": ["::ffff:127.0.0.1"],
        localhost: ["127.0.0.1", "::1"],
        "2130706433": ["127.0.0.1"],
      }),
      connectTimeoutMs: 2_000,
    });
    const before = server.requests.length;
    try {
      for (const url of [
        `${server.origin}/`,
        `http://[::ffff:127.0.0.1]:${server.port}/`,
        `http://[::1]:${server.port}/`,
        `http://localhost:${server.port}/`,
        `http://sneaky.example:${server.port}/`,
      ]) {
        expect(await getThrough(agents, url), url).toBeInstanceOf(BlockedAddressError);
      }
      // A host given in a notation WHATWG URL would have normalised goes through the lookup, which checks it.
      const raw = await new Promise<unknown>((resolve) => {
        http
          .get({ agent: agents.http, host: "2130706433", port: server.port, path: "/" }, () =>
            resolve("answered"),
          )
          .on("error", resolve);
      });
      expect(raw).toBeInstanceOf(BlockedAddressError);
      expect(server.requests.length).toBe(before);
    } finally {
      agents.destroy();
    }
  });

  it("opens what the policy allows, and refuses local sockets", async () => {
    const { createGuardedAgents } = await import("../../src/builtin-tools/guarded-agent.js");
    const agents = createGuardedAgents({
      policy: new AddressPolicy({ allowHosts: ["127.0.0.1"] }),
      connectTimeoutMs: 2_000,
    });
    try {
      expect(await getThrough(agents, `${server.origin}/allowed`)).toBe("answered 200");
      const viaSocket = await new Promise<unknown>((resolve) => {
        http
          .get({ agent: agents.http, socketPath: "/tmp/x.sock", path: "/" }, () => resolve("answered"))
          .on("error", resolve);
      });
      expect(String(viaSocket)).toMatch(/not to local sockets/);
    } finally {
      agents.destroy();
    }
  });
});

describe("address classification", () => {
  it("allows public unicast, including NAT64 and 6to4 forms of public IPv4", () => {
    for (const ip of [
      "93.184.215.14",
      "8.8.8.8",
      "2606:4700:4700::1111",
      "64:ff9b::8.8.8.8",
      "2002:808:808::1",
      "::ffff:8.8.8.8",
    ]) {
      expect(blockedRange(ip), ip).toBeUndefined();
    }
  });

  it("names the range it refuses", () => {
    expect(blockedRange("127.0.0.1")).toBe("loopback");
    expect(blockedRange("10.0.0.1")).toBe("private");
    expect(blockedRange("169.254.169.254")).toBe("linkLocal");
    expect(blockedRange("::ffff:192.168.0.1")).toBe("private");
    expect(blockedRange("fd12::1")).toBe("uniqueLocal");
    expect(blockedRange("2001::1")).toBe("teredo");
    expect(blockedRange("not an ip")).toBe("invalid");
  });

  it("policy errors say which host, which address and why", () => {
    const policy = new AddressPolicy();
    expect(() => policy.check("db.internal", "10.0.0.9")).toThrow(BlockedAddressError);
    expect(() => policy.check("db.internal", "10.0.0.9")).toThrow(
      "db.internal (10.0.0.9) is a private network address",
    );
    expect(() => policy.check("example.com", "93.184.215.14")).not.toThrow();
  });
});
