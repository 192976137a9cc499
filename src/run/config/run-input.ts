import { UserError } from "../../errors.js";
import { base64Bytes, parseDataUrl } from "../../model/media.js";
import type { ContentBlock, Message } from "../../model/types.js";

/**
 * What a run starts from: a user message as text, a message, a whole transcript (e.g.
 * `previous.messages` plus a new turn), or the parts of one user message (text, images,
 * documents, audio).
 *
 * @example
 * await Runner.run(agent, [
 *   { type: "text", text: "What does this chart show?" },
 *   { type: "image", data: png.toString("base64"), mimeType: "image/png" },
 * ]);
 */
export type RunInput = string | Message | readonly Message[] | readonly ContentBlock[];

/** The largest attachment a run takes by default: 20 MB of decoded bytes. */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;

/**
 * The input as messages. Parts become one user message; an image or file given as a `data:`
 * URL (in `url` or in `data`) is stored as its base64 bytes and media type, so it is kept once
 * beside the log like any other attachment and every provider can send it.
 */
export function inputMessages(input: RunInput): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (Array.isArray(input)) {
    if (input.length > 0 && isPart(input[0]))
      return [{ role: "user", content: (input as ContentBlock[]).map(normalizePart) }];
    return (input as Message[]).map(normalizeMessage);
  }
  return [normalizeMessage(input as Message)];
}

/**
 * Whether the input is a whole transcript (an array of messages), which a run takes as it is;
 * a string, a message or parts are one new turn, which continues a stored session.
 */
export function isTranscript(input: RunInput): boolean {
  return Array.isArray(input) && !(input.length > 0 && isPart(input[0]));
}

function normalizeMessage(message: Message): Message {
  if (typeof message.content === "string") return message;
  const content = message.content.map(normalizePart);
  return content.some((block, i) => block !== message.content[i])
    ? ({ ...message, content } as Message)
    : message;
}

function normalizePart(block: ContentBlock): ContentBlock {
  if (block.type !== "image" && block.type !== "file" && block.type !== "audio") return block;
  const fromUrl = block.url !== undefined ? parseDataUrl(block.url) : undefined;
  const fromData = block.data !== undefined ? parseDataUrl(block.data) : undefined;
  const parsed = fromUrl ?? fromData;
  if (!parsed) return block;
  const { url: _url, ...rest } = block;
  return { ...rest, data: parsed.data, mimeType: block.mimeType ?? parsed.mimeType } as ContentBlock;
}

const ROLES = new Set(["system", "user", "assistant", "tool"]);
const PART_TYPES = new Set(["text", "image", "file", "audio", "reasoning"]);

/** An element of an input array that is a content part (it has a `type` and no `role`). */
function isPart(value: unknown): boolean {
  return typeof value === "object" && value !== null && "type" in value && !("role" in value);
}

/**
 * Checks what `Runner.run` / `Runner.stream` were given before anything else happens, so a
 * programming mistake is a `UserError` naming it, not a provider failure several calls later;
 * an attachment over `maxAttachmentBytes` is refused here, before anything is stored or sent.
 *
 * @example
 * assertRunInput("hello", { maxTurns: 5 }); // fine
 * assertRunInput(42, {});                    // UserError: the input must be …
 */
export function assertRunInput(
  input: unknown,
  options: { maxTurns?: unknown; maxAttachmentBytes?: unknown } | undefined,
): asserts input is RunInput {
  if (options?.maxTurns !== undefined) {
    const { maxTurns } = options;
    if (typeof maxTurns !== "number" || !Number.isInteger(maxTurns) || maxTurns < 1) {
      throw new UserError(`maxTurns must be a whole number of at least 1 (got ${describe(maxTurns)})`);
    }
  }
  const limit = options?.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  if (typeof limit !== "number" || !(limit >= 0)) {
    throw new UserError(`maxAttachmentBytes must be a number of bytes (got ${describe(limit)})`);
  }
  if (typeof input === "string") return;
  if (Array.isArray(input)) {
    if (input.length === 0)
      throw new UserError("the input is an empty list: give at least one message or content part");
    const parts = input.map(isPart);
    const firstPart = parts.indexOf(true);
    const firstMessage = parts.indexOf(false);
    if (firstPart >= 0 && firstMessage >= 0) {
      throw new UserError(
        `the input mixes messages and content parts (element ${firstMessage} is a message with a role, element ${firstPart} is a part with a type and no role): ` +
          'pass either an array of messages, or the parts of one user message ([{ type: "text", … }, { type: "image", … }])',
      );
    }
    if (firstPart === 0) {
      input.forEach((part, index) => {
        const problem = partProblem(part, limit);
        if (problem) throw new UserError(`input part ${index} ${problem}`);
      });
      return;
    }
    input.forEach((message, index) => {
      const problem = messageProblem(message, limit);
      if (problem) throw new UserError(`input message ${index} ${problem}`);
    });
    return;
  }
  const problem = messageProblem(input, limit);
  if (problem) {
    throw new UserError(
      `the input must be a string, a message ({ role: "user", content: "…" }), an array of messages or an array of content parts; it ${problem}`,
    );
  }
}

