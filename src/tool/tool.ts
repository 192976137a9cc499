import { assertGuardrails } from "../contract/guardrails.js";
import type { RunContext } from "../contract/run-context.js";
import { UserError } from "../errors.js";
import type { JSONSchema, ToolSpec } from "../model/types.js";
import { assertWholeNumbers, type WholeNumberRule } from "../whole-number.js";
import { coerce } from "./coerce.js";
import {
  type InferArgs,
  type ParameterSchema,
  type ToolParameters,
  toParameterSchema,
  type Validation,
} from "./parameters.js";
import { nullsToAbsent, toStrict } from "./strict.js";
import type { ToolOptions } from "./types.js";

const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** Names a function gets by accident (`execute: async () => …`, `fn.bind`), never a tool name. */
const ACCIDENTAL_NAMES = new Set(["", "execute", "anonymous", "fn", "default"]);

/** What the `Tool` constructor takes: identity, parameters and options. */
export interface ToolConfig<P extends ToolParameters = ToolParameters> extends ToolOptions<InferArgs<P>> {
  /** What the model calls it: `^[a-zA-Z0-9_-]{1,64}$`, unique among the agent's tools. */
  name: string;
  /** The model's only guidance on when to call the tool: write it for the model. Default "". */
  description?: string;
  /** The arguments' schema: Zod 4, any Standard Schema with JSON Schema, `jsonSchema<T>()`, or a bare JSON Schema. */
  parameters: P;
}

/**
 * A tool the model can call. Use `tool({...})` for a function, or extend `Tool` for a class
 * with state, overriding `execute` (and optionally `prepareArguments` or `toSpec`).
 *
 * @example
 * class Weather extends Tool<{ city: string }> {
 *   constructor() {
 *     super({ name: "get_weather", label: "Get Weather", description: "Weather for a city.",
 *       parameters: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }) });
 *   }
 *   override async execute({ city }: { city: string }) { return `18C and sunny in ${city}`; }
 * }
 */
export class Tool<Args = any, Deps = any> implements ToolOptions<Args> {
  /** What the model calls it. */
  readonly name: string;
  /** What the model reads about when to call it ("" when none was given). */
  readonly description: string;
  /** The JSON Schema the model sees (the strict form when `strict` took effect). */
  readonly parameters: JSONSchema;
  /** Whether the tool is sent in strict mode. False when `strict` was asked for but the schema cannot be strict. */
  readonly strict?: boolean;
  /** Why a `strict: true` tool is sent non-strict (reported once per run as a `warning` event). */
  readonly strictWarning?: string;
  readonly label?: string;
  /** `false`: the call is a barrier (in-flight calls finish first, it runs alone). */
  readonly parallel: boolean;
  readonly retries?: number;
  readonly retryBackoff?: NonNullable<ToolOptions["retryBackoff"]>;
  readonly timeoutMs?: number;
  readonly maxOutputChars?: number;
  readonly resultRenderer?: NonNullable<ToolOptions["resultRenderer"]>;
  readonly needsApproval?: NonNullable<ToolOptions<Args>["needsApproval"]>;
  readonly policies?: NonNullable<ToolOptions<Args>["policies"]>;
  readonly destructive?: boolean;
  readonly readOnly?: boolean;
  readonly idempotent?: boolean;
  readonly untrustedOutput?: boolean;
  readonly endsTurn?: boolean;
  readonly isolate?: NonNullable<ToolOptions["isolate"]>;
  readonly concurrency?: number;
  readonly guardrails?: NonNullable<ToolOptions["guardrails"]>;
  readonly permissionRule?: NonNullable<ToolOptions<Args>["permissionRule"]>;
  readonly describeCall?: NonNullable<ToolOptions<Args>["describeCall"]>;
  readonly editsFiles?: boolean;
  readonly #schema: ParameterSchema;

