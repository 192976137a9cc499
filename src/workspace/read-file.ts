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
      return {
        content: [{ type: "text", text: numberedLines(bytes, target.relative, offset, limit) }],
        details,
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
 * notice naming the offset to continue from. Works on the bytes — newlines found with
 * `indexOf` (memchr), only the lines shown decoded — so a 10 MB file costs little more than
 * reading and hashing it.
 */
export function numberedLines(bytes: Uint8Array, name: string, offset: number, limit: number): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bom = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  const end = buf.length;
  if (end - bom === 0) return `${name} is empty.`;
  let at = bom;
  for (let line = 1; line < offset; line++) {
    const next = buf.indexOf(10, at);
    if (next === -1 || next === end - 1) {
      throw new ToolError(`offset ${offset} is past the end of ${name} (${line} lines)`, {
        hint: `Use an offset between 1 and ${line}.`,
      });
    }
    at = next + 1;
  }
  const maxLines = Math.min(limit, MAX_READ_LINES);
  const out: string[] = [];
  let chars = 0;
  let line = offset;
  let stoppedByChars = false;
  while (at < end && out.length < maxLines) {
    let stop = buf.indexOf(10, at);
    if (stop === -1) stop = end;
    const contentEnd = stop > at && buf[stop - 1] === 13 ? stop - 1 : stop;
    let content: string;
    if (contentEnd - at > MAX_LINE_CHARS * 4) {
      content = `${buf.toString("utf8", at, at + MAX_LINE_CHARS * 4).slice(0, MAX_LINE_CHARS)} [... line cut: ${(contentEnd - at).toLocaleString("en-US")} bytes ...]`;
    } else {
      content = buf.toString("utf8", at, contentEnd);
      if (content.length > MAX_LINE_CHARS) {
        content = `${content.slice(0, MAX_LINE_CHARS)} [... line cut: ${(contentEnd - at).toLocaleString("en-US")} bytes ...]`;
      }
    }
    const rendered = `${line}\t${content}`;
    if (chars + rendered.length + 1 > MAX_READ_CHARS && out.length > 0) {
      stoppedByChars = true;
      break;
    }
    out.push(rendered);
    chars += rendered.length + 1;
    line++;
    at = stop + 1;
  }
  if (at < end) {
    const why = stoppedByChars
      ? `the ${MAX_READ_CHARS.toLocaleString("en-US")}-character limit of one call`
      : `the ${maxLines.toLocaleString("en-US")}-line limit`;
    out.push(
      `[showing lines ${offset}-${line - 1} of ${countLines(buf)} (${why}); continue with offset ${line}]`,
    );
  }
  return out.join("\n");
}

/** Lines in the file: newlines, plus one for a last line without its newline. */
function countLines(buf: Buffer): number {
  let lines = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) lines++;
  return buf.length === 0 || buf[buf.length - 1] === 10 ? lines : lines + 1;
}
