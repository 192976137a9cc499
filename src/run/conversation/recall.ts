import { ToolError } from "../../errors.js";
import { describeMedia, isMediaBlock } from "../../model/media.js";
import type { MediaBlock, Message } from "../../model/types.js";
import type { RunStore } from "../../store/types.js";
import { jsonSchema } from "../../tool/json-schema.js";
import { type Tool, tool } from "../../tool/tool.js";
import { viewOf } from "./context-view.js";

/** The tool a run is offered once a result was truncated or elided by compaction: it reads the full text back. */
export const RECALL_TOOL_NAME = "recall_tool_result";
const DEFAULT_SLICE = 20_000;
const MAX_SLICE = 100_000;

/** The artifact key of a call's full output. */
export function resultArtifactKey(callId: string): string {
  return `tool-result:${callId}`;
}

/** What the truncation marker adds when the full text is stored. */
export function recallNote(callId: string, keptHead: number): string {
  return `[the full output is stored: call ${RECALL_TOOL_NAME} with call_id "${callId}" and offset ${keptHead} to read on]`;
}

type RecallArgs = { call_id: string; offset?: number; max_chars?: number };

/**
 * The tool a run gets when it has a store or compacts its context: it returns slices of tool
 * results the model cannot see in full — truncated ones, whose full text the store kept, and
 * ones context compaction elided or summarised, read back from the transcript (which keeps
 * everything) — so a long or old output is never a dead end.
 *
 * @example
 * const agent = new Agent({ name: "a", model, tools: [lookup, recallTool(store)] });
 */
export function recallTool(store?: RunStore): Tool<RecallArgs> {
  return newRecallTool(store);
}

// One recall tool per store (and one without): every run offers it, and compiling its schema
// per run would cost more than the rest of a short run's setup.
const sharedTools = new WeakMap<RunStore, Tool<RecallArgs>>();
let storeless: Tool<RecallArgs> | undefined;

/** The run's recall tool: shared between runs on the same store. */
export function sharedRecallTool(store: RunStore | undefined): Tool<RecallArgs> {
  if (!store) {
    storeless ??= newRecallTool(undefined);
    return storeless;
  }
  let shared = sharedTools.get(store);
  if (!shared) {
    shared = newRecallTool(store);
    sharedTools.set(store, shared);
  }
  return shared;
}

function newRecallTool(store: RunStore | undefined): Tool<RecallArgs> {
  return tool({
    name: RECALL_TOOL_NAME,
    description:
      "Read a tool result that was truncated or elided. Give the call_id the notice names and the " +
      "character offset to start from; you get up to max_chars characters and the offset to continue with.",
    parameters: jsonSchema<RecallArgs>({
      type: "object",
      properties: {
        call_id: { type: "string", description: "The id of the call whose output was truncated or elided." },
        offset: {
          type: "integer",
          minimum: 0,
          default: 0,
          description: "Where to start reading, in characters.",
        },
        max_chars: { type: "integer", minimum: 1, maximum: MAX_SLICE, default: DEFAULT_SLICE },
      },
      required: ["call_id"],
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    maxOutputChars: MAX_SLICE + 500,
    execute: async ({ call_id, offset = 0, max_chars = DEFAULT_SLICE }, ctx) => {
      const stored = store ? await store.getArtifact(ctx.runId, resultArtifactKey(call_id)) : undefined;
      const hidden = stored === undefined ? hiddenResult(ctx.transcript, call_id) : undefined;
      const text = stored ?? hidden?.text;
      if (text === undefined) {
        throw new ToolError(`no stored output for call ${call_id}`, {
          hint: "Only results that were truncated or elided can be recalled; use the call_id from the notice.",
        });
      }
      const slice = text.slice(offset, offset + max_chars);
      const end = offset + slice.length;
      const rest = text.length - end;
      const notice =
        rest > 0
          ? `\n[... ${rest.toLocaleString("en-US")} more chars: continue with offset ${end}]`
          : "\n[end of output]";
      const page = `[chars ${offset}-${end} of ${text.length}]\n${slice}${notice}`;
      // The images and documents of an elided result come back with its first slice: they are
      // what a model recalls a screenshot for, and text offsets do not reach them.
      if (offset === 0 && hidden?.media.length)
        return { content: [{ type: "text" as const, text: page }, ...hidden.media] };
      return page;
    },
  });
}

/**
 * A result the model sees only as a stub or through a summary, by its call id (O(1)): its text
 * (media named in place) and its media parts.
 */
function hiddenResult(
  transcript: readonly Message[],
  callId: string,
): { text: string; media: MediaBlock[] } | undefined {
  const index = viewOf(transcript)?.hiddenIndex(callId);
  if (index === undefined) return undefined;
  const message = transcript[index];
  if (message?.role !== "tool") return undefined;
  if (typeof message.content === "string") return { text: message.content, media: [] };
  const media = message.content.filter(isMediaBlock);
  const text = message.content
    .map((block) => (isMediaBlock(block) ? describeMedia(block) : block.type === "text" ? block.text : ""))
    .join("\n");
  return { text, media };
}
