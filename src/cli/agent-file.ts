import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UserError } from "../errors.js";
import { FallbackModel } from "../model/fallback.js";
import type { Model } from "../model/types.js";
import { Agent } from "../run/config/agent.js";

const JS = new Set([".js", ".mjs", ".cjs"]);
const TS = new Set([".ts", ".mts", ".cts", ".tsx"]);

/** `path/to/agent.mjs#name` split into the file and the export (default when no `#`). */
export function splitAgentSpec(spec: string): { file: string; exportName: string | undefined } {
  const hash = spec.lastIndexOf("#");
  if (hash <= 0) return { file: spec, exportName: undefined };
  return { file: spec.slice(0, hash), exportName: spec.slice(hash + 1) || undefined };
}

/**
 * Loads the `Agent` an agent file exports: its default export, or the export named after `#`.
 * `.ts` files load through tsx when it is installed. Errors say what to fix.
 *
 * @example
 * const agent = await loadAgentFile("examples/agents/hello.mjs");
 */
export async function loadAgentFile(spec: string): Promise<Agent<any, any>> {
  const { file, exportName } = splitAgentSpec(spec);
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) throw new UserError(`no agent file at ${path}`);
  const ext = extname(path).toLowerCase();
  let module: Record<string, unknown>;
  if (JS.has(ext)) module = await importFile(path);
  else if (TS.has(ext)) module = await importTypeScript(path);
  else
    throw new UserError(
      `${file} is not a .js, .mjs or .ts file: an agent file is a module that exports an Agent`,
    );
  return pickAgent(module, file, path, exportName);
}

async function importFile(path: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw loadFailure(path, error);
  }
}

let tsxRegistered = false;

/**
 * A process started with `--import tsx` loads `.ts` as is; otherwise tsx's `register()` is
 * switched on for the whole process (not `tsImport`'s private namespace), so the agent file
 * shares this process's copy of quiver-agents.
 */
async function importTypeScript(path: string): Promise<Record<string, unknown>> {
  if (!tsxRegistered && !process.execArgv.some((arg) => arg.includes("tsx"))) {
    let api: { register: () => unknown };
    try {
      api = (await import(/* tsx is an optional peer */ "tsx/esm/api" as string)) as typeof api;
    } catch {
      throw new UserError(
        `${path} is TypeScript, and loading it needs tsx: npm i -D tsx (or compile the agent file to .js)`,
      );
    }
    api.register();
    tsxRegistered = true;
  }
  return importFile(path);
}

function loadFailure(path: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const failure = new UserError(`could not load the agent file ${path}: ${message}`);
  if (error instanceof Error && error.stack) failure.stack = `${failure.stack}\nCaused by: ${error.stack}`;
  return failure;
}

function isAgentLike(value: unknown): value is Agent<any, any> {
  if (!value || typeof value !== "object") return false;
  const v = value as Partial<Agent<any, any>>;
  return typeof v.name === "string" && typeof v.config === "object" && typeof v.clone === "function";
}

function pickAgent(
  module: Record<string, unknown>,
  file: string,
  path: string,
  exportName: string | undefined,
): Agent<any, any> {
  const agentExports = Object.keys(module).filter((key) => isAgentLike(module[key]));
  const available = agentExports.length
    ? `; it exports these agents: ${agentExports.map((k) => (k === "default" ? "default" : `#${k}`)).join(", ")}`
    : "; it exports no Agent";
  const key = exportName ?? "default";
  let value = module[key];
  // `export const agent = …` with no default: take the only agent there is.
  if (value === undefined && exportName === undefined && agentExports.length === 1)
    value = module[agentExports[0]!];
  if (value === undefined)
    throw new UserError(
      exportName === undefined
        ? `${file} has no default export${available} (name one with ${file}#name)`
        : `${file} has no export "${exportName}"${available}`,
    );
  if (!isAgentLike(value))
    throw new UserError(
      `${file}${exportName ? `#${exportName}` : ""} is not an Agent (got ${describe(value)})${available}`,
    );
  if (!(value instanceof Agent)) throw foreignCopy(path);
  return value;
}

/**
 * An Agent made by another copy of quiver-agents cannot run here: tools, permissions and
 * errors are recognised by class, and those classes differ between copies.
 */
function foreignCopy(path: string): UserError {
  let theirs = "another copy";
  try {
    theirs = createRequire(path).resolve("quiver-agents");
  } catch {
    // not resolvable the CommonJS way: keep the generic wording
  }
  const ours = new URL("../index.js", import.meta.url).pathname;
  const hint =
    theirs === ours
      ? ' (a tsconfig "paths" entry seems to map quiver-agents to other files: run quiver through tsx, or load a .js agent file)'
      : ": run the quiver installed beside the agent (npx quiver …), so both are one copy";
  return new UserError(
    `${path} uses a different copy of quiver-agents than this quiver command (${ours})${hint}`,
  );
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "function") return `a function${value.name ? ` ${value.name}` : ""}`;
  if (typeof value === "object") return `an object (${value.constructor?.name ?? "Object"})`;
  return typeof value;
}

/**
 * The agent with `--model` (a "provider:id" string resolved by quiver-agents/providers, or a
 * comma-separated fallback chain of them: `openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5`) in
 * place of its own model.
 */
export async function withModel(agent: Agent<any, any>, model: string | undefined): Promise<Agent<any, any>> {
  if (model === undefined) return agent;
  const { resolveModel } = await import("../providers/registry.js");
  const ids = model
    .split(",")
    .map((id) => id.trim())
    .filter(Boolean);
  const resolved: Model[] = ids.map((id) => resolveModel(id));
  if (resolved.length === 0) throw new UserError(`--model needs a provider:id, got ${JSON.stringify(model)}`);
  return agent.clone({ model: resolved.length === 1 ? resolved[0]! : new FallbackModel(resolved) });
}

/** The model an agent will use, as a user would name it. */
export function modelName(agent: Agent<any, any>): string {
  const model = agent.config.model;
  if (model === undefined) return "(none)";
  if (Array.isArray(model)) return model.map((m) => (typeof m === "string" ? m : m.name)).join(", ");
  return typeof model === "string" ? model : (model as { name: string }).name;
}
