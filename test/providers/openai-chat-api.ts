/**
 * What the real Chat Completions API checks about a request, as far as these tests rely on
 * it: known fields only, message roles and ordering, every assistant tool call answered by
 * a `tool` message before anything else, text-only tool messages, id length, tool shapes,
 * strict schemas closed and fully required, and the user-message parts it takes: `text`,
 * `image_url` (a base64 data URL or an http(s) URL), `file` (`file_data` as a data URL with its
 * `filename`, or a `file_id`), `input_audio` (raw base64, `wav` or `mp3`).
 */
import type { ServerResponse } from "node:http";
import type { RecordedRequest } from "./replay-server.js";

const KNOWN_FIELDS = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "reasoning_effort",
  "response_format",
  "seed",
  "user",
  "n",
  "logprobs",
  "top_logprobs",
  "presence_penalty",
  "frequency_penalty",
  "service_tier",
  "store",
  "metadata",
  "prediction",
  "modalities",
  "audio",
  "logit_bias",
  "verbosity",
  "prompt_cache_key",
  "safety_identifier",
]);

export function validateChatRequest(
  req: RecordedRequest,
  expect: { path?: string; apiKey?: string | null; compatible?: boolean } = {},
): string[] {
  const problems: string[] = [];
  const path = expect.path ?? "/v1/chat/completions";
  if (req.method !== "POST") problems.push(`method ${req.method}`);
  if (req.path !== path) problems.push(`path ${req.path}, expected ${path}`);
  if (expect.apiKey !== null && req.headers.authorization !== `Bearer ${expect.apiKey ?? "test-key"}`) {
    problems.push(`authorization header ${String(req.headers.authorization)}`);
  }
  if (!String(req.headers["content-type"]).startsWith("application/json")) problems.push("content-type");
  const body = req.body;
  if (body === null || typeof body !== "object") return [...problems, "body is not JSON"];
  for (const key of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(key) && !expect.compatible)
      problems.push(`Unrecognized request argument supplied: ${key}`);
  }
  if (typeof body.model !== "string") problems.push("model");
  if (body.stream !== true) problems.push("stream must be true");
  if (body.stream_options?.include_usage !== true) problems.push("stream_options.include_usage");
  if (!expect.compatible && "max_tokens" in body)
    problems.push("max_tokens is not supported with this model; use max_completion_tokens");
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return [...problems, "messages must be a non-empty array"];
  problems.push(...checkMessages(body.messages));
  if (body.tools !== undefined) problems.push(...checkTools(body.tools));
  if (
    body.tools === undefined &&
    (body.tool_choice !== undefined || body.parallel_tool_calls !== undefined)
  ) {
    problems.push("tool_choice / parallel_tool_calls are only allowed when tools are specified");
  }
  return problems;
}

function checkMessages(messages: any[]): string[] {
  const problems: string[] = [];
  let open: Set<string> | undefined; // tool calls awaiting their tool message
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!["system", "developer", "user", "assistant", "tool"].includes(m.role))
      problems.push(`${at}.role ${m.role}`);
    if (m.role === "tool") {
      if (!open?.has(m.tool_call_id)) {
        problems.push(
          `${at}: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'`,
        );
      } else open.delete(m.tool_call_id);
      if (
        typeof m.content !== "string" &&
        !(Array.isArray(m.content) && m.content.every((p: any) => p.type === "text"))
      ) {
        problems.push(`${at}.content: tool messages hold text only`);
      }
      return;
    }
    if (open && open.size > 0) {
      problems.push(
        `${at}: An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. Missing: ${[...open].join(", ")}`,
      );
    }
    open = undefined;
    if (m.role === "assistant") {
      if (m.content === null && !m.tool_calls) problems.push(`${at}: content null without tool_calls`);
      if (m.tool_calls) {
        open = new Set();
        for (const [j, call] of m.tool_calls.entries()) {
          if (typeof call.id !== "string" || call.id.length > 40)
            problems.push(`${at}.tool_calls[${j}].id: too long or missing`);
          if (call.type !== "function") problems.push(`${at}.tool_calls[${j}].type`);
          if (typeof call.function?.arguments !== "string")
            problems.push(`${at}.tool_calls[${j}].function.arguments must be a string`);
          open.add(call.id);
        }
      }
    } else if (m.role === "user" && Array.isArray(m.content)) {
      m.content.forEach((part: any, j: number) => {
        problems.push(...checkUserPart(part, `${at}.content[${j}]`));
      });
    } else if (typeof m.content !== "string") {
      problems.push(`${at}.content must be a string`);
    }
  });
  if (open && open.size > 0) problems.push(`tool calls without results: ${[...open].join(", ")}`);
  return problems;
}

