import type { RunContext } from "../contract/run-context.js";
import type { ToolSpec } from "../model/types.js";
import type { ToolOptions } from "../tool/types.js";

/** A tool as a host lists it: its spec plus the hints the runner schedules and guards it by. */
export type HostedTool = ToolSpec &
  Partial<
    Pick<
      ToolOptions,
      | "parallel"
      | "destructive"
      | "readOnly"
      | "idempotent"
      | "untrustedOutput"
      | "needsApproval"
      | "timeoutMs"
      | "label"
    >
  > & {
    /**
     * Its description and schema were written by a peer you do not control (an MCP server you
     * did not vet): the model reads them with every request, so offering the tool taints the run.
     */
    untrustedDescription?: boolean;
  };

/** A change a host reports through `watch()`. */
export type ToolHostChange = { kind: "added" | "removed" | "updated"; name: string };

/**
 * Where tools come from when they are not plain `tool()`s: an MCP server, a registry, a plugin.
 * The runner lists a host's tools at run start (and again when `watch` reports a change, or
 * before every model request when there is no `watch`), validates arguments against the
 * listed schema, and calls `call` with what a local `execute` would get.
 *
 * @example
 * const host: ToolHost = { listTools: async () => [spec], call: async (name, args, ctx) => "ok" };
 */
export interface ToolHost {
  /**
   * The tools on offer now; names must be unique across the agent's tools and hosts. When the
   * runner lists a host again mid-run it passes `warn`: a host may then leave out a tool it
   * cannot offer (a broken definition) and say why there, instead of failing the listing.
   */
  listTools(signal?: AbortSignal, warn?: (message: string) => void): Promise<HostedTool[]>;
  /** Returns what a local `execute` returns: a string, `{ content, details? }`, or any JSON value. */
  call(name: string, args: unknown, ctx: RunContext): Promise<unknown>;
  /** Reports changes, so a run lists the host again before its next model request. Without it, before every one. */
  watch?(signal?: AbortSignal): AsyncIterable<ToolHostChange>;
}

/** True when `value` is a `ToolHost` rather than a tool. */
export function isToolHost(value: unknown): value is ToolHost {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as ToolHost).listTools === "function" &&
    typeof (value as ToolHost).call === "function"
  );
}
