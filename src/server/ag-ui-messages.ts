import type { Message as AgUiMessage, RunAgentInput } from "@ag-ui/core";
import type { ContentBlock, Message } from "../index.js";

/** Quiver messages as AG-UI messages (text; system messages are the server's and stay there). */
export function toAgUi(messages: readonly Message[], prefix: string): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  messages.forEach((message, i) => {
    const id = `${prefix}-m${i}`;
    if (message.role === "user") out.push({ id, role: "user", content: plain(message.content) });
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
 * the text of the client's user and assistant messages. Tool calls the client shows are not
 * replayed to the model as calls: the client may not be trusted to report them faithfully.
 */
export function historyOf(messages: readonly AgUiMessage[]): Message[] {
  const history: Message[] = [];
  for (const message of messages) {
    if (message.role !== "user" && message.role !== "assistant") continue;
    const text = textOf(message.content);
    if (text) history.push({ role: message.role, content: text });
  }
  return history;
}
