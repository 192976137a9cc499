/**
 * What the real Responses API checks about a request, as far as these tests rely on it:
 * known fields, item shapes, every function_call answered by a function_call_output and
 * no output without its call, reasoning items followed by their item and (without `store`)
 * carrying encrypted content, `strict` tools in strict form; the parts of user messages and
 * of function outputs: `input_text`, `input_image` (`image_url` as a base64 PNG, JPEG, GIF or WebP data URL or an
 * http(s) URL, or a `file_id`), `input_file` (one of `file_data` as a data URL with its
 * `filename`, `file_url`, `file_id`). No audio.
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

const DATA_URL = /^data:[a-z]+\/[-+.\w]+;base64,[A-Za-z0-9+/]+=*$/;

function checkInputPart(part: any, at: string): string[] {
  const problems: string[] = [];
  const only = (keys: string[]) => {
    for (const key of Object.keys(part))
      if (!keys.includes(key)) problems.push(`Unknown parameter: '${at}.${key}'.`);
  };
  switch (part?.type) {
    case "input_text":
      only(["type", "text"]);
      if (typeof part.text !== "string") problems.push(`${at}.text`);
      break;
    case "input_image": {
      only(["type", "image_url", "file_id", "detail"]);
      const url = part.image_url;
      if (url === undefined && part.file_id === undefined)
        problems.push(`${at}: image_url or file_id is required`);
      if (
        url !== undefined &&
        !(/^data:image\/(png|jpeg|gif|webp);base64,/.test(url) && DATA_URL.test(url)) &&
        !/^https?:\/\//.test(url)
      )
        problems.push(`${at}.image_url: Invalid image URL`);
      if (part.detail !== undefined && !["auto", "low", "high"].includes(part.detail))
        problems.push(`${at}.detail`);
      break;
    }
    case "input_file": {
      only(["type", "file_data", "file_url", "file_id", "filename", "detail"]);
      const given = ["file_data", "file_url", "file_id"].filter((k) => part[k] !== undefined);
      if (given.length !== 1)
        problems.push(`${at}: exactly one of file_data, file_url or file_id is required`);
      if (part.file_data !== undefined) {
        if (!DATA_URL.test(String(part.file_data)))
          problems.push(`${at}.file_data: expected a base64 data URL`);
        if (typeof part.filename !== "string" || part.filename === "")
          problems.push(`${at}.filename: required with file_data`);
      }
      if (part.file_url !== undefined && !/^https?:\/\//.test(part.file_url)) problems.push(`${at}.file_url`);
      break;
    }
    default:
      problems.push(
        `Invalid value: '${part?.type}'. Supported values are: 'input_text', 'input_image', and 'input_file'. (${at}.type)`,
      );
  }
  return problems;
}

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
        item.content.forEach((part: any, j: number) => {
          const allowed =
            item.role === "assistant"
              ? ["output_text", "refusal"]
              : ["input_text", "input_image", "input_file"];
          if (!allowed.includes(part.type))
            problems.push(`${at}: content type ${part.type} for role ${item.role}`);
          else if (item.role !== "assistant") problems.push(...checkInputPart(part, `${at}.content[${j}]`));
        });
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
      if (Array.isArray(output))
        output.forEach((part: any, j: number) => {
          problems.push(...checkInputPart(part, `${at}.output[${j}]`));
        });
      else if (typeof output !== "string") problems.push(`${at}.output`);
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
