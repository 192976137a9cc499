import { open, stat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../errors.js";
import type { ContentBlock } from "../model/types.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { type FileFact, type ReadLedger, sha256 } from "./ledger.js";
import { codeOf, resolveInside } from "./paths.js";
import { looksBinary } from "./text-file.js";

export const MAX_READ_LINES = 2_000;
export const MAX_READ_CHARS = 50_000;
/** A longer line is cut; grep_files or shell can reach the rest of it. */
const MAX_LINE_CHARS = 2_000;
const MAX_IMAGE_BYTES = 5_000_000;
const IMAGE_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};

type ReadArgs = { path: string; offset?: number; limit?: number };

export function readFileTool(root: string, ledger: ReadLedger): Tool<ReadArgs> {
  return tool({
    name: "read_file",
    label: "Read file",
    description:
      "Read a file of the workspace. Text comes back as numbered lines (`N<TAB>line`), at most " +
      `${MAX_READ_LINES.toLocaleString("en-US")} lines or ${MAX_READ_CHARS.toLocaleString("en-US")} characters per call; ` +
      "a notice names the offset to continue from. Images come back as images; other binary files as metadata. " +
      "Read a file before writing or editing it.",
    parameters: jsonSchema<ReadArgs>({
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace root." },
        offset: { type: "integer", minimum: 1, description: "First line to read (1-based). Default 1." },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_READ_LINES,
          description: `How many lines to read. Default and maximum ${MAX_READ_LINES}.`,
        },
      },
      required: ["path"],
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    // The tool keeps itself under this; the margin is for the notice.
    maxOutputChars: MAX_READ_CHARS + 2_000,
    execute: async ({ path: given, offset = 1, limit = MAX_READ_LINES }, ctx) => {
      const target = await resolveInside(root, given);
      const info = await stat(target.real).catch((error) => {
        throw new ToolError(
          codeOf(error) === "ENOENT" ? `${given} does not exist` : `cannot read ${given} (${codeOf(error)})`,
          { hint: "list_files shows what exists." },
        );
      });
      if (info.isDirectory())
        throw new ToolError(`${given} is a directory`, { hint: "Use list_files to see what it holds." });
      if (!info.isFile()) throw new ToolError(`${given} is not a regular file`);
      const mimeType = IMAGE_TYPES[path.extname(target.real).toLowerCase()];
      if (mimeType && info.size > MAX_IMAGE_BYTES) {
        throw new ToolError(
          `${given} is an image of ${info.size.toLocaleString("en-US")} bytes, over the ${MAX_IMAGE_BYTES.toLocaleString("en-US")}-byte limit`,
        );
      }
      const bytes = await readWhole(target.real, given);
      const fact: FileFact = { root: target.root, path: target.relative, sha256: sha256(bytes) };
      ledger.record(ctx, fact);
      const details = { ...fact, bytes: bytes.length };
      if (mimeType) {
        const content: ContentBlock[] = [
          {
            type: "text",
            text: `${target.relative}: ${mimeType} image, ${bytes.length.toLocaleString("en-US")} bytes`,
          },
          { type: "image", data: Buffer.from(bytes).toString("base64"), mimeType },
        ];
        return { content, details };
      }
      if (looksBinary(bytes)) {
        const text =
          `${target.relative}: binary file, ${bytes.length.toLocaleString("en-US")} bytes, ` +
          `modified ${info.mtime.toISOString()}, sha256 ${fact.sha256}. Its content is not shown.`;
        return { content: [{ type: "text", text }], details };
      }
      const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8");
      return {
        content: [{ type: "text", text: numberedLines(text, target.relative, offset, limit) }],
        details: { ...details, lines: countLines(text) },
      };
    },
  });
}

async function readWhole(real: string, given: string): Promise<Uint8Array> {
  try {
    const handle = await open(real, "r");
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new ToolError(`cannot read ${given} (${codeOf(error)})`);
  }
}

/**
 * Lines `offset`… as `N\tline`, stopping at `limit` lines or the character budget, with a
 * notice naming the offset to continue from. Walks the text with `indexOf` rather than
 * splitting it, so a 10 MB file costs only the part that is shown.
 */
export function numberedLines(text: string, name: string, offset: number, limit: number): string {
  if (text === "") return `${name} is empty.`;
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let at = 0;
  for (let line = 1; line < offset; line++) {
    const next = body.indexOf("\n", at);
    if (next === -1 || next === body.length - 1) {
      throw new ToolError(`offset ${offset} is past the end of ${name} (${line} lines)`, {
        hint: `Use an offset between 1 and ${line}.`,
      });
    }
    at = next + 1;
  }
  const out: string[] = [];
  let chars = 0;
  let line = offset;
  let stoppedByChars = false;
  while (at < body.length && out.length < Math.min(limit, MAX_READ_LINES)) {
    let end = body.indexOf("\n", at);
    if (end === -1) end = body.length;
    let content = body.slice(at, end > at && body.charCodeAt(end - 1) === 13 ? end - 1 : end);
    if (content.length > MAX_LINE_CHARS) {
      content = `${content.slice(0, MAX_LINE_CHARS)} [... line cut: ${content.length.toLocaleString("en-US")} chars ...]`;
    }
    const rendered = `${line}\t${content}`;
    if (chars + rendered.length + 1 > MAX_READ_CHARS && out.length > 0) {
      stoppedByChars = true;
      break;
    }
    out.push(rendered);
    chars += rendered.length + 1;
    line++;
    at = end + 1;
  }
  if (at < body.length) {
    const total = countLines(body);
    const why = stoppedByChars
      ? `the ${MAX_READ_CHARS.toLocaleString("en-US")}-character limit of one call`
      : `the ${Math.min(limit, MAX_READ_LINES).toLocaleString("en-US")}-line limit`;
    out.push(`[showing lines ${offset}-${line - 1} of ${total} (${why}); continue with offset ${line}]`);
  }
  return out.join("\n");
}

function countLines(text: string): number {
  let lines = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines++;
  return text.endsWith("\n") || text === "" ? lines : lines + 1;
}
