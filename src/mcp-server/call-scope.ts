import type { ContentBlock, RunEvent } from "../index.js";
import { describeMedia } from "../model/media.js";
import type { ApprovalChannel } from "./approval.js";
import type { ProgressReporter } from "./progress.js";

/** One `tools/call` as the code that runs it sees it. */
export type CallScope = {
  /** Aborts when the client cancels the call (`notifications/cancelled`), the connection closes, or the server closes. */
  signal: AbortSignal;
  approvals: ApprovalChannel;
  /** Present when the client asked for progress (it sent a `progressToken`). */
  progress: ProgressReporter | undefined;
  /** Who the HTTP `auth` function said the caller is; the run's `userId`. */
  userId: string | undefined;
  /** The JSON-RPC id of the request, for the call's id. */
  requestId: string | number;
  /** The client's name from its `initialize`, for the run's input text. */
  clientName: string | undefined;
};

/** Settings every call reads. */
export type CallSettings = {
  deps: unknown;
  /** Sees every event of every run the server starts. */
  onEvent: ((event: RunEvent) => void) | undefined;
};

export type McpContent =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType: string; blob: string } };

/** A `CallToolResult`: what the client receives. */
export type McpToolResult = {
  content: McpContent[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

/** A tool error result, worded as the model would read it (`Tool error: …\nHint: …`). */
export function errorResult(message: string, hint?: string): McpToolResult {
  return {
    content: [{ type: "text", text: `Tool error: ${message}${hint ? `\nHint: ${hint}` : ""}` }],
    isError: true,
  };
}

/**
 * Quiver content blocks as MCP content: text, images, audio, a document's bytes as an embedded
 * resource, and a part given by URL as text naming it; reasoning is the model's, never a result's.
 */
export function mcpContent(content: string | readonly ContentBlock[]): McpContent[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  const blocks: McpContent[] = [];
  for (const block of content) {
    if (block.type === "text") blocks.push({ type: "text", text: block.text });
    else if (block.type === "reasoning") continue;
    else if (block.url !== undefined)
      blocks.push({ type: "text", text: `${describeMedia(block)} ${block.url}` });
    else if (block.type === "file") {
      const uri = `file:///${encodeURIComponent(block.filename ?? "attachment")}`;
      blocks.push({ type: "resource", resource: { uri, mimeType: block.mimeType, blob: block.data } });
    } else blocks.push({ type: block.type, data: block.data, mimeType: block.mimeType });
  }
  return blocks.length > 0 ? blocks : [{ type: "text", text: "" }];
}

/** Hands an event to the user's observer; an observer that throws does not stop the call. */
export function observe(settings: CallSettings, event: RunEvent): void {
  if (!settings.onEvent) return;
  try {
    settings.onEvent(event);
  } catch {
    // The observer's own failure is not the call's.
  }
}

export function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" && message !== "" ? message : String(error);
}
