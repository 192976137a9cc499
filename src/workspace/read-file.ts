import path from "node:path";
import { ToolError } from "../errors.js";
import type { ContentBlock } from "../model/types.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { ChunkReader, MAX_READ_CHARS, MAX_READ_LINES, numberedWindow } from "./file-window.js";
import { MAX_EDIT_BYTES, type ReadLedger } from "./ledger.js";
import { openInside } from "./opened-file.js";
import { codeOf, resolveInside } from "./paths.js";
import { looksBinary } from "./text-file.js";

export { MAX_READ_CHARS, MAX_READ_LINES } from "./file-window.js";

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
      const handle = await openInside(target.real, target.root, given).catch((error) => {
        if (error instanceof ToolError) throw error;
        throw new ToolError(
          codeOf(error) === "ENOENT" ? `${given} does not exist` : `cannot read ${given} (${codeOf(error)})`,
          codeOf(error) === "ENOENT" ? { hint: "list_files shows what exists." } : {},
        );
      });
      try {
        // Every fact below is about the opened descriptor, not about whatever the path names now.
        const info = await handle.stat();
        if (info.isDirectory())
          throw new ToolError(`${given} is a directory`, { hint: "Use list_files to see what it holds." });
        if (!info.isFile()) throw new ToolError(`${given} is not a regular file`);
        const mimeType = IMAGE_TYPES[path.extname(target.real).toLowerCase()];
        if (mimeType && info.size > MAX_IMAGE_BYTES) {
          throw new ToolError(
            `${given} is an image of ${info.size.toLocaleString("en-US")} bytes, over the ${MAX_IMAGE_BYTES.toLocaleString("en-US")}-byte limit`,
          );
        }
        const reader = new ChunkReader(handle, info.size <= MAX_EDIT_BYTES ? MAX_EDIT_BYTES : undefined);
        const record = () => {
          // A file too large to hash is not recorded: write_file and edit_file refuse it anyway.
          const sha256 = reader.sha256();
          if (sha256) ledger.record(ctx, { root: target.root, path: target.relative, sha256 });
          return { root: target.root, path: target.relative, ...(sha256 && { sha256 }), bytes: info.size };
        };
        if (mimeType) {
          const parts: Buffer[] = [];
          let size = 0;
          await reader.drain((chunk) => {
            size += chunk.length;
            // It grew while being read: the same limit holds.
            if (size > MAX_IMAGE_BYTES)
              throw new ToolError(
                `${given} grew past ${MAX_IMAGE_BYTES.toLocaleString("en-US")} bytes while being read`,
              );
            parts.push(Buffer.from(chunk));
          });
          const bytes = Buffer.concat(parts);
          const content: ContentBlock[] = [
            {
              type: "text",
              text: `${target.relative}: ${mimeType} image, ${bytes.length.toLocaleString("en-US")} bytes`,
            },
            { type: "image", data: bytes.toString("base64"), mimeType },
          ];
          return { content, details: record() };
        }
        const head = await reader.head();
        if (head && looksBinary(head)) {
          const sha256 = await reader.drain();
          const text =
            `${target.relative}: binary file, ${info.size.toLocaleString("en-US")} bytes, ` +
            `modified ${info.mtime.toISOString()}${sha256 ? `, sha256 ${sha256}` : ""}. Its content is not shown.`;
          return { content: [{ type: "text", text }], details: record() };
        }
        const text = await numberedWindow(reader, target.relative, info.size, offset, limit);
        // The window may end before the file does: the rest goes through the hash only.
        await reader.drain();
        return { content: [{ type: "text", text }], details: record() };
      } finally {
        await handle.close();
      }
    },
  });
}
