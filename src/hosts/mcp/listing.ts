import { createHash } from "node:crypto";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { FENCE_NOTE } from "../../builtin-tools/fence.js";
import { UserError } from "../../errors.js";
import { nestedDeeperThan } from "../../json-depth.js";
import type { JSONSchema } from "../../model/types.js";
import { compileJsonSchema } from "../../tool/ajv.js";
import type { HostedTool, ToolHostChange } from "../tool-host.js";
import { type McpServerOptions, matches } from "./config.js";
import {
  cleanPeerLine,
  cleanPeerText,
  cleanSchemaText,
  MAX_DESCRIPTION_CHARS,
  MAX_TITLE_CHARS,
} from "./peer-text.js";
import { modelFacingName, withHash } from "./tool-names.js";

/**
 * One offered tool: what the runner sees, and the server's own name to call it by. `raw` is a
 * digest of the server's definition, `json` the offered one's text, `outputSchema` the
 * server's schema for its structured results (checked by the host on every call).
 */
export type ListedTool = {
  hosted: HostedTool;
  mcpName: string;
  json: string;
  raw: string;
  outputSchema?: JSONSchema;
};

/**
 * A server's tools as offered, by model-facing name. `problems` says, per tool left out
 * because its definition is broken, why (a message naming the server and the tool).
 */
export type Listing = {
  tools: HostedTool[];
  byName: Map<string, ListedTool>;
  problems: string[];
  /** Entries left out that are no fault of a tool's definition (a name listed twice). */
  notices: string[];
};

/** Checks one entry of a `tools/list` answer against MCP's tool schema (the SDK's). */
export type ToolShapeCheck = (
  entry: unknown,
) => { success: true; data: McpTool } | { success: false; error: { issues: ToolShapeIssue[] } };
type ToolShapeIssue = { path: PropertyKey[]; message: string };

/** Schemas already checked, by their JSON (relisting must not compile them again). */
const checkedSchemas = new Map<string, string | null>();
/** Bounds the cache above: a server that changes its schemas on every listing must not grow it for ever. */
const MAX_CHECKED_SCHEMAS = 1_000;
/** Deepest tool definition read (a JSON Schema rarely nests beyond twenty levels). */
const MAX_DEFINITION_DEPTH = 100;
/** Largest input schema offered to a model (its JSON, in characters). */
const MAX_SCHEMA_CHARS = 64 * 1024;

/**
 * A server's `tools/list` answer → what the runner offers: filtered by `include`/`exclude`,
 * named `prefix__name`, the server's JSON Schema kept (the runner validates arguments with
 * ajv, draft chosen by `$schema`), annotations mapped onto hints when trusted (`trustAnnotations`). Entries whose JSON did not
 * change keep their previous object, so an unchanged listing looks unchanged to the runner.
 */
