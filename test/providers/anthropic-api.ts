/**
 * What the real Messages API checks about a request, as far as these tests rely on it:
 * headers, known fields, alternating roles starting with user, non-empty text blocks,
 * every tool_use answered by a tool_result at the start of the next user message, id
 * format, intact thinking blocks, thinking constraints (a tool loop continued with thinking on
 * must have begun with a thinking block), at most 4 cache breakpoints; the media blocks it
 * takes: `image` (base64 JPEG/PNG/GIF/WebP matching its bytes, at most 5,242,880 characters of
 * base64, or a URL source) and `document` (a
 * base64 or URL PDF, or a plain-text source; a title of at most 500 characters), in user
 * messages and inside `tool_result`. No audio.
 */
import type { ServerResponse } from "node:http";
import type { RecordedRequest } from "./replay-server.js";

const KNOWN_FIELDS = new Set([
  "model",
  "messages",
  "max_tokens",
  "system",
  "stream",
  "tools",
  "tool_choice",
  "temperature",
  "top_p",
  "top_k",
  "stop_sequences",
  "thinking",
  "metadata",
  "service_tier",
  "container",
  "mcp_servers",
  "context_management",
]);

export function validateMessagesRequest(req: RecordedRequest): string[] {
  const problems: string[] = [];
  if (req.method !== "POST" || req.path !== "/v1/messages") problems.push(`${req.method} ${req.path}`);
  if (req.headers["x-api-key"] !== "test-key") problems.push("x-api-key: invalid x-api-key");
  if (req.headers["anthropic-version"] !== "2023-06-01") problems.push("anthropic-version header");
  if (req.headers.authorization !== undefined) problems.push("unexpected authorization header");
  const body = req.body;
  if (body === null || typeof body !== "object") return [...problems, "body is not JSON"];
  for (const key of Object.keys(body))
    if (!KNOWN_FIELDS.has(key)) problems.push(`${key}: Extra inputs are not permitted`);
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) problems.push("max_tokens: Field required");
  if (body.stream !== true) problems.push("stream");
  const thinking = body.thinking?.type === "enabled";
  if (thinking) {
    if (!(body.thinking.budget_tokens >= 1024)) problems.push("thinking.budget_tokens: must be ≥ 1024");
    if (!(body.thinking.budget_tokens < body.max_tokens))
      problems.push("max_tokens must be greater than thinking.budget_tokens");
    if (body.temperature !== undefined && body.temperature !== 1)
      problems.push("temperature may only be set to 1 when thinking is enabled");
    if (body.tool_choice && !["auto", "none"].includes(body.tool_choice.type))
      problems.push("Thinking may not be enabled when tool_choice forces tool use.");
  }
  if (body.system !== undefined && typeof body.system !== "string") {
    for (const block of body.system)
      if (block.type !== "text" || !block.text) problems.push("system: text blocks must be non-empty");
  }
  for (const [i, tool] of (body.tools ?? []).entries()) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) problems.push(`tools.${i}.name`);
    if (tool.input_schema?.type !== "object")
      problems.push(`tools.${i}.input_schema.type: Input should be 'object'`);
  }
  if (body.tool_choice && !["auto", "any", "tool", "none"].includes(body.tool_choice.type))
    problems.push("tool_choice.type");
  problems.push(...checkMessages(body.messages, thinking));
  const usesTools = JSON.stringify(body.messages ?? []).match(/"type":"tool_(use|result)"/);
  if (usesTools && !(body.tools?.length > 0))
    problems.push("Requests which include `tool_use` or `tool_result` blocks must define tools.");
  const breakpoints = JSON.stringify(body).split('"cache_control"').length - 1;
  if (breakpoints > 4)
    problems.push(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  return problems;
}

