import { stat } from "node:fs/promises";
import { ToolError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { asksForSkipped, globMatcher } from "./globs.js";
import { codeOf, resolveInside } from "./paths.js";
import { TimeSlicer, walkFiles } from "./walk.js";

const DEFAULT_LIST_LIMIT = 500;
const MAX_LIST_LIMIT = 5_000;

type ListArgs = { path?: string; glob?: string; limit?: number };

export function listFilesTool(root: string): Tool<ListArgs> {
  return tool({
    name: "list_files",
    label: "List files",
    description:
      "List files under a directory of the workspace, recursively, in name order. Files ignored by .gitignore, " +
      "and the .git and node_modules directories, are left out unless the path or glob names them. " +
      'Filter with a glob ("**/*.ts", "src/**/test*"); a glob without "/" matches file names at any depth.',
    parameters: jsonSchema<ListArgs>({
      type: "object",
      properties: {
        path: { type: "string", description: "Directory relative to the workspace root. Default: the root." },
        glob: { type: "string", description: "Only files whose root-relative path matches this glob." },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_LIST_LIMIT,
          description: `At most this many files. Default ${DEFAULT_LIST_LIMIT}.`,
        },
      },
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    execute: async ({ path = ".", glob, limit = DEFAULT_LIST_LIMIT }, ctx) => {
      const start = await resolveInside(root, path);
      const info = await stat(start.real).catch((error) => {
        throw new ToolError(
          codeOf(error) === "ENOENT" ? `${path} does not exist` : `cannot list ${path} (${codeOf(error)})`,
        );
      });
      if (!info.isDirectory())
        throw new ToolError(`${path} is not a directory`, { hint: "read_file reads a file." });
      const matches = globMatcher(glob);
      const files: string[] = [];
      let more = 0;
      const slicer = new TimeSlicer(ctx.signal);
      for (const entry of walkFiles({
        root: start.root,
        start: start.real,
        includeSkipped: asksForSkipped(start.relative, glob),
      })) {
        await slicer.tick();
        if (matches && !matches(entry.relative)) continue;
        if (files.length < limit)
          files.push(entry.symlink ? `${entry.relative} (symbolic link)` : entry.relative);
        else more++;
      }
      if (files.length === 0) {
        return `No files${glob ? ` matching ${glob}` : ""} under ${start.relative}.`;
      }
      if (more > 0)
        files.push(
          `[${more.toLocaleString("en-US")} more files not shown: narrow with path or glob, or raise limit]`,
        );
      return files.join("\n");
    },
  });
}