export function buildListing(
  entries: readonly unknown[],
  options: McpServerOptions,
  server: string,
  check: ToolShapeCheck,
  previous?: Listing,
): Listing {
  const byName = new Map<string, ListedTool>();
  const problems: string[] = [];
  const notices: string[] = [];
  // The answer is read leniently, entry by entry: one broken tool must not make the whole
  // server unusable, and `exclude` must be able to leave it out. An entry without a name
  // cannot be called, nor named in a message: it is skipped.
  const selected: Array<[unknown, string]> = [];
  for (const entry of entries) {
    const mcpName = (entry as { name?: unknown } | null)?.name;
    if (typeof mcpName !== "string") continue;
    if (options.include !== undefined && !matches(options.include, mcpName)) continue;
    if (matches(options.exclude, mcpName)) continue;
    selected.push([entry, mcpName]);
  }
  // Names that become alike once made safe (`a.b`, `a_b`) are told apart by each tool's own
  // name, never by list order: a name must not move to another tool between listings.
  const claimants = new Map<string, Set<string>>();
  for (const [, mcpName] of selected) {
    const base = modelFacingName(mcpName, options.prefix);
    const set = claimants.get(base) ?? new Set<string>();
    set.add(mcpName);
    claimants.set(base, set);
  }
  const seen = new Set<string>();
  for (const [entry, mcpName] of selected) {
    if (seen.has(mcpName)) {
      notices.push(
        `MCP server ${server} lists the tool ${JSON.stringify(cleanPeerLine(mcpName, 128))} more than once; only the first is offered`,
      );
      continue;
    }
    seen.add(mcpName);
    if (nestedDeeperThan(entry, MAX_DEFINITION_DEPTH)) {
      problems.push(
        refusal(server, mcpName, `a definition nested more than ${MAX_DEFINITION_DEPTH} levels deep`),
      );
      continue;
    }
    const parsed = check(entry);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.map(String).join(".") || "tool"}: ${issue.message}`)
        .join("; ");
      problems.push(refusal(server, mcpName, `an invalid definition (${cleanPeerLine(issues, 500)})`));
      continue;
    }
    const tool = parsed.data;
    // Such a tool answers plain tools/call with an error: offering it would only fail.
    if (tool.execution?.taskSupport === "required") continue;
    let name = modelFacingName(tool.name, options.prefix);
    const exact = options.prefix ? `${options.prefix}__${tool.name}` : tool.name;
    if ((claimants.get(name)?.size ?? 0) > 1 && name !== exact) name = withHash(name, tool.name);
    if (byName.has(name)) {
      notices.push(`MCP server ${server}: two tools would be named ${name}; only the first is offered`);
      continue;
    }
    // A tool the server describes exactly as before is not cleaned and checked again (a
    // digest, not the text: a server's JSON may be megabytes, and the listing lives long).
    const raw = createHash("sha256").update(JSON.stringify(tool)).digest("base64");
    const kept = previous?.byName.get(name);
    if (kept && kept.raw === raw) {
      byName.set(name, kept);
      continue;
    }
    let hosted: HostedTool;
    try {
      hosted = toHostedTool(tool, name, options, server);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      problems.push(error.message);
      continue;
    }
    const json = JSON.stringify(hosted);
    const listed: ListedTool = { hosted, mcpName: tool.name, json, raw };
    // A copy, without `$id` (ajv registers a schema under it: the next listing would clash).
    if (tool.outputSchema) {
      const { $id: _id, ...schema } = JSON.parse(JSON.stringify(tool.outputSchema)) as JSONSchema;
      listed.outputSchema = schema;
    }
    byName.set(
      name,
      kept && kept.json === json && kept.mcpName === tool.name ? { ...listed, hosted: kept.hosted } : listed,
    );
  }
  return { tools: [...byName.values()].map((t) => t.hosted), byName, problems, notices };
}

/** A tool left out for a broken definition: what to do about it is `exclude`. */
function refusal(server: string, mcpName: string, what: string): string {
  // For the developer, not the model: the exact name (escaped) is what `exclude` needs.
  const name = JSON.stringify(mcpName.slice(0, 128));
  return `MCP server ${server}: tool ${name} has ${what}; leave it out with exclude: [${name}]`;
}

/** What changed between two listings, as watch events. */
export function diffListings(before: Listing, after: Listing): ToolHostChange[] {
  const changes: ToolHostChange[] = [];
  for (const [name, tool] of after.byName) {
    const old = before.byName.get(name);
    if (!old) changes.push({ kind: "added", name });
    else if (old.json !== tool.json) changes.push({ kind: "updated", name });
  }
  for (const name of before.byName.keys())
    if (!after.byName.has(name)) changes.push({ kind: "removed", name });
  return changes;
}

function toHostedTool(tool: McpTool, name: string, options: McpServerOptions, server: string): HostedTool {
  // The MCP spec: annotations are untrusted unless the server is. Untrusted, a tool is what
  // MCP's defaults say of a tool without annotations: destructive, not idempotent — a server
  // claiming `readOnlyHint` must not skip an approval or be sent a call twice.
  const annotations = trusts(options.trustAnnotations, tool.name) ? (tool.annotations ?? {}) : {};
  // MCP's defaults: readOnlyHint false, destructiveHint true, idempotentHint false. A
  // destructive hint means nothing on a read-only tool.
  const readOnly = annotations.readOnlyHint === true;
  const hosted: HostedTool = {
    name,
    description: describe(tool, options),
    parameters: parametersOf(tool, server),
    readOnly,
    destructive: !readOnly && annotations.destructiveHint !== false,
    idempotent: annotations.idempotentHint === true,
    untrustedOutput: options.untrustedOutput ?? true,
  };
  // A description is the server's text too: it can talk the model into a call as a result can.
  if ((options.untrustedOutput ?? true) && !trusts(options.trustAnnotations, tool.name))
    hosted.untrustedDescription = true;
  const label = tool.title ?? annotations.title;
  if (label) hosted.label = cleanPeerLine(label, MAX_TITLE_CHARS);
  const needsApproval = approvalFor(tool.name, options.needsApproval);
  if (needsApproval !== undefined) hosted.needsApproval = needsApproval;
  return hosted;
}

function trusts(setting: McpServerOptions["trustAnnotations"], mcpName: string): boolean {
  return typeof setting === "boolean" ? setting : matches(setting, mcpName);
}

/**
 * The server's description, cleaned and bounded: it is not fenced (it is the tool's own
 * definition), so nothing in it may pass for framing or a chat-template token.
 */
function describe(tool: McpTool, options: McpServerOptions): string {
  const text = cleanPeerText(tool.description ?? tool.title ?? "", MAX_DESCRIPTION_CHARS);
  return options.fence ? (text ? `${text}\n\n${FENCE_NOTE}` : FENCE_NOTE) : text;
}

function approvalFor(
  mcpName: string,
  setting: McpServerOptions["needsApproval"],
): HostedTool["needsApproval"] {
  if (setting === true) return true;
  if (Array.isArray(setting)) return setting.includes(mcpName) ? true : undefined;
  if (typeof setting === "function") {
    const predicate = setting;
    return (args: Record<string, unknown>, ctx) => predicate(mcpName, args, ctx);
  }
  return undefined;
}

function parametersOf(tool: McpTool, server: string): JSONSchema {
  const original = JSON.stringify(tool.inputSchema ?? {});
  let schema: JSONSchema = {};
  let problem: string | null | undefined =
    original.length > MAX_SCHEMA_CHARS
      ? `it is ${original.length} characters long, more than ${MAX_SCHEMA_CHARS}`
      : undefined;
  if (problem === undefined) {
    try {
      // A copy with its prose cleaned: the listing must not share objects with the SDK's
      // cached response, and a model reads every description in it.
      const { $id: _id, ...rest } = cleanSchemaText(JSON.parse(original)) as JSONSchema;
      schema = rest;
    } catch (error) {
      problem = (error as Error).message;
    }
  }
  // ajv registers a schema under its `$id`, so the second listing of the same tool would
  // clash with the first: the id means nothing to a model, it is dropped.
  const json = JSON.stringify(schema);
  problem ??= checkedSchemas.get(json);
  if (problem === undefined) {
    try {
      if (schema.type !== undefined && schema.type !== "object") {
        throw new Error(`it describes ${JSON.stringify(schema.type)}, not an object`);
      }
      compileJsonSchema({ type: "object", properties: {}, ...schema });
      problem = null;
    } catch (error) {
      problem = (error as Error).message;
    }
    if (checkedSchemas.size >= MAX_CHECKED_SCHEMAS) checkedSchemas.clear();
    checkedSchemas.set(json, problem);
  }
  if (problem !== null)
    throw new UserError(refusal(server, tool.name, `an invalid input schema (${problem})`));
  return schema;
}
