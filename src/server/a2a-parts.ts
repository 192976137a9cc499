import type { Part } from "@a2a-js/sdk";
import type { ContentBlock } from "../index.js";
import { mediaTypeOf } from "../model/media.js";
import { attachment, messageContent } from "./attachments.js";
import { KEEPALIVE_MS } from "./http.js";
import { callKey, type RunLog } from "./run-log.js";

/** Resolves once the run ends, waits for input, or is not driven here. */
export async function settled(log: RunLog): Promise<void> {
  while (!log.blocked && !log.finished && log.status !== "detached") await log.changed(KEEPALIVE_MS);
}

export function stopReason(log: RunLog): string | undefined {
  const end = log.own.findLast((e) => e.type === "run_completed");
  return end?.type === "run_completed" ? end.stopReason : undefined;
}

export function idOf(log: RunLog, entry: { runId: string; call: { id: string } }): string {
  return entry.runId === log.runId ? entry.call.id : callKey(entry.runId, entry.call.id);
}

/** Events that end a run of text (the next text is another artifact). */
export function breaksText(type: string): boolean {
  return type === "turn_started" || type === "tool_call_requested" || type === "reasoning_delta";
}

/** The run's own text, cut where `breaksText` says, with ids the stream used. */
export function segments(log: RunLog): Array<{ id: string; text: string }> {
  const out: Array<{ id: string; text: string }> = [];
  let current: { id: string; text: string } | undefined;
  for (const event of log.own) {
    if (event.type === "text_delta" && event.delta !== "") {
      if (!current) {
        current = { id: `${log.runId}-${event.seq}`, text: "" };
        out.push(current);
      }
      current.text += event.delta;
    } else if (breaksText(event.type)) current = undefined;
  }
  return out;
}

// Typed out: the inferred type names the SDK's Part through a private chunk of its dist, which
// a declaration file cannot reference (TS2883 broke `npm run build`).
export function artifact(
  id: string,
  text: string,
): {
  artifactId: string;
  name: string;
  description: string;
  parts: Part[];
  metadata: undefined;
  extensions: string[];
} {
  return {
    artifactId: id,
    name: "text",
    description: "",
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
  };
}

export function textPart(text: string): Part {
  return {
    content: { $case: "text", value: text },
    metadata: undefined,
    filename: "",
    mediaType: "text/plain",
  };
}

export function textOf(parts: readonly Part[]): string {
  return parts
    .flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : []))
    .join("\n")
    .trim();
}

/**
 * A message's text and files as the content of a user message: a file sent as its bytes (`raw`)
 * or by `url` becomes an image, audio or document part by its media type (given, or guessed from
 * its filename); `data` parts are not content (they answer a waiting call). Throws `HttpError`
 * 400 naming the part for a file the run cannot take.
 */
export function contentOf(parts: readonly Part[]): string | ContentBlock[] {
  const blocks: ContentBlock[] = [];
  parts.forEach((part, index) => {
    const content = part.content;
    if (content?.$case === "text") {
      if (content.value !== "") blocks.push({ type: "text", text: content.value });
      return;
    }
    if (content?.$case !== "raw" && content?.$case !== "url") return;
    const mediaType = part.mediaType || (part.filename ? mediaTypeOf(part.filename) : undefined);
    const url =
      content.$case === "url"
        ? content.value
        : `data:${mediaType ?? "application/octet-stream"};base64,${Buffer.from(content.value).toString("base64")}`;
    blocks.push(
      attachment(`message part ${index}`, {
        url,
        mediaType,
        ...(part.filename && { filename: part.filename }),
      }),
    );
  });
  return messageContent(blocks);
}

/** True when a message has a file part (`raw` bytes or a `url`). */
export function hasFiles(parts: readonly Part[]): boolean {
  return parts.some((p) => p.content?.$case === "raw" || p.content?.$case === "url");
}

export function dataOf(parts: readonly Part[]): Record<string, unknown> | undefined {
  for (const part of parts)
    if (part.content?.$case === "data" && part.content.value && typeof part.content.value === "object")
      return part.content.value as Record<string, unknown>;
  return undefined;
}

export function plain(content: string | ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
}