  constructor(config: ToolConfig<any>) {
    assertToolName(config.name);
    this.name = config.name;
    this.description = config.description ?? "";
    this.#schema = toParameterSchema(config.parameters, config.name);
    assertGuardrails(config.guardrails, `tool "${config.name}"`);
    assertWholeNumbers(config, "tool", config.name, TOOL_LIMITS);
    const { name: _n, description: _d, parameters: _p, ...options } = config;
    Object.assign(this, stripUndefined(options));
    this.parallel = config.parallel ?? true;
    if (config.strict) {
      const strict = toStrict(this.#schema.jsonSchema);
      if (strict.ok) {
        this.parameters = strict.schema;
        this.strict = true;
      } else {
        this.parameters = this.#schema.jsonSchema;
        this.strict = false;
        this.strictWarning = `tool "${config.name}" is sent non-strict: ${strict.reason}`;
      }
    } else {
      this.parameters = this.#schema.jsonSchema;
      if (config.strict === false) this.strict = false;
    }
  }

  /**
   * The source text of the body, for `isolate: "worker"`. A `tool()` function's own source;
   * a subclass's `execute` method otherwise.
   */
  get executeSource(): string {
    return this.execute.toString();
  }

  /** The tool's body. `args` are validated; `ctx` is the live run context. */
  execute(_args: Args, _ctx: RunContext<Deps>): unknown {
    throw new UserError(`tool "${this.name}" does not implement execute()`);
  }

  /** Reshapes raw model arguments before validation (e.g. a bare string into `{ query }`). */
  prepareArguments(raw: unknown): unknown {
    return raw;
  }

  /** What the model sees of this tool. */
  toSpec(): ToolSpec {
    const spec: ToolSpec = { name: this.name, description: this.description, parameters: this.parameters };
    if (this.strict !== undefined) spec.strict = this.strict;
    return spec;
  }

  /**
   * Raw model arguments → validated arguments: `prepareArguments`, an object check, strict-mode
   * nulls back to "absent", conservative coercion, then validation.
   */
  parseArguments(raw: unknown): Validation | Promise<Validation> {
    let prepared: unknown;
    try {
      prepared = this.prepareArguments(raw);
    } catch (error) {
      return {
        ok: false,
        issues: [{ path: "", message: `could not be prepared: ${(error as Error).message}` }],
      };
    }
    return this.validateArguments(prepared);
  }

  /** Validation without `prepareArguments`; used again when a policy passes changed arguments. */
  validateArguments(args: unknown): Validation | Promise<Validation> {
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      const got = args === null ? "null" : Array.isArray(args) ? "an array" : typeof args;
      return { ok: false, issues: [{ path: "", message: `arguments must be a JSON object, got ${got}` }] };
    }
    const schema = this.#schema.jsonSchema;
    const value = this.strict ? nullsToAbsent(args, schema) : args;
    // Coercion only ever touches values of the wrong type, which fail validation: arguments that
    // validate as sent (the common case) skip the walk.
    const first = this.#schema.validate(value);
    const retry = (outcome: Validation): Validation | Promise<Validation> => {
      if (outcome.ok) return outcome;
      // Non-strict too: a model (or an MCP client) that sends null for an optional key that does
      // not take null means "absent", as strict mode's nullable keys do.
      const repaired = coerce(this.strict ? value : nullsToAbsent(value, schema), schema);
      return repaired === value ? outcome : this.#schema.validate(repaired);
    };
    return first instanceof Promise ? first.then(retry) : retry(first);
  }

  /**
   * A tool from a plain function, pi-agent style.
   *
   * @example
   * const calc = Tool.fromFunction({ name: "calculate", label: "Calculator", description: "Evaluate arithmetic.",
   *   parameters: z.object({ expression: z.string() }), fn: ({ expression }) => String(evaluate(expression)) });
   */
  static fromFunction<P extends ToolParameters, Deps = unknown>(
    definition: Omit<ToolDefinition<P, Deps>, "execute" | "name"> & {
      name?: string;
      fn: (args: InferArgs<P>, ctx: RunContext<Deps>) => unknown;
    },
  ): Tool<InferArgs<P>, Deps> {
    const { fn, ...rest } = definition;
    return tool({ ...rest, execute: fn } as ToolDefinition<P, Deps>);
  }
}

