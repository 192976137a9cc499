import { spawn } from "node:child_process";
import { cpSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliProjects, quiver, repo } from "./binary.js";

const cli = cliProjects(["chatty-agent.mjs"]);

describe("quiver serve", () => {
  it("serves the agent with the default SQLite store until SIGINT (it then ends by SIGINT: 130 in a shell)", async () => {
    const cwd = cli.project();
    const child = spawn(process.execPath, [cli.bin, "serve", "chatty-agent.mjs#chatty", "--port", "0"], {
      cwd,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
    });
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on("close", (code, signal) => resolve(signal ?? code)),
    );
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed: ${out} ${err}`)), 10_000);
      child.stdout.on("data", (d) => {
        out += d;
        const match = /chat page\s+(http:\/\/[^\s]+)\//.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
    });
    try {
      const page = await fetch(`${url}/`, { signal: AbortSignal.timeout(5_000) });
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      await page.text();
      expect(existsSync(join(cwd, ".quiver/quiver.db"))).toBe(true);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe("SIGINT"); // 130 in a shell
  });

  it("--a2a also serves the agent over A2A: its card names it and the JSON-RPC endpoint", async () => {
    const cwd = cli.project();
    const child = spawn(
      process.execPath,
      [cli.bin, "serve", "chatty-agent.mjs#chatty", "--port", "0", "--a2a"],
      {
        cwd,
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on("close", (code, signal) => resolve(signal ?? code)),
    );
    const card = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no A2A line printed: ${out}`)), 10_000);
      child.stdout.on("data", (d) => {
        out += d;
        const match = /A2A\s+(http:\/\/\S+agent-card\.json)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
    });
    try {
      const response = await fetch(card, { signal: AbortSignal.timeout(5_000) });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { name: string; supportedInterfaces: Array<{ url: string }> };
      expect(body.name).toBe("chatty");
      expect(body.supportedInterfaces[0]!.url).toBe(card.replace("/.well-known/agent-card.json", "/a2a"));
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe("SIGINT"); // 130 in a shell
  });

  it("refuses to listen beyond loopback without --token", async () => {
    const cwd = cli.project();
    const ran = await quiver(
      cli.bin,
      ["serve", "chatty-agent.mjs#chatty", "--port", "0", "--hostname", "0.0.0.0"],
      {
        cwd,
      },
    );
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain("refusing to listen on 0.0.0.0 without a token");
    expect(ran.stderr).toContain("Pass --token <secret> (or set QUIVER_TOKEN)");
  });

  it("rejects a bad --port as a usage error", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["serve", "chatty-agent.mjs#chatty", "--port", "http"], { cwd });
    expect(ran.code).toBe(2);
  });
});

describe("quiver demo and the shipped example", () => {
  it("the demo says it is scripted, shows its calls, and without a terminal the gated write is denied", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["demo"], { cwd, timeoutMs: 20_000 });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain("a ScriptedModel plays a fixed script — it is not a language model");
    expect(ran.stderr).toContain("● build_status()");
    expect(ran.stderr).toMatch(/↻ build_status failed \(the build service answered 503\)/);
    expect(ran.stderr).toContain("cut from");
    expect(ran.stderr).toContain("✗ edit_file denied");
    // What the edit would have done was shown with its approval: the description and the diff.
    expect(ran.stderr).toMatch(/\? edit_file needs approval.*\n {4}Edit \S+: replace 1 occurrence/);
    expect(ran.stderr).toMatch(/\n {4}--- a\/\S+\n {4}\+\+\+ b\/\S+\n {4}@@ /);
    expect(ran.stdout).toContain("the notes were left as they were (not approved)");
  });

  it("examples/agents/hello.mjs runs as shipped", async () => {
    const cwd = cli.project([]);
    cpSync(join(repo, "examples/agents/hello.mjs"), join(cwd, "hello.mjs"));
    const ran = await quiver(cli.bin, ["run", "hello.mjs", "what time is it?"], { cwd });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/^Let me check the clock\.\nDone — \d{4}-\d\d-\d\dT/);
    const hi = await quiver(cli.bin, ["run", "hello.mjs", "hi"], { cwd });
    expect(hi.stdout).toContain("not a language model");
  });
});

describe("the CLI stays out of the library", () => {
  it('import "quiver-agents" never loads the CLI or its prompt packages', async () => {
    const cwd = cli.project([]);
    // A loader hook records every module the import pulls in.
    const script = `
      import { register } from "node:module";
      const seen = [];
      const { port1, port2 } = new MessageChannel();
      port1.on("message", (url) => seen.push(url));
      port1.unref();
      register("data:text/javascript," + encodeURIComponent(\`
        let port;
        export function initialize(data) { port = data.port; }
        export async function resolve(specifier, context, next) {
          const result = await next(specifier, context);
          port.postMessage(result.url);
          return result;
        }\`), { data: { port: port2 }, transferList: [port2] });
      await import("quiver-agents");
      await new Promise((ok) => setTimeout(ok, 50));
      console.log(JSON.stringify(seen));
    `;
    const ran = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
        cwd,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      child.stderr.on("data", (d) => {
        err += d;
      });
      child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(err))));
    });
    const urls: string[] = JSON.parse(ran);
    expect(urls.some((u) => u.endsWith("/dist/index.js"))).toBe(true);
    expect(urls.filter((u) => u.includes("/dist/cli/"))).toEqual([]);
    expect(urls.filter((u) => u.includes("@clack") || u.includes("picocolors"))).toEqual([]);
    expect(readFileSync(join(cli.root, "package.json"), "utf8")).toContain('"quiver": "./dist/cli/main.js"');
  });
});
