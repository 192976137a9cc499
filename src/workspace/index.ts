// The public surface of "quiver-agents/workspace": re-exports only.
export { type GrepMatch, type GrepOptions, type GrepOutcome, grepFiles } from "./grep-files.js";
export { PROTECTED_PATHS } from "./protected-paths.js";
export {
  DEFAULT_SHELL_OUTPUT_CHARS,
  DEFAULT_SHELL_TIMEOUT_MS,
  MAX_SHELL_TIMEOUT_MS,
  type ShellExecutor,
  type ShellOptions,
} from "./shell.js";
export { type Workspace, type WorkspaceOptions, workspace } from "./workspace.js";
