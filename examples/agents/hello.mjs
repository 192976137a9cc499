// An agent file for the `quiver` command. `npx quiver init` writes a copy of it as agent.mjs
// (the package ships it as node_modules/quiver-agents/examples/agents/hello.mjs):
//
//   npx quiver chat agent.mjs
//   npx quiver run agent.mjs "what time is it?"
//   npx quiver chat agent.mjs --model openai:gpt-4.1-mini   (a real model; needs OPENAI_API_KEY)
//
// With no --model (and no QUIVER_MODEL), a ScriptedModel answers: it follows a tiny script
// and is not a language model. Ask it for the time, or to save a note (it asks before writing).
import { appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, ScriptedModel, tool } from "quiver-agents";
import { now } from "quiver-agents/tools";

const notesFile = join(tmpdir(), "quiver-hello-notes.txt");

const saveNote = tool({
  name: "save_note",
  description: `Append a note to ${notesFile}.`,
  parameters: {
    type: "object",
    properties: { text: { type: "string", description: "The note" } },
    required: ["text"],
  },
  destructive: true, // so the default permissions ask before it runs
  execute: async ({ text }) => {
    await appendFile(notesFile, `${new Date().toISOString()} ${text}\n`);
    return `saved to ${notesFile}`;
  },
});

/** The script: a function of the conversation, so every message gets a fitting answer. */
function respond(request) {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: `Done — ${last.content}` };
  const said = typeof last?.content === "string" ? last.content : "";
  if (/time|date|day/i.test(said))
    return { text: "Let me check the clock.", toolCalls: [{ name: "now", args: {} }] };
  if (/note|remember|save/i.test(said))
    return { text: "I'll save that.", toolCalls: [{ name: "save_note", args: { text: said } }] };
  return {
    text:
      "Hi! I'm a ScriptedModel following a short script, not a language model. " +
      'Ask me "what time is it?" or "save a note: buy milk" (I ask before writing), ' +
      "or start me with --model provider:id to talk to a real model.",
  };
}

export default new Agent({
  name: "hello",
  model: process.env.QUIVER_MODEL ?? new ScriptedModel(Array.from({ length: 1000 }, () => respond)),
  instructions:
    "You are a friendly assistant. Use now for the time and save_note when asked to remember something.",
  tools: [now, saveNote],
});
