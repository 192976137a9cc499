import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "./usage.js";

type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

/** Options every command that runs an agent understands. */
export const AGENT_OPTIONS = {
  store: { type: "string" },
  model: { type: "string" },
  mode: { type: "string" },
  session: { type: "string" },
  json: { type: "boolean" },
  "show-reasoning": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpec;

/** `--file path`, repeatable: files that go with the message (`quiver run`, `quiver chat`). */
export const FILE_OPTION = { file: { type: "string", multiple: true } } as const satisfies OptionSpec;

export type Parsed = {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
};

/**
 * Parses a command's arguments strictly: an unknown option or a missing value is a
 * `UsageError` carrying the command's help.
 */
export function parseCommand(args: string[], options: OptionSpec, help: string): Parsed {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Parsed["values"], positionals };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), help);
  }
}

/** A string option's value, if given. */
export function text(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** Every value of a repeatable string option, in the order given. */
export function texts(parsed: Parsed, name: string): string[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

export function flag(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

const MODES = ["default", "acceptEdits", "bypass"] as const;
export type ModeName = (typeof MODES)[number];

/** The `--mode` value, checked. */
export function modeOption(parsed: Parsed, help: string): ModeName | undefined {
  const mode = text(parsed, "mode");
  if (mode === undefined) return undefined;
  if (!(MODES as readonly string[]).includes(mode))
    throw new UsageError(`--mode must be one of ${MODES.join(", ")}, got "${mode}"`, help);
  return mode as ModeName;
}
