import { UserError } from "../errors.js";
import type { RunContext } from "./context.js";

/** What a permission check concludes for one call. */
export type PermissionDecision =
  | { behavior: "allow" }
  | { behavior: "ask"; reason: string }
  | { behavior: "deny"; reason: string };

/** The facts about a tool that permission rules look at. */
export type PermissionSubject = {
  name: string;
  destructive?: boolean;
  readOnly?: boolean;
  /** A built-in file-edit tool (the workspace's write/edit), auto-approved in "acceptEdits". */
  editTool?: boolean;
};

/** Decides, per call, whether a tool may run, must ask a human, or is refused. */
export interface Permissions {
  check(
    tool: PermissionSubject,
    args: unknown,
    ctx: RunContext,
  ): PermissionDecision | Promise<PermissionDecision>;
  /** Whether the model is shown the tool at all. Tools it would always deny are not offered. */
  offers?(tool: PermissionSubject): boolean;
}

export type PermissionMode = "default" | "acceptEdits" | "bypass";

export type StandardPermissionsOptions = {
  mode?: PermissionMode;
  /** Destructive tools that "acceptEdits" approves without asking (besides the built-in edit tools). */
  editTools?: string[];
  /** When set, only these tools may run; any other call is denied. */
  allowedTools?: string[];
  /** Never offered to the model, and denied if called anyway. */
  deniedTools?: string[];
};

/**
 * The standard permission rules.
 *
 * - `"default"`: destructive tools ask.
 * - `"acceptEdits"`: the `editTools` (and the built-in workspace edit tools) pass; every other
 *   destructive tool — a shell, a delete — still asks.
 * - `"bypass"`: everything passes, except a tool's explicit `needsApproval`. For CI and
 *   sandboxes only.
 *
 * @example
 * new Agent({ name: "coder", tools, permissions: new StandardPermissions({ mode: "acceptEdits", editTools: ["apply_patch"] }) });
 */
export class StandardPermissions implements Permissions {
  readonly mode: PermissionMode;
  readonly #editTools: ReadonlySet<string>;
  readonly #allowed: ReadonlySet<string> | undefined;
  readonly #denied: ReadonlySet<string>;

  constructor(options: StandardPermissionsOptions = {}) {
    const mode = options.mode ?? "default";
    if (!["default", "acceptEdits", "bypass"].includes(mode)) {
      throw new UserError(
        `unknown permission mode ${JSON.stringify(mode)}: use "default", "acceptEdits" or "bypass"`,
      );
    }
    this.mode = mode;
    this.#editTools = new Set(options.editTools ?? []);
    this.#allowed = options.allowedTools ? new Set(options.allowedTools) : undefined;
    this.#denied = new Set(options.deniedTools ?? []);
  }

  offers(tool: PermissionSubject): boolean {
    return !this.#denied.has(tool.name) && (this.#allowed === undefined || this.#allowed.has(tool.name));
  }

  check(tool: PermissionSubject): PermissionDecision {
    if (this.#denied.has(tool.name))
      return { behavior: "deny", reason: `${tool.name} is denied by this agent's permissions` };
    if (this.#allowed && !this.#allowed.has(tool.name)) {
      return { behavior: "deny", reason: `${tool.name} is not among this agent's allowed tools` };
    }
    if (this.mode === "bypass" || !tool.destructive) return { behavior: "allow" };
    if (this.mode === "acceptEdits" && (tool.editTool || this.#editTools.has(tool.name)))
      return { behavior: "allow" };
    return { behavior: "ask", reason: `${tool.name} is destructive` };
  }
}
