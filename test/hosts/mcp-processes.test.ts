// What a stdio server leaves behind: grandchildren after close(), after the host is killed
// with SIGKILL, and a server that ignores its stdin closing. Also: the SDK is an optional
// peer, and its absence is a clear error.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { RunContext } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { describe, expect, it } from "vitest";
import { alive, gone, hostileServer } from "./servers.js";

const ctx = () =>
  ({ signal: new AbortController().signal, toolCallId: "c", update() {} }) as unknown as RunContext;
const text = (output: unknown) => (output as { content: Array<{ text: string }> }).content[0]?.text;
const root = fileURLToPath(new URL("../..", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/hosts/${name}`, import.meta.url));

/** Runs a fixture script with tsx; resolves with the child and its first stdout line. */
function startScript(name: string, args: string[] = []) {
  const child = spawn(process.execPath, ["--import", "tsx", fixture(name), ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const firstLine = new Promise<string>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`no output from ${name}: ${output}`)), 10_000);
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("\n")) {
        clearTimeout(timer);
        resolve(output.slice(0, output.indexOf("\n")));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(output);
      if (!output) reject(new Error(`${name} exited with ${code}`));
    });
  });
  return { child, firstLine };
}

function kill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

describe("grandchildren", () => {
  it("close() ends a grandchild that ignores SIGTERM", async () => {
    const host = mcpServer(hostileServer());
    const grandchild = Number(text(await host.call("grandchild", {}, ctx())));
    try {
      expect(alive(grandchild)).toBe(true);
      await host.close();
      expect(await gone(grandchild)).toBe(true);
    } finally {
      kill(grandchild);
    }
  });

  it.runIf(process.platform === "linux")(
    "close() ends a grandchild that left the server's process group (setsid)",
    async () => {
      const host = mcpServer(hostileServer());
      const grandchild = Number(text(await host.call("grandchild", { escape: true }, ctx())));
      try {
        expect(alive(grandchild)).toBe(true);
        await host.close();
        expect(await gone(grandchild)).toBe(true);
      } finally {
        kill(grandchild);
      }
    },
  );

  it("a server that crashes leaves no grandchild behind, even one that ignores SIGTERM", async () => {
    const host = mcpServer(hostileServer());
    try {
      const grandchild = Number(text(await host.call("grandchild", {}, ctx())));
      const server = host.pid!;
      try {
        expect(alive(grandchild)).toBe(true);
        process.kill(server, "SIGKILL");
        expect(await gone(server)).toBe(true);
        expect(await gone(grandchild, 4_000)).toBe(true);
      } finally {
        kill(grandchild);
      }
    } finally {
      await host.close();
    }
  });
});

describe("the host killed with SIGKILL", () => {
  for (const flags of [[], ["--ignore-eof"]]) {
    const which = flags.length ? "a server that ignores stdin EOF and SIGTERM" : "a well-behaved server";
    it(`${which} and its grandchild end when the host process is killed outright`, async () => {
      const { child, firstLine } = startScript("killed-host.ts", flags);
      const { serverPid, grandchildPid } = JSON.parse(await firstLine) as {
        serverPid: number;
        grandchildPid: number;
      };
      try {
        expect(alive(serverPid)).toBe(true);
        expect(alive(grandchildPid)).toBe(true);
        child.kill("SIGKILL");
        expect(await gone(serverPid, 4_000)).toBe(true);
        expect(await gone(grandchildPid, 4_000)).toBe(true);
      } finally {
        kill(serverPid);
        kill(grandchildPid);
        child.kill("SIGKILL");
      }
    });
  }
});

describe("the MCP SDK is an optional peer", () => {
  it("without it, importing works and using a server is a UserError naming the install command", async () => {
    const { firstLine } = startScript("no-sdk.ts");
    const report = JSON.parse(await firstLine) as {
      imported: boolean;
      listing: { ok: boolean; name?: string; message?: string };
      run: { ok: boolean; name?: string; message?: string };
    };
    expect(report.imported).toBe(true);
    for (const outcome of [report.listing, report.run]) {
      expect(outcome).toMatchObject({ ok: false, name: "UserError" });
      expect(outcome.message).toContain("npm install @modelcontextprotocol/sdk");
    }
  });
});
