import type { StandardSchemaV1 } from "@standard-schema/spec";
import { UserError } from "../../errors.js";
import type { JSONSchema } from "../../model/types.js";
import { compileJsonSchema } from "../../tool/ajv.js";
import { isTypedJsonSchema } from "../../tool/json-schema.js";
import type { ToolParameters } from "../../tool/parameters.js";

/** The model's final answer did not match the agent's `outputType`, even after a corrective turn. */
export class OutputValidationError extends Error {
  override name = "OutputValidationError";
}

export type OutputCheck = { ok: true; value: unknown } | { ok: false; problems: string[] };

/** An `outputType` ready to use: its JSON Schema (for native structured output) and a checker. */
export type OutputContract = { jsonSchema: JSONSchema; check(text: string): Promise<OutputCheck> };

/** Builds the contract for an agent's `outputType` (Zod, any Standard Schema, or JSON Schema). */
export function outputContract(outputType: ToolParameters, agentName: string): OutputContract {
  if (typeof outputType === "object" && outputType !== null && "~standard" in outputType) {
    const props = (outputType as StandardSchemaV1)["~standard"] as StandardSchemaV1.Props & {
      jsonSchema?: { output(options: { target: string }): JSONSchema };
    };
    if (!props.jsonSchema)
      throw new UserError(`agent "${agentName}": its outputType cannot emit JSON Schema`);
    const { $schema: _s, ...jsonSchema } = props.jsonSchema.output({ target: "draft-2020-12" });
    return {
      jsonSchema,
      async check(text) {
        const parsed = parseJson(text);
        if (!parsed.ok) return parsed;
        const result = await props.validate(parsed.value);
        if (!result.issues) return { ok: true, value: result.value };
        return {
          ok: false,
          problems: result.issues.map(
            (i) =>
              `${(i.path ?? []).map((p) => (typeof p === "object" ? p.key : p)).join(".") || "(root)"}: ${i.message}`,
          ),
        };
      },
    };
  }
  const schema = isTypedJsonSchema(outputType) ? outputType.jsonSchema : (outputType as JSONSchema);
  const validate = compileJsonSchema(schema);
  const { $schema: _s, ...jsonSchema } = schema;
  return {
    jsonSchema,
    async check(text) {
      const parsed = parseJson(text);
      if (!parsed.ok) return parsed;
      if (validate(parsed.value)) return { ok: true, value: parsed.value };
      return {
        ok: false,
        problems: (validate.errors ?? []).map(
          (e) => `${e.instancePath.slice(1).replace(/\//g, ".") || "(root)"}: ${e.message}`,
        ),
      };
    },
  };
}

/**
 * The answer as JSON. Models often wrap it even when asked not to: in a Markdown fence (any
 * label, any case, on one line or several), or with a sentence before or after it. The text
 * itself is tried first, then the one fenced block it holds, then what lies between its first
 * `{` or `[` and the last matching `}` or `]`; the corrective turn quotes the first error.
 */
function parseJson(text: string): OutputCheck {
  const fences = [...text.matchAll(/```[\w-]*[ \t]*\n?([\s\S]*?)\n?[ \t]*```/g)];
  const candidates = [text];
  if (fences.length === 1) candidates.push(fences[0]![1]!);
  const open = text.search(/[[{]/);
  if (open >= 0) {
    const close = text.lastIndexOf(text[open] === "{" ? "}" : "]");
    if (close > open) candidates.push(text.slice(open, close + 1));
  }
  let first: Error | undefined;
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(candidate) };
    } catch (error) {
      first ??= error as Error;
    }
  }
  return { ok: false, problems: [`not valid JSON: ${first!.message}`] };
}