function checkMessages(messages: any, thinking: boolean): string[] {
  if (!Array.isArray(messages) || messages.length === 0)
    return ["messages: at least one message is required"];
  const problems: string[] = [];
  if (messages[0].role !== "user") problems.push("messages.0.role: first message must use the user role");
  let pending: string[] = [];
  messages.forEach((m: any, i: number) => {
    const at = `messages.${i}`;
    if (m.role !== "user" && m.role !== "assistant") problems.push(`${at}.role: ${m.role}`);
    if (i > 0 && messages[i - 1].role === m.role)
      problems.push(`${at}: roles must alternate between "user" and "assistant"`);
    const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(content) || content.length === 0)
      problems.push(`${at}: all messages must have non-empty content`);
    const blocks: any[] = Array.isArray(content) ? content : [];
    for (const [j, block] of blocks.entries()) {
      if (block.type === "text" && (typeof block.text !== "string" || block.text === ""))
        problems.push(`${at}.content.${j}: text content blocks must be non-empty`);
      if ((block.type === "thinking" || block.type === "redacted_thinking") && block.cache_control)
        problems.push(`${at}.content.${j}: thinking blocks cannot be cached`);
      if (block.type === "thinking" && !block.signature)
        problems.push(`${at}.content.${j}.signature: Field required`);
      if (m.role === "user" && block.type !== "tool_result")
        problems.push(...checkUserBlock(block, `${at}.content.${j}`));
    }
    if (m.role === "user") {
      const results = blocks.filter((b) => b.type === "tool_result");
      const firstOther = blocks.findIndex((b) => b.type !== "tool_result");
      if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b.type === "tool_result")) {
        problems.push(`${at}: tool_result blocks must come first in the user message`);
      }
      for (const result of results) {
        if (!pending.includes(result.tool_use_id))
          problems.push(
            `${at}: unexpected tool_use_id found in tool_result blocks: ${result.tool_use_id}. Each tool_result block must have a corresponding tool_use block in the previous message.`,
          );
        for (const [k, inner] of (Array.isArray(result.content) ? result.content : []).entries()) {
          if (inner.type === "text" && !inner.text)
            problems.push(`${at}: tool_result text blocks must be non-empty`);
          problems.push(...checkUserBlock(inner, `${at}.tool_result.content.${k}`));
        }
      }
      const answered = new Set(results.map((r) => r.tool_use_id));
      const missing = pending.filter((id) => !answered.has(id));
      if (missing.length > 0)
        problems.push(
          `${at}: tool_use ids were found without tool_result blocks immediately after: ${missing.join(", ")}`,
        );
      pending = [];
    } else {
      if (pending.length > 0)
        problems.push(
          `${at}: tool_use ids were found without tool_result blocks immediately after: ${pending.join(", ")}`,
        );
      pending = [];
      for (const block of blocks) {
        if (block.type === "tool_result") problems.push(`${at}: tool_result in an assistant message`);
        if (block.type === "tool_use") {
          if (!/^[a-zA-Z0-9_-]+$/.test(block.id))
            problems.push(`${at}: tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          if (block.input === null || typeof block.input !== "object" || Array.isArray(block.input))
            problems.push(`${at}: tool_use.input: Input should be an object`);
          pending.push(block.id);
        }
      }
      // The whole assistant turn, tool loop included, runs in one thinking mode: with thinking
      // on, the assistant message that opened the loop the request ends in starts with thinking.
      if (
        thinking &&
        i === loopOpener(messages) &&
        pending.length > 0 &&
        !["thinking", "redacted_thinking"].includes(blocks[0]?.type)
      ) {
        problems.push(
          `${at}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${blocks[0]?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`,
        );
      }
    }
  });
  if (pending.length > 0 && messages.at(-1).role === "assistant" && messages.length > 0) {
    // A trailing assistant message with tool_use is a prefill; the API rejects it too.
    problems.push("the final assistant message has tool_use blocks without results");
  }
  return problems;
}

/**
 * The index of the assistant message that opened the tool loop the conversation ends in: the
 * first after the last user message that carries no tool_result (-1 when it ends in none).
 */
function loopOpener(messages: any[]): number {
  let opener = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    const content = Array.isArray(m.content) ? m.content : [];
    if (m.role === "assistant") opener = i;
    else if (!content.some((b: any) => b.type === "tool_result")) break;
  }
  return opener;
}

const BASE64 = /^[A-Za-z0-9+/]+=*$/;
/** The limit on one image, measured on its base64 text. */
const MAX_IMAGE_BASE64 = 5_242_880;

/** What an image's first bytes say it is (the API decodes it and compares with media_type). */
function decodedImageType(base64: string): string | undefined {
  const head = Buffer.from(base64.slice(0, 16), "base64");
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return "image/png";
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
  if (/^GIF8[79]a/.test(head.toString("latin1", 0, 6))) return "image/gif";
  if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WEBP")
    return "image/webp";
  return undefined;
}

/** A block of a user message or a tool result: text, image, document. */
function checkUserBlock(block: any, at: string): string[] {
  const problems: string[] = [];
  const extra = (object: any, keys: string[], where: string) => {
    for (const key of Object.keys(object ?? {}))
      if (!keys.includes(key)) problems.push(`${where}.${key}: Extra inputs are not permitted`);
  };
  const source = block?.source;
  switch (block?.type) {
    case "text":
      break;
    case "image":
      extra(block, ["type", "source", "cache_control"], at);
      if (source?.type === "base64") {
        extra(source, ["type", "media_type", "data"], `${at}.source`);
        if (!["image/jpeg", "image/png", "image/gif", "image/webp"].includes(source.media_type))
          problems.push(
            `${at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
          );
        if (!BASE64.test(String(source.data))) problems.push(`${at}.source.base64.data: invalid base64 data`);
        else if (source.data.length > MAX_IMAGE_BASE64)
          problems.push(
            `${at}.source.base64: image exceeds 5 MB maximum: ${source.data.length} bytes > ${MAX_IMAGE_BASE64} bytes`,
          );
        else {
          const decoded = decodedImageType(source.data);
          if (decoded !== undefined && decoded !== source.media_type)
            problems.push(
              `${at}.source.base64.data: Image does not match the provided media type ${source.media_type}`,
            );
        }
      } else if (source?.type === "url") {
        extra(source, ["type", "url"], `${at}.source`);
        if (!/^https?:\/\//.test(String(source.url))) problems.push(`${at}.source.url.url`);
      } else
        problems.push(`${at}.source: Input tag '${source?.type}' does not match 'base64', 'url' or 'file'`);
      break;
    case "document":
      extra(block, ["type", "source", "title", "context", "citations", "cache_control"], at);
      if (
        block.title !== undefined &&
        (typeof block.title !== "string" || block.title === "" || block.title.length > 500)
      )
        problems.push(`${at}.title`);
      if (source?.type === "base64") {
        extra(source, ["type", "media_type", "data"], `${at}.source`);
        if (source.media_type !== "application/pdf")
          problems.push(`${at}.source.base64.media_type: Input should be 'application/pdf'`);
        if (!BASE64.test(String(source.data))) problems.push(`${at}.source.base64.data: invalid base64 data`);
      } else if (source?.type === "text") {
        extra(source, ["type", "media_type", "data"], `${at}.source`);
        if (source.media_type !== "text/plain")
          problems.push(`${at}.source.text.media_type: Input should be 'text/plain'`);
        if (typeof source.data !== "string") problems.push(`${at}.source.text.data`);
      } else if (source?.type === "url") {
        extra(source, ["type", "url"], `${at}.source`);
        if (!/^https?:\/\//.test(String(source.url))) problems.push(`${at}.source.url.url`);
      } else
        problems.push(
          `${at}.source: Input tag '${source?.type}' does not match 'base64', 'text', 'content', 'url' or 'file'`,
        );
      break;
    case "search_result":
      break;
    default:
      problems.push(
        `${at}: Input tag '${block?.type}' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'search_result'`,
      );
  }
  return problems;
}

export function rejectLikeAnthropic(res: ServerResponse, problems: string[]): void {
  res.writeHead(400, { "content-type": "application/json", "request-id": "req_test" });
  res.end(
    JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: problems.join("; ") } }),
  );
}
