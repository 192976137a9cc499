import path from "node:path";
import { UserError } from "../errors.js";
import { type Plugin, plugin } from "../run/config/plugin.js";
import type { Tool } from "../tool/tool.js";
import { editFileTool, writeFileTool } from "./edit-tools.js";
import { FileEditor } from "./file-edits.js";
import { grepFilesTool } from "./grep-files.js";
import { ReadLedger } from "./ledger.js";
import { listFilesTool } from "./list-files.js";
import { ProtectedPaths } from "./protected-paths.js";
import { MAX_READ_CHARS, MAX_READ_LINES, readFileTool } from "./read-file.js";
import { type ShellExecutor, type ShellOptions, shellTool } from "./shell.js";

export type WorkspaceOptions = {
  /** The directory the tools work in. Every path the model gives resolves inside it. */
  root: string;
  /** Adds the `shell` tool: `true` for the defaults, or its settings. Off by default. */
  shell?: boolean | ShellOptions;
  /** How `shell` starts a command (wrap it in bubblewrap, a container…). Default: `bash -c`. */
  executor?: ShellExecutor;
  /** Only `read_file`, `list_files` and `grep_files`: no writes, no edits, no shell. */
  readOnly?: boolean;
  /**
   * Files that `write_file` / `edit_file` never change without a person's approval, even in
   * `acceptEdits`: globs relative to the root (see `PROTECTED_PATHS`). Replaces the default
   * list: extend it with `[...PROTECTED_PATHS, "scripts/**"]`; `[]` protects nothing.
   */
  protectedPaths?: readonly string[];
};

/** What `workspace()` returns: the tools and the instructions that explain them to the model. */
export type Workspace = {
  /** The root as an absolute path. */
  readonly root: string;
  /** `read_file`, `list_files`, `grep_files`, then `write_file`, `edit_file` and (when enabled) `shell`. */
  readonly tools: Tool[];
  /** A system-prompt fragment: where the workspace is and how its tools behave. */
  readonly instructions: string;
  /**
   * The same tools and instructions as one plugin named "workspace", for `new Agent({ plugins })`.
   *
   * @example
   * const agent = new Agent({ name: "coder", model, plugins: [workspace({ root: "." }).plugin] });
   */
  readonly plugin: Plugin;
};

/**
 * File and shell tools rooted in one directory.
 *
 * Paths that lead out of the root (`..`, absolute paths elsewhere, symbolic links, dangling ones
 * too) are refused; an existing file is written or edited only after this run read it and only
 * while its content is what the run saw; writes are atomic. Files that decide what commands run
 * (`protectedPaths`: `.git/`, package manifests, Makefiles…) always ask before a write, even in
 * `acceptEdits`. This guards against a model's
 * accidents — it is not a sandbox (a shell command can do anything the user can): run untrusted
 * work in a container, or give `executor` a sandboxing wrapper.
 *
 * @example
 * const ws = workspace({ root: "./project", shell: { allow: ["npm test", "git status"], deny: ["git push"] } });
 * const agent = new Agent({ name: "coder", model, tools: ws.tools, instructions: ["You fix bugs.", ws.instructions] });
 */
export function workspace(options: WorkspaceOptions): Workspace {
  if (!options || typeof options.root !== "string" || options.root.trim() === "") {
    throw new UserError('workspace() needs a root directory: workspace({ root: "./project" })');
  }
  const root = path.resolve(options.root);
  const protectedPaths = new ProtectedPaths(root, options.protectedPaths);
  const ledger = new ReadLedger();
  const tools: Tool[] = [readFileTool(root, ledger), listFilesTool(root), grepFilesTool(root)];
  const shellOptions = options.shell === true ? {} : options.shell || undefined;
  if (!options.readOnly) {
    const editor = new FileEditor(root, ledger, protectedPaths);
    tools.push(writeFileTool(editor), editFileTool(editor));
    if (shellOptions) tools.push(shellTool(root, shellOptions, options.executor, protectedPaths));
  } else if (shellOptions) {
    throw new UserError("workspace({ readOnly: true }) cannot have a shell: a shell can write anything");
  }
  const instructions = instructionsFor(
    root,
    options.readOnly ?? false,
    shellOptions !== undefined,
    protectedPaths.size > 0,
  );
  return { root, tools, instructions, plugin: plugin({ name: "workspace", tools, instructions }) };
}

function instructionsFor(root: string, readOnly: boolean, shell: boolean, protectedFiles: boolean): string {
  const lines = [
    `You work in the directory ${root} (the workspace). Give paths relative to it; paths that lead outside it are refused.`,
    `read_file shows numbered lines (at most ${MAX_READ_LINES.toLocaleString("en-US")} lines or ${MAX_READ_CHARS.toLocaleString("en-US")} characters a call; the notice at the end names the offset to continue from). list_files and grep_files skip files ignored by .gitignore, .git and node_modules.`,
  ];
  if (!readOnly) {
    lines.push(
      "Read a file with read_file before you change it; if it changed since, read it again. Prefer edit_file (exact text, copied without the line-number prefix) to rewriting a whole file with write_file.",
    );
    if (protectedFiles) {
      lines.push(
        "Changing a file that decides what commands run (.git/, package manifests, Makefiles, linter, task and editor settings) needs a person's approval: do it only when the task needs it.",
      );
    }
  }
  if (shell) {
    lines.push(
      "shell runs bash in the workspace root with stdin closed; each call starts fresh there, and background processes are stopped when the command ends. Use it for builds, tests and git, not to read or edit files.",
    );
  }
  return lines.join("\n");
}
