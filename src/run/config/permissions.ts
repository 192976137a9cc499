import type { PermissionDecision, PermissionSubject, Permissions } from "../../contract/permissions.js";
import { UserError } from "../../errors.js";

/** `"default"`: destructive tools ask; `"acceptEdits"`: edit tools pass too; `"bypass"`: nothing asks (CI and sandboxes only). */
export type PermissionMode = "default" | "acceptEdits" | "bypass";

/** What `new StandardPermissions()` takes. */
export type StandardPermissionsOptions = {
  /** Default `"default"`. */
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
 * - `"acceptEdits"`: the `editTools` (and the built-in workspace edit tools) pass, unless the
 *   tool's own rule asks (the workspace's protected paths); every other destructive tool — a
 *   shell, a delete — still asks.
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

  check(tool: PermissionSubject, args?: unknown): PermissionDecision {
    if (this.#denied.has(tool.name))
      return { behavior: "deny", reason: `${tool.name} is denied by this agent's permissions` };
    if (this.#allowed && !this.#allowed.has(tool.name)) {
      return { behavior: "deny", reason: `${tool.name} is not among this agent's allowed tools` };
    }
    // A tool's own rule: its "deny" holds in every mode (bypass too); its "allow" stands in for
    // the human a destructive call would otherwise ask; its "ask" refines the reason, and keeps
    // acceptEdits from passing an edit (a protected path such as .git/config).
    const ruled = tool.rule?.(args);
    if (ruled?.behavior === "deny") return ruled;
    if (this.mode === "bypass" || !tool.destructive) return { behavior: "allow" };
    if (ruled?.behavior === "allow") return ruled;
    if (
      this.mode === "acceptEdits" &&
      (tool.editTool || this.#editTools.has(tool.name)) &&
      ruled?.behavior !== "ask"
    )
      return { behavior: "allow" };
    return ruled ?? { behavior: "ask", reason: `${tool.name} is destructive` };
  }
}
