import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import type { EditArgs, FileEditor, WriteArgs } from "./file-edits.js";

/**
 * `write_file`: a destructive barrier, one of the built-in edit tools that `acceptEdits` passes —
 * except for protected paths, which its permission rule sends to a person.
 */
export function writeFileTool(editor: FileEditor): Tool<WriteArgs> {
  return tool({
    name: "write_file",
    label: "Write file",
    description:
      "Create a file, or replace the whole content of one, in the workspace (parent directories are created). " +
      "An existing file must have been read with read_file in this run and be unchanged since. " +
      "Prefer edit_file to change part of a file.",
    parameters: jsonSchema<WriteArgs>({
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace root." },
        content: { type: "string", description: "The complete new content of the file." },
      },
      required: ["path", "content"],
      additionalProperties: false,
    }),
    destructive: true,
    parallel: false,
    editsFiles: true,
    permissionRule: (args) => editor.protectedPaths.rule("write_file", args),
    describeCall: (args, ctx) => editor.describe("write", args, ctx),
    execute: async (args, ctx) => editor.apply(await editor.planWrite(args, ctx, true), ctx),
  });
}

/** `edit_file`: exact string replacement; a destructive barrier and a built-in edit tool. */
export function editFileTool(editor: FileEditor): Tool<EditArgs> {
  return tool({
    name: "edit_file",
    label: "Edit file",
    description:
      "Replace exact text in a file of the workspace. old_string must match exactly once (copy it from read_file " +
      "without the line-number prefix, with enough surrounding lines to be unique), or set replace_all. " +
      "The file must have been read in this run and be unchanged since. Line endings and a byte-order mark are kept.",
    parameters: jsonSchema<EditArgs>({
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace root." },
        old_string: { type: "string", description: "The exact text to replace." },
        new_string: { type: "string", description: "The text to put in its place." },
        replace_all: {
          type: "boolean",
          default: false,
          description: "Replace every occurrence instead of requiring exactly one.",
        },
      },
      required: ["path", "old_string", "new_string"],
      additionalProperties: false,
    }),
    destructive: true,
    parallel: false,
    editsFiles: true,
    permissionRule: (args) => editor.protectedPaths.rule("edit_file", args),
    describeCall: (args, ctx) => editor.describe("edit", args, ctx),
    execute: async (args, ctx) => editor.apply(await editor.planEdit(args, ctx, true), ctx),
  });
}
