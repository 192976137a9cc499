/** Transcripts shared by the provider tests: a tool round trip whose result holds an image. */
import type { Message, ModelRequest, ModelStreamEvent, ToolSpec } from "../../src/model/types.js";

/** A 1×1 PNG. */
export const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

export const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      city: { type: "string", description: "City name" },
      unit: { type: "string", enum: ["c", "f"] },
    },
    required: ["city"],
  },
  strict: true,
};

export const timeTool: ToolSpec = {
  name: "get_time",
  description: "Current time in a time zone.",
  parameters: { type: "object", properties: { tz: { type: "string" } }, required: ["tz"] },
};

export const userAsks: Message[] = [{ role: "user", content: "What's the weather in Paris?" }];

/** user → assistant(tool call) → tool(text + image) : the model is asked to continue. */
export function toolRoundTrip(callId = "call_Vq3kT8mZ2nXr5LpA7wYb1cDe"): Message[] {
  return [
    { role: "user", content: "What's the weather in Paris? Show me the radar." },
    {
      role: "assistant",
      content: "Let me check.",
      toolCalls: [{ id: callId, name: "get_weather", args: { city: "Paris" } }],
    },
    {
      role: "tool",
      toolCallId: callId,
      name: "get_weather",
      content: [
        { type: "text", text: "18°C, light rain" },
        { type: "image", data: PNG_1PX, mimeType: "image/png" },
      ],
      isError: false,
    },
  ];
}

/** The request most provider tests send: a terse system prompt and the weather question. */
export const ask = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  system: "You are terse.",
  messages: userAsks,
  tools: [],
  settings: {},
  ...over,
});

/** The text a stream said. */
export const text = (events: ModelStreamEvent[]) =>
  events.map((e) => (e.type === "text_delta" ? e.delta : "")).join("");

/** The events of one type. */
export const ofType = <T extends ModelStreamEvent["type"]>(events: ModelStreamEvent[], type: T) =>
  events.filter((e): e is Extract<ModelStreamEvent, { type: T }> => e.type === type);
