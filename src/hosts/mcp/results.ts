import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { fence } from "../../builtin-tools/fence.js";
import { ToolError } from "../../errors.js";
import type { ContentBlock } from "../../model/types.js";
import { detached } from "../../tool/render.js";
import type { ToolOutput } from "../../tool/types.js";
import { cleanPeerText } from "./peer-text.js";

/**
 * Longest `isError` text passed on to the model. The runner cuts any error message at 10,000
 * characters; staying well below keeps the fence's END marker inside what the model reads.
 */
const MAX_ERROR_CHARS = 8_000;

type McpContent = CallToolResult["content"][number];

/**
 * A `tools/call` result → what a local `execute` returns: `{ content, details? }` with text
 * and image blocks for the model, and `structuredContent` kept in `details` for observers.
 * A result without content blocks shows its structured content to the model as JSON. An
 * `isError` result throws a `ToolError`, so the model reads it as the tool's own answer.
 */
export function toToolOutput(
  result: CallToolResult,
  options: { fence: boolean; source: string },
): ToolOutput {
  const blocks = (result.content ?? []).map(toBlock);
  if (blocks.length === 0 && result.structuredContent !== undefined) {
    blocks.push({ type: "text", text: JSON.stringify(result.structuredContent) });
  }
  if (result.isError) {
    // An error message is not truncated by the runner as output is: bounded here, before fencing.
    let text = blocks
      .filter((b): b is { type: "text"; text: string } => b.type === "text")
      .map((b) => b.text)
      .join("\n");
    if (text.length > MAX_ERROR_CHARS) {
      text = detached(
        `${text.slice(0, MAX_ERROR_CHARS)}\n[… ${text.length - MAX_ERROR_CHARS} more characters not shown]`,
      );
    }
    if (!text) throw new ToolError("the MCP tool reported an error without saying what it was");
    // Not fenced, it is still the server's text in the runner's own framing (`Tool error: …`):
    // cleaned like every other failure text a server writes.
    throw new ToolError(
      options.fence ? fence(text, { source: options.source }) : cleanPeerText(text, MAX_ERROR_CHARS + 100),
    );
  }
  const content = options.fence
    ? blocks.map((b) =>
        b.type === "text" ? { type: "text" as const, text: fence(b.text, { source: options.source }) } : b,
      )
    : blocks;
  const output: ToolOutput = { content };
  if (result.structuredContent !== undefined)
    output.details = { structuredContent: result.structuredContent };
  return output;
}

function toBlock(item: McpContent): ContentBlock {
  switch (item.type) {
    case "text":
      return { type: "text", text: item.text };
    case "image":
      return { type: "image", data: item.data, mimeType: item.mimeType };
    case "audio":
      // No provider here takes audio in a tool result: say it was there rather than drop it.
      return { type: "text", text: `[audio (${item.mimeType}, ${approxBytes(item.data)} bytes) not shown]` };
    case "resource": {
      const { resource } = item;
      if ("text" in resource) {
        return {
          type: "text",
          text: `Resource ${resource.uri}${mime(resource.mimeType)}:\n${resource.text}`,
        };
      }
      if (resource.mimeType?.startsWith("image/")) {
        return { type: "image", data: resource.blob, mimeType: resource.mimeType };
      }
      return {
        type: "text",
        text: `[resource ${resource.uri}${mime(resource.mimeType)}: ${approxBytes(resource.blob)} bytes of binary data not shown]`,
      };
    }
    case "resource_link":
      return {
        type: "text",
        text: `Resource link: ${item.name} <${item.uri}>${mime(item.mimeType)}${item.description ? ` — ${item.description}` : ""}`,
      };
    default:
      return { type: "text", text: JSON.stringify(item) };
  }
}

function mime(mimeType: string | undefined): string {
  return mimeType ? ` (${mimeType})` : "";
}

function approxBytes(base64: string): number {
  return Math.floor((base64.length * 3) / 4);
}
