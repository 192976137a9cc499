import { type ChildProcess, spawn } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { UserError } from "../../errors.js";
import {
  descendants,
  exited,
  type GroupWatch,
  killDescendants,
  reapOnExit,
  release,
  signalTree,
  watchGroup,
} from "./child-reaper.js";
import type { McpStdioServer } from "./config.js";
import { NotDelivered } from "./delivery.js";
import { LineFraming } from "./line-framing.js";
import { coalesceListChanged, isListChanged } from "./notice-coalescing.js";
import { oversizeResponse, oversizeTarget } from "./oversize.js";
import type { loadStdio } from "./sdk.js";

type StdioSdk = Awaited<ReturnType<typeof loadStdio>>;

/** How long a server gets to exit after its stdin closes, and again after SIGTERM. */
const EXIT_GRACE_MS = 500;
/** How much of the server's stderr is kept for error messages. */
const STDERR_TAIL_CHARS = 2_000;

/**
 * The stdio transport for one server process, used instead of the SDK's for four reasons:
 * the server runs in its own process group, watched by a process of its own (see
 * `watchGroup`), so `close()`, this process exiting, or this process being killed also ends
 * what the server or a wrapper like `npx` started; a write to a dead process fails with
 * `NotDelivered`, which is what makes a retry provably safe; the last lines of stderr explain a
 * crash; and each message is bounded (`maxResultBytes`): a larger one is skipped unread and
 * its request answered with an oversize error, the stream staying in step. Message parsing
 * is the SDK's own.
 *
 * While no request is waiting for an answer the child and its pipes are unref'd, so a script
 * that forgets `close()` still exits (and the exit hook ends the server); while one is
 * waiting they hold the event loop open, so `await host.call(…)` is never cut short.
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #params: McpStdioServer;
  readonly #sdk: StdioSdk;
  readonly #framing: LineFraming;
  readonly #awaiting = new Set<string | number>();
  /** Every message goes through here, in order (see coalesceListChanged). */
  readonly #receive = coalesceListChanged<JSONRPCMessage, never>((message) => this.#deliver(message));
  #child: ChildProcess | undefined;
  #watch: GroupWatch | undefined;
  #stderrTail = "";
  #exit: string | undefined;

  constructor(params: McpStdioServer, sdk: StdioSdk, maxMessageBytes: number) {
    this.#params = params;
    this.#sdk = sdk;
    this.#framing = new LineFraming(maxMessageBytes, {
      line: (text) => this.#line(text),
      oversize: (head, tail, bytes) => {
        const id = oversizeTarget(head, tail, this.#awaiting);
        if (id !== undefined) this.#receive(oversizeResponse(id, bytes, maxMessageBytes));
        else this.onerror?.(new Error(`dropped a message of ${bytes} bytes, more than ${maxMessageBytes}`));
      },
    });
  }

  /** The server process id while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** How the process ended (`exited with code 1`), once it has. */
  get exitDescription(): string | undefined {
    return this.#exit;
  }

  /** The last lines the server wrote to stderr (with `stderr: "pipe"`). */
  get stderrTail(): string {
    return this.#stderrTail.trim();
  }

  start(): Promise<void> {
    const { command, args = [], env, cwd, stderr = "pipe" } = this.#params;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        env: { ...this.#sdk.getDefaultEnvironment(), ...env },
        cwd,
        stdio: ["pipe", "pipe", stderr],
        detached: process.platform !== "win32",
        windowsHide: true,
      });
      this.#child = child;
      let spawned = false;
      // `on`, not `once`: a second "error" event without a listener would crash the process.
      child.on("error", (error: NodeJS.ErrnoException) => {
        if (spawned) return this.onerror?.(error);
        this.#child = undefined;
        reject(
          error.code === "ENOENT"
            ? new UserError(
                `could not start MCP server: command "${command}" was not found (is it installed and on PATH?)` +
                  (cwd ? `, or its cwd "${cwd}" does not exist` : ""),
              )
            : new Error(`could not start MCP server "${command}": ${error.message}`, { cause: error }),
        );
      });
      child.once("spawn", () => {
        spawned = true;
        reapOnExit(child);
        this.#watch = watchGroup(child);
        this.#hold();
        resolve();
      });
      // The leader is gone: end whatever it left behind in its group.
      child.once("exit", (code, signal) => {
        this.#exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        signalTree(child, "SIGTERM");
      });
      child.once("close", () => {
        release(child);
        // Whatever is left in the group gets SIGTERM, then SIGKILL a second later.
        this.#watch?.end();
        if (this.#child === child) this.#child = undefined;
        this.#awaiting.clear();
        this.#framing.clear();
        this.onclose?.();
      });
      for (const stream of [child.stdin, child.stdout, child.stderr]) {
        stream?.on("error", (error) => this.onerror?.(error));
      }
      child.stdout?.on("data", (chunk: Buffer) => this.#framing.push(chunk));
      child.stderr?.on("data", (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin?.writable || this.#exit !== undefined) {
      return Promise.reject(new NotDelivered(`the MCP server process ${this.#exit ?? "is not running"}`));
    }
    if ("method" in message && "id" in message) {
      this.#awaiting.add(message.id);
      this.#hold();
    } else if ("method" in message && message.method === "notifications/cancelled") {
      // A request given up on (timeout, abort) is answered by nothing any more.
      const id = (message.params as { requestId?: string | number } | undefined)?.requestId;
      if (id !== undefined && this.#awaiting.delete(id)) this.#hold();
    }
    return new Promise((resolve, reject) => {
      stdin.write(this.#sdk.serializeMessage(message), (error) => {
        // A failed write to a pipe (EPIPE) means the reader end is closed: nothing was read.
        if (error) reject(new NotDelivered(`could not write to the MCP server process: ${error.message}`));
        else resolve();
      });
    });
  }

  async close(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    // Taken while the server still runs: what it started outside its group (a `setsid`,
    // a detached spawn) can only be traced to it now.
    const below = child.pid === undefined ? [] : descendants(child.pid);
    // The MCP shutdown sequence for stdio: close stdin, wait, SIGTERM, wait, SIGKILL.
    child.stdin?.end();
    if (!(await exited(child, EXIT_GRACE_MS))) {
      signalTree(child, "SIGTERM");
      if (!(await exited(child, EXIT_GRACE_MS))) {
        signalTree(child, "SIGKILL");
        await exited(child, EXIT_GRACE_MS);
      }
    }
    signalTree(child, "SIGKILL");
    killDescendants(below);
    this.#watch?.end();
  }

  #line(text: string): void {
    // A change notification is tiny and carries nothing: recognised cheaply, and folded
    // with its repeats before any schema validation runs (see coalesceListChanged).
    if (text.length < 512 && text.includes("list_changed")) {
      try {
        const parsed = JSON.parse(text) as unknown;
        if (isListChanged(parsed)) {
          this.#receive(parsed as JSONRPCMessage);
          return;
        }
      } catch {
        // Not JSON: reported below.
      }
    }
    let message: JSONRPCMessage;
    try {
      message = this.#sdk.deserializeMessage(text);
    } catch (error) {
      // A line that is not JSON-RPC (a server logging to stdout by mistake): skip it.
      this.onerror?.(error as Error);
      return;
    }
    this.#receive(message);
  }

  #deliver(message: JSONRPCMessage): void {
    if (
      !("method" in message) &&
      "id" in message &&
      message.id !== undefined &&
      this.#awaiting.delete(message.id)
    ) {
      this.#hold();
    }
    this.onmessage?.(message);
  }

  /** Keeps the event loop alive only while an answer is awaited (see the class comment). */
  #hold(): void {
    const child = this.#child;
    if (!child) return;
    const streams = [child.stdout, child.stdin, child.stderr] as Array<{
      ref?(): void;
      unref?(): void;
    } | null>;
    if (this.#awaiting.size > 0) {
      child.ref();
      for (const s of streams) s?.ref?.();
    } else {
      child.unref();
      for (const s of streams) s?.unref?.();
    }
  }
}
