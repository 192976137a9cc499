import type { Message as AgUiMessage, ContentPart, RunAgentInput } from "@ag-ui/core";
import type { ContentBlock, Message } from "../index.js";
import { type AttachmentKind, attachment, messageContent } from "./attachments.js";
import { HttpError } from "./http.js";

/**
 * Quiver messages as AG-UI messages: text, and a user's images, documents and recordings as
 * media parts (system messages are the server's and stay there).
 */
export function toAgUi(messages: readonly Message[], prefix: string): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  messages.forEach((message, i) => {
    const id = `${prefix}-m${i}`;
    if (message.role === "user") out.push({ id, role: "user", content: userParts(message.content) });
    else if (message.role === "assistant") {
      const content = plain(message.content);
      out.push({
        id,
        role: "assistant",
        ...(content !== "" && { content }),
        ...(message.toolCalls?.length && {
          toolCalls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
          })),
        }),
      });
    } else if (message.role === "tool") {
      const content = plain(message.content);
      out.push({
        id,
        role: "tool",
        toolCallId: message.toolCallId,
        content,
        ...(message.isError && { error: content }),
      });
    }
  });
  return out;
}

/** A user message's content as AG-UI sends it: a string, or parts when it holds media. */
function userParts(content: string | ContentBlock[]): string | ContentPart[] {
  if (typeof content === "string" || !content.some((b) => b.type !== "text" && b.type !== "reasoning"))
    return plain(content);
  const parts: ContentPart[] = [];
  for (const block of content) {
    if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (block.type === "reasoning") continue;
    else {
      const type = block.type === "file" ? "document" : block.type;
      const source =
        block.url !== undefined
          ? { type: "url" as const, value: block.url, ...(block.mimeType && { mimeType: block.mimeType }) }
          : { type: "data" as const, value: block.data, mimeType: block.mimeType };
      const metadata =
        block.type === "file" && block.filename ? { metadata: { filename: block.filename } } : {};
      parts.push({ type, source, ...metadata });
    }
  }
  return parts;
}

const KINDS: Record<string, AttachmentKind> = { image: "image", audio: "audio", document: "document" };

/**
 * A user message's AG-UI content as Quiver content: its text, and its image, audio and
 * document parts (bytes as a `data` source, or a `url`; a document's name from
 * `metadata.filename`). Video and provider file handles are a 400: no provider here takes them.
 */
export function contentOf(content: unknown, extraText = ""): string | ContentBlock[] {
  const text = [textOf(content), extraText].filter(Boolean).join("\n\n");
  const blocks: ContentBlock[] = text === "" ? [] : [{ type: "text", text }];
  if (Array.isArray(content)) {
    content.forEach((part: any, i) => {
      if (part?.type === "text") return;
      const at = `the user message, part ${i}`;
      const kind = KINDS[part?.type];
      if (!kind)
        throw new HttpError(400, "bad_request", `${at}: ${String(part?.type)} parts are not supported`);
      const source = part.source;
      if (source?.type !== "data" && source?.type !== "url")
        throw new HttpError(
          400,
          "bad_request",
          `${at}: a ${String(source?.type)} source is not supported; send the bytes (data) or a URL`,
        );
      const mimeType = typeof source.mimeType === "string" ? source.mimeType : undefined;
      const url =
        source.type === "data" ? `data:${mimeType};base64,${String(source.value)}` : String(source.value);
      const filename = typeof part.metadata?.filename === "string" ? part.metadata.filename : undefined;
      blocks.push(attachment(at, { url, mediaType: mimeType, filename, kind }));
    });
  }
  return messageContent(blocks);
}

function plain(content: string | ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .filter((block): block is Extract<ContentBlock, { type: "text" }> => block.type === "text")
    .map((block) => block.text)
    .join("");
}

/** The text of an AG-UI message's content (a string, or parts whose text parts are joined). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter(
      (part): part is { type: "text"; text: string } =>
        part?.type === "text" && typeof part.text === "string",
    )
    .map((part) => part.text)
    .join("\n")
    .trim();
}

/** `context[]` entries, put after the user's message so the model sees what the page shared. */
export function contextBlock(input: RunAgentInput): string {
  const entries = input.context ?? [];
  if (entries.length === 0) return "";
  return ["Context from the application:", ...entries.map((c) => `- ${c.description}: ${c.value}`)].join(
    "\n",
  );
}

/**
 * A conversation the server has no record of (no store, and not run here since it started):
 * the text of the client's user and assistant messages and the user's media. Tool calls the
 * client shows are not replayed to the model as calls: the client may not be trusted to report
 * them faithfully.
 */
export function historyOf(messages: readonly AgUiMessage[]): Message[] {
  const history: Message[] = [];
  for (const message of messages) {
    if (message.role === "user") {
      const content = contentOf(message.content);
      if (content.length > 0) history.push({ role: "user", content });
    } else if (message.role === "assistant") {
      const text = textOf(message.content);
      if (text) history.push({ role: "assistant", content: text });
    }
  }
  return history;
}
