// Real MCP servers for the tests: the reference servers from npm (devDependencies) and a tiny
// fixture server of our own, all started with this Node binary (no npx, no network).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import type { McpStdioServer } from "quiver-agents/mcp";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const EVERYTHING = at("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const MEMORY = at("../../node_modules/@modelcontextprotocol/server-memory/dist/index.js");
const FILESYSTEM = at("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
export const FIXTURE = at("../fixtures/hosts/fixture-server.mjs");
export const HOSTILE = at("../fixtures/hosts/hostile-server.mjs");

export const everythingStdio = (): McpStdioServer => ({
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
});
export const memoryServer = (file: string): McpStdioServer => ({
  command: process.execPath,
  args: [MEMORY],
  env: { MEMORY_FILE_PATH: file },
});
export const filesystemServer = (root: string): McpStdioServer => ({
  command: process.execPath,
  args: [FILESYSTEM, root],
});
export const fixtureServer = (): McpStdioServer => ({ command: process.execPath, args: [FIXTURE] });
/** The hostile raw JSON-RPC server; flags as documented at the top of hostile-server.mjs. */
export const hostileServer = (...flags: string[]): McpStdioServer => ({
  command: process.execPath,
  args: [HOSTILE, ...flags],
});

/**
 * Whether a process with this pid runs (signal 0 checks without signalling). A zombie — dead,
 * waiting for its new parent to reap it — does not count.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return process.platform !== "linux";
  }
}

/** Polls until `pid` is gone; false if it is still there after `ms`. */
export async function gone(pid: number, ms = 3_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return !alive(pid);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** server-everything over streamable HTTP on `port`, resolved once it listens. */
export async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${output}`)), 10_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("listening on port")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited with ${code}: ${output}`));
    });
  });
  child.stderr?.resume();
  return child;
}

export async function stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await exited;
}
