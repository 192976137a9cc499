import type { RunContext } from "./run-context.js";

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
  /** A file-edit tool (`editsFiles`: the workspace's write/edit), auto-approved in "acceptEdits". */
  editTool?: boolean;
  /**
   * The tool's own verdict on this call's arguments (its `permissionRule`: the workspace shell's
   * `allow` / `deny` command prefixes, the edit tools' protected paths). `undefined` leaves the
   * decision to the mode.
   */
  rule?: (args: unknown) => PermissionDecision | undefined;
};

/** What an approval prompt shows about a call besides the reason: a line, and, e.g., a diff. */
export type CallDescription = { description: string; details?: unknown };

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
