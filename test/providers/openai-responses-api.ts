/**
 * What the real Responses API checks about a request, as far as these tests rely on it:
 * known fields, item shapes, every function_call answered by a function_call_output and
 * no output without its call, reasoning items followed by their item and (without `store`)
 * carrying encrypted content, `strict` tools in strict form.
 */
import { checkStrict } from "./openai-chat-api.js";
import type { RecordedRequest } from "./replay-server.js";

const KNOWN_FIELDS = new Set([
  "model",
  "input",
  "instructions",
  "stream",
  "store",
  "include",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "temperature",
  "top_p",
  "max_output_tokens",
  "reasoning",
  "text",
  "metadata",
  "previous_response_id",
  "truncation",
  "user",
  "service_tier",
  "background",
  "prompt_cache_key",
  "safety_identifier",
  "max_tool_calls",
  "top_logprobs",
  "conversation",
  "prompt",
]);

export function validateResponsesRequest(req: RecordedRequest): string[] {
  const problems: string[] = [];
  if (req.method !== "POST" || req.path !== "/v1/responses") problems.push(`${req.method} ${req.path}`);
  if (req.headers.authorization !== "Bearer test-key") problems.push("Incorrect API key provided");
  const body = req.body;
  if (body === null || typeof body !== "object") return [...problems, "body is not JSON"];
  for (const key of Object.keys(body))
    if (!KNOWN_FIELDS.has(key)) problems.push(`Unknown parameter: '${key}'.`);
  if (body.stream !== true) problems.push("stream");
  for (const value of body.include ?? []) {
    if (
      !["reasoning.encrypted_content", "message.output_text.logprobs", "file_search_call.results"].includes(
        value,
      )
    )
      problems.push(`include: ${value}`);
  }
  for (const [i, tool] of (body.tools ?? []).entries()) {
    if (tool.type !== "function" || typeof tool.name !== "string") problems.push(`tools[${i}]`);
    if (tool.parameters?.type !== "object") problems.push(`tools[${i}].parameters must be an object schema`);
    if (typeof tool.strict !== "boolean") problems.push(`tools[${i}].strict defaults to true: send it`);
    if (tool.strict) problems.push(...checkStrict(tool.parameters, `tools[${i}]`));
  }
  if (!Array.isArray(body.input)) return [...problems, "input must be an array"];
  const calls = new Set<string>();
  const answered = new Set<string>();
  body.input.forEach((item: any, i: number) => {
    const at = `input[${i}]`;
    if (item.type === undefined || item.type === "message") {
      if (!["user", "assistant", "system", "developer"].includes(item.role)) problems.push(`${at}.role`);
      if (Array.isArray(item.content)) {
        for (const part of item.content) {
          const allowed =
            item.role === "assistant"
              ? ["output_text", "refusal"]
              : ["input_text", "input_image", "input_file"];
          if (!allowed.includes(part.type))
            problems.push(`${at}: content type ${part.type} for role ${item.role}`);
          if (part.type === "input_image" && !String(part.image_url).startsWith("data:image/"))
            problems.push(`${at}: image_url`);
        }
      } else if (typeof item.content !== "string") problems.push(`${at}.content`);
    } else if (item.type === "function_call") {
      if (
        typeof item.call_id !== "string" ||
        typeof item.name !== "string" ||
        typeof item.arguments !== "string"
      )
        problems.push(`${at}: function_call fields`);
      calls.add(item.call_id);
    } else if (item.type === "function_call_output") {
      if (!calls.has(item.call_id))
        problems.push(`No tool call found for function call output with call_id ${item.call_id}.`);
      answered.add(item.call_id);
      const output = item.output;
      if (
        typeof output !== "string" &&
        !(
          Array.isArray(output) &&
          output.every((p: any) => ["input_text", "input_image", "input_file"].includes(p.type))
        )
      ) {
        problems.push(`${at}.output`);
      }
    } else if (item.type === "reasoning") {
      if (!Array.isArray(item.summary)) problems.push(`${at}.summary: Field required`);
      if (body.store === false && typeof item.encrypted_content !== "string") {
        problems.push(
          `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false.`,
        );
      }
      if (i === body.input.length - 1)
        problems.push(
          `Item '${item.id}' of type 'reasoning' was provided without its required following item.`,
        );
    } else problems.push(`${at}: unknown item type ${item.type}`);
  });
  for (const id of calls)
    if (!answered.has(id)) problems.push(`No tool output found for function call ${id}.`);
  return problems;
}