/** What `tool()` takes: a `ToolConfig` whose name is optional, plus the function to run. */
export interface ToolDefinition<P extends ToolParameters, Deps = unknown, Result = unknown>
  extends ToolOptions<InferArgs<P>, Result> {
  /** Required unless `execute` is a named function (`async function add() {}`). */
  name?: string;
  /** The model's only guidance on when to call the tool: write it for the model. Default "". */
  description?: string;
  /** The arguments' schema: Zod 4, any Standard Schema with JSON Schema, `jsonSchema<T>()`, or a bare JSON Schema. `args` is typed from it. */
  parameters: P;
  /**
   * The tool's body: `args` validated against `parameters`, `ctx` the live run context. Return a
   * string, `{ content, details? }`, or any JSON value; a throw does not end the run, the model
   * reads `Tool error: <message>`.
   */
  execute: (args: InferArgs<P>, ctx: RunContext<Deps>) => Result | Promise<Result>;
}

class FunctionTool<Args, Deps> extends Tool<Args, Deps> {
  readonly #fn: (args: Args, ctx: RunContext<Deps>) => unknown;
  constructor(config: ToolConfig<any>, fn: (args: Args, ctx: RunContext<Deps>) => unknown) {
    super(config);
    this.#fn = fn;
  }
  override execute(args: Args, ctx: RunContext<Deps>): unknown {
    return this.#fn(args, ctx);
  }
  override get executeSource(): string {
    return this.#fn.toString();
  }
}

/**
 * Defines a tool from a function. Argument types are inferred from `parameters`.
 *
 * @example
 * const lookupOrder = tool({
 *   name: "lookup_order",
 *   description: "Look up an order by id.",
 *   parameters: z.object({ orderId: z.string().describe("The order id") }),
 *   execute: async ({ orderId }) => `${orderId}: shipped`,
 * });
 */
export function tool<P extends ToolParameters, Deps = unknown, Result = unknown>(
  definition: ToolDefinition<P, Deps, Result>,
): Tool<InferArgs<P>, Deps> {
  if (typeof definition.execute !== "function") {
    throw new UserError(
      `tool ${definition.name ? `"${definition.name}"` : "(unnamed)"}: execute must be a function`,
    );
  }
  const name = definition.name ?? nameFromFunction(definition.execute);
  assertParametersGiven(definition, name);
  const { execute, ...config } = definition;
  return new FunctionTool<InferArgs<P>, Deps>({ ...config, name } as ToolConfig<any>, execute);
}

/** Other frameworks' spellings of `parameters`: a silent `{}` schema would hide the mistake. */
const MISNAMED_PARAMETERS = ["inputSchema", "input_schema", "schema", "argsSchema", "args"];

function assertParametersGiven(definition: object, name: string): void {
  if ((definition as { parameters?: unknown }).parameters !== undefined) return;
  const misnamed = MISNAMED_PARAMETERS.find((key) => key in definition);
  throw new UserError(
    misnamed
      ? `tool "${name}": "${misnamed}" is not an option; pass the schema as parameters: ... (e.g. parameters: z.object({ ... }))`
      : `tool "${name}": parameters is missing; pass parameters: z.object({}) for a tool without arguments`,
  );
}

function nameFromFunction(fn: Function): string {
  const name = fn.name;
  if (ACCIDENTAL_NAMES.has(name) || name.startsWith("bound ")) {
    throw new UserError(
      `a tool needs a name: pass { name: "..." } or use a named function (got ${name ? `"${name}"` : "an anonymous function"})`,
    );
  }
  return name;
}

// Checked when a tool is made (see whole-number.ts).
const TOOL_LIMITS = {
  retries: { min: 0 },
  timeoutMs: { min: 1, hint: "leave it out for no timeout" },
  maxOutputChars: { min: 1, unbounded: true },
  concurrency: { min: 1, unbounded: true, hint: "the number of calls of this tool that may run at once" },
} satisfies Partial<Record<keyof ToolConfig<any>, WholeNumberRule>>;

/** Throws a `UserError` unless `name` is a valid tool name (`^[a-zA-Z0-9_-]{1,64}$`). */
export function assertToolName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new UserError(
      `invalid tool name ${JSON.stringify(name)}: use 1-64 letters, digits, "_" or "-" (providers reject anything else)`,
    );
  }
}

function stripUndefined(options: object): object {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}