/**
 * Checks a message that steers a running run (`inject()`, `followUp()`) the way the run's input
 * was checked, attachments held to the same `maxAttachmentBytes`: a mistake throws at the call,
 * not later inside the run.
 *
 * @example
 * assertSteeringMessage("only 2024", undefined); // fine
 * assertSteeringMessage({ role: "user" }, undefined); // UserError: the message has content undefined …
 */
export function assertSteeringMessage(
  message: unknown,
  maxAttachmentBytes: number | undefined,
): asserts message is string | Message {
  if (typeof message === "string") return;
  const problem = messageProblem(message, maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES);
  if (problem)
    throw new UserError(
      `the message must be a string or a message ({ role: "user", content: … }); it ${problem}`,
    );
  // A result or a call arriving on its own would leave the transcript unpaired, which no provider takes.
  const { role, toolCalls } = message as { role: string; toolCalls?: unknown[] };
  if (role === "tool" || (role === "assistant" && toolCalls?.length))
    throw new UserError(
      `steer a run with a user (or system) message: ${role === "tool" ? "a tool result" : "an assistant message with tool calls"} cannot arrive on its own, the calls and their results come from the run`,
    );
}

function messageProblem(message: unknown, limit: number): string | undefined {
  if (typeof message !== "object" || message === null) return `is ${describe(message)}`;
  const { role, content } = message as { role?: unknown; content?: unknown };
  if (typeof role !== "string" || !ROLES.has(role)) {
    return `has no valid role (got ${describe(role)}; use "user", "assistant", "system" or "tool")`;
  }
  if (typeof content !== "string" && !Array.isArray(content)) {
    return `has content ${describe(content)}: use a string or an array of content blocks`;
  }
  if (Array.isArray(content)) {
    for (let i = 0; i < content.length; i++) {
      const problem = partProblem(content[i], limit);
      if (problem) return `has a bad content block: block ${i} ${problem}`;
    }
  }
  return undefined;
}

/** What is wrong with one content part, if anything (worded to follow "input part N"). */
function partProblem(part: unknown, limit: number): string | undefined {
  if (typeof part !== "object" || part === null) return `is ${describe(part)}`;
  const block = part as Record<string, unknown>;
  if (typeof block.type !== "string" || !PART_TYPES.has(block.type)) {
    return `has no valid type (got ${describe(block.type)}; use "text", "image", "file" or "audio")`;
  }
  if (block.type === "text" || block.type === "reasoning") {
    return typeof block.text === "string" ? undefined : `(${block.type}) has no "text" string`;
  }
  const { data, url, mimeType, filename } = block;
  const hasData = typeof data === "string";
  const hasUrl = typeof url === "string";
  if (hasData === hasUrl || (data !== undefined && !hasData) || (url !== undefined && !hasUrl)) {
    return block.type === "audio"
      ? `(audio) needs "data": its bytes as base64`
      : `(${block.type}) needs exactly one of "data" (its bytes as base64) or "url"`;
  }
  if (block.type === "audio" && hasUrl && !(url as string).startsWith("data:"))
    return `(audio) cannot be given by URL: pass its bytes as base64 "data"`;
  const dataUrl = parseDataUrl((hasUrl ? url : data) as string);
  if (hasUrl && !dataUrl && !/^https?:\/\//i.test(url as string))
    return `(${block.type}) has a url that is neither http(s) nor a base64 data: URL (${describe(url)})`;
  const type = mimeType ?? dataUrl?.mimeType;
  if (mimeType !== undefined && typeof mimeType !== "string")
    return `(${block.type}) has a non-string mimeType`;
  if (type === undefined && !(block.type === "image" && hasUrl))
    return `(${block.type}) needs a "mimeType" such as ${EXAMPLE_TYPES[block.type]}`;
  if (filename !== undefined && typeof filename !== "string")
    return `(${block.type}) has a non-string filename`;
  const base64 = dataUrl?.data ?? (hasData ? (data as string) : undefined);
  if (base64 !== undefined && !BASE64.test(base64))
    return `(${block.type}) has "data" that is not base64 (${describe(base64)}): pass the bytes as base64, e.g. buffer.toString("base64")`;
  if (base64 !== undefined) {
    const bytes = base64Bytes(base64);
    if (bytes > limit) {
      const name = typeof filename === "string" ? `${filename}, ` : "";
      return (
        `(${block.type}: ${name}${type}) is ${megabytes(bytes)}, over maxAttachmentBytes (${megabytes(limit)}): ` +
        "shrink it, or raise maxAttachmentBytes in the run options if the provider takes it"
      );
    }
  }
  return undefined;
}

/** Standard base64 (what every provider takes), line breaks allowed. */
const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}\s*$/;

const EXAMPLE_TYPES: Record<string, string> = {
  image: '"image/png"',
  file: '"application/pdf"',
  audio: '"audio/wav"',
};

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB (${bytes.toLocaleString("en-US")} bytes)`;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}
