import * as ai6 from "ai";
import * as ai7 from "ai-v7";
import type { QuiverServer } from "quiver-agents/server";

/** The parts of a UI message these tests read. */
export type Part = {
  type: string;
  text?: string;
  state?: string;
  toolCallId?: string;
  input?: unknown;
  output?: unknown;
  errorText?: string;
  preliminary?: boolean;
  approval?: { id: string; approved?: boolean };
  id?: string;
  data?: unknown;
};
export type Message = { id: string; role: string; parts: Part[]; metadata?: unknown };

/** What a test drives: the AI SDK's own `AbstractChat` (the core of `useChat`), either version. */
export interface TestChat {
  readonly messages: Message[];
  readonly status: string;
  readonly error: Error | undefined;
  sendMessage(message?: { text: string }): Promise<void>;
  resumeStream(): Promise<void>;
  addToolApprovalResponse(response: { id: string; approved: boolean; reason?: string }): Promise<void>;
  addToolOutput(output: { tool: string; toolCallId: string; output: unknown }): Promise<void>;
  stop(): Promise<void>;
}

export type ClientVersion = "ai 6" | "ai 7";
export type AutoSend = "approvals" | "tool-calls" | undefined;

function makeState() {
  const state = {
    status: "ready" as string,
    error: undefined as Error | undefined,
    messages: [] as unknown[],
    pushMessage: (m: unknown) => {
      state.messages = [...state.messages, m];
    },
    popMessage: () => {
      state.messages = state.messages.slice(0, -1);
    },
    replaceMessage: (i: number, m: unknown) => {
      const next = [...state.messages];
      next[i] = m;
      state.messages = next;
    },
    snapshot: <T>(thing: T): T => structuredClone(thing),
  };
  return state;
}

/** A chat with the given client library, posting to `server.fetch` (no socket). */
export function chatClient(
  version: ClientVersion,
  server: QuiverServer,
  options: { id: string; autoSend?: AutoSend; headers?: Record<string, string> },
): TestChat {
  const lib = (version === "ai 6" ? ai6 : ai7) as unknown as typeof ai6;
  const transport = new lib.DefaultChatTransport({
    api: "http://127.0.0.1/api/chat",
    fetch: ((input: string | URL | Request, init?: RequestInit) =>
      server.fetch(new Request(input, init))) as typeof fetch,
    ...(options.headers && { headers: options.headers }),
  });
  class Chat extends lib.AbstractChat<ai6.UIMessage> {}
  const sendAutomaticallyWhen =
    options.autoSend === "approvals"
      ? lib.lastAssistantMessageIsCompleteWithApprovalResponses
      : options.autoSend === "tool-calls"
        ? lib.lastAssistantMessageIsCompleteWithToolCalls
        : undefined;
  return new Chat({
    id: options.id,
    transport,
    state: makeState() as never,
    ...(sendAutomaticallyWhen && { sendAutomaticallyWhen }),
  }) as unknown as TestChat;
}

export const VERSIONS: ClientVersion[] = ["ai 6", "ai 7"];

export function lastAssistant(chat: TestChat): Message {
  const m = [...chat.messages].reverse().find((x) => x.role === "assistant");
  if (!m) throw new Error("no assistant message");
  return m;
}

export function textOf(message: Message): string {
  return message.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("");
}