const DATA_URL = /^data:[a-z]+\/[-+.\w]+;base64,[A-Za-z0-9+/]+=*$/;

function checkUserPart(part: any, at: string): string[] {
  const problems: string[] = [];
  const only = (object: any, keys: string[], where: string) => {
    for (const key of Object.keys(object ?? {}))
      if (!keys.includes(key)) problems.push(`${where}: Unrecognized parameter ${key}`);
  };
  switch (part?.type) {
    case "text":
      only(part, ["type", "text"], at);
      if (typeof part.text !== "string") problems.push(`${at}.text`);
      break;
    case "image_url": {
      only(part, ["type", "image_url"], at);
      only(part.image_url, ["url", "detail"], `${at}.image_url`);
      const url = String(part.image_url?.url);
      if (
        !(/^data:image\/(png|jpeg|gif|webp);base64,/.test(url) && DATA_URL.test(url)) &&
        !/^https?:\/\//.test(url)
      )
        problems.push(
          `${at}.image_url.url: Invalid image URL: expected a base64 image data URL or an http(s) URL`,
        );
      if (part.image_url?.detail !== undefined && !["auto", "low", "high"].includes(part.image_url.detail))
        problems.push(`${at}.image_url.detail`);
      break;
    }
    case "file": {
      only(part, ["type", "file"], at);
      const file = part.file ?? {};
      only(file, ["file_data", "file_id", "filename"], `${at}.file`);
      const given = ["file_data", "file_id"].filter((k) => file[k] !== undefined);
      if (given.length !== 1) problems.push(`${at}.file: exactly one of file_data or file_id is required`);
      if (file.file_data !== undefined) {
        if (!DATA_URL.test(String(file.file_data)))
          problems.push(`${at}.file.file_data: expected a base64 data URL`);
        if (typeof file.filename !== "string" || file.filename === "")
          problems.push(`${at}.file.filename: required with file_data`);
      }
      break;
    }
    case "input_audio":
      only(part, ["type", "input_audio"], at);
      only(part.input_audio, ["data", "format"], `${at}.input_audio`);
      if (!/^[A-Za-z0-9+/]+=*$/.test(String(part.input_audio?.data)))
        problems.push(`${at}.input_audio.data: expected base64`);
      if (!["wav", "mp3"].includes(part.input_audio?.format))
        problems.push(`${at}.input_audio.format: Input should be 'wav' or 'mp3'`);
      break;
    default:
      problems.push(`${at}: Invalid value '${part?.type}' for type`);
  }
  return problems;
}

function checkTools(tools: any[]): string[] {
  const problems: string[] = [];
  for (const [i, tool] of tools.entries()) {
    if (tool.type !== "function") problems.push(`tools[${i}].type`);
    const fn = tool.function ?? {};
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(fn.name)) problems.push(`tools[${i}].function.name`);
    if (fn.parameters?.type !== "object")
      problems.push(`tools[${i}].function.parameters must be an object schema`);
    if (fn.strict) problems.push(...checkStrict(fn.parameters, `tools[${i}]`));
  }
  return problems;
}

export function checkStrict(schema: any, at: string): string[] {
  const problems: string[] = [];
  const walk = (node: any, path: string) => {
    if (!node || typeof node !== "object") return;
    if (node.type === "object" || node.properties) {
      if (node.additionalProperties !== false)
        problems.push(`${at} ${path}: additionalProperties must be false in strict mode`);
      const keys = Object.keys(node.properties ?? {});
      const required = node.required ?? [];
      for (const key of keys) {
        if (!required.includes(key)) problems.push(`${at} ${path}: '${key}' must be required in strict mode`);
        walk(node.properties[key], `${path}.${key}`);
      }
    }
    if ("default" in node) problems.push(`${at} ${path}: 'default' is not permitted in strict mode`);
    if (node.items) walk(node.items, `${path}[]`);
    for (const v of node.anyOf ?? []) walk(v, path);
    for (const [k, v] of Object.entries(node.$defs ?? {})) walk(v, `$defs.${k}`);
  };
  walk(schema, "");
  return problems;
}

/** Answers like OpenAI does for an invalid request. */
export function rejectLikeOpenAI(res: ServerResponse, problems: string[]): void {
  res.writeHead(400, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      error: { message: problems.join("; "), type: "invalid_request_error", param: null, code: null },
    }),
  );
}
