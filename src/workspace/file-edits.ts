import type { FileHandle } from "node:fs/promises";
import type { RunContext } from "../contract/run-context.js";
import { ToolError } from "../errors.js";
import { atomicWrite } from "./atomic-write.js";
import { unifiedDiff } from "./diff.js";
import { ChunkReader } from "./file-window.js";
import { type FileFact, MAX_EDIT_BYTES, type ReadLedger, sha256 } from "./ledger.js";
import { openInside } from "./opened-file.js";
import { codeOf, type ResolvedPath, resolveInside } from "./paths.js";
import type { ProtectedPaths } from "./protected-paths.js";
import { asParsed, formatText, lineNumbersAt, looksBinary, parseText, type TextFile } from "./text-file.js";

export type WriteArgs = { path: string; content: string };
export type EditArgs = { path: string; old_string: string; new_string: string; replace_all?: boolean };

/** A planned change: what is on disk now and what will be. */
type Plan = {
  target: ResolvedPath;
  /** The file's current bytes, absent for a new file. */
  before?: Buffer;
  beforeText?: string;
  afterText: string;
  /** What the tool tells the model. */
  summary: string;
  /** What an approval prompt says the call will do. */
  prompt: string;
};

/**
 * The file half of `write_file` and `edit_file`: the read-before-write check, the edit itself,
 * and the atomic write. Kept apart from the tool definitions so approval prompts can show the
 * same change (as a diff) that the tool would make.
 */
export class FileEditor {
  constructor(
    readonly root: string,
    readonly ledger: ReadLedger,
    readonly protectedPaths: ProtectedPaths,
  ) {}

  async planWrite({ path, content }: WriteArgs, ctx: RunContext, check: boolean): Promise<Plan> {
    const target = await this.#resolve(path);
    const before = await this.#current(target, path, ctx, check, "write");
    if (before === undefined) {
      return {
        target,
        afterText: content,
        summary: `Created ${target.relative} (${describeSize(content)}).`,
        prompt: `Create ${target.relative} (${describeSize(content)})`,
      };
    }
    // An existing file keeps its BOM and CRLF line endings unless the new content has its own.
    const style = parseText(before.toString("utf8"));
    const afterText = content.includes("\r\n") ? content : formatText(content, style);
    return {
      target,
      before,
      beforeText: before.toString("utf8"),
      afterText,
      summary: `Wrote ${target.relative} (${describeSize(content)}, replacing ${describeSize(before.toString("utf8"))}).`,
      prompt: `Overwrite ${target.relative} (${describeSize(content)}, replacing ${describeSize(before.toString("utf8"))})`,
    };
  }

  async planEdit(args: EditArgs, ctx: RunContext, check: boolean): Promise<Plan> {
    const { path, old_string, new_string, replace_all = false } = args;
    if (old_string === "") {
      throw new ToolError("old_string is empty", {
        hint: "Quote the exact text to replace, or use write_file to create a file.",
      });
    }
    if (old_string === new_string)
      throw new ToolError("old_string and new_string are the same: nothing would change");
    const target = await this.#resolve(path);
    const before = await this.#current(target, path, ctx, check, "edit");
    if (before === undefined) {
      throw new ToolError(`${path} does not exist`, { hint: "Use write_file to create a new file." });
    }
    const beforeText = before.toString("utf8");
    // Decoding bytes that are not UTF-8 replaces them; writing the text back would change the
    // file far from the edit. Such a file is refused rather than silently damaged.
    if (looksBinary(before) || !Buffer.from(beforeText, "utf8").equals(before)) {
      throw new ToolError(`${target.relative} is not UTF-8 text, so edit_file cannot change it safely`, {
        hint: "Use the shell (e.g. sed or iconv) for binary or differently encoded files.",
      });
    }
    const file = parseText(beforeText);
    const updated = applyEdit(
      file,
      target.relative,
      asParsed(old_string, file),
      asParsed(new_string, file),
      replace_all,
    );
    const where = `${updated.count === 1 ? "1 occurrence" : `${updated.count} occurrences`} (line${updated.lines.length === 1 ? "" : "s"} ${updated.lines.join(", ")})`;
    return {
      target,
      before,
      beforeText,
      afterText: formatText(updated.text, file),
      summary: `Edited ${target.relative}: replaced ${where}.`,
      prompt: `Edit ${target.relative}: replace ${where}`,
    };
  }

  /** Writes a plan, records the new content in the ledger, and returns the tool's result. */
  async apply(plan: Plan, ctx: RunContext) {
    const bytes = Buffer.from(plan.afterText, "utf8");
    try {
      await atomicWrite(plan.target.real, bytes, plan.target.root, plan.target.relative);
    } catch (error) {
      if (error instanceof ToolError) throw error;
      throw new ToolError(`could not write ${plan.target.relative} (${codeOf(error)})`);
    }
    const fact: FileFact = { root: plan.target.root, path: plan.target.relative, sha256: sha256(bytes) };
    this.ledger.record(ctx, fact);
    return {
      content: [{ type: "text" as const, text: plan.summary }],
      // The diff a UI shows (the CLI prints it); the model reads only the summary.
      details: {
        ...fact,
        bytes: bytes.length,
        diff: unifiedDiff(plan.target.relative, plan.beforeText, plan.afterText),
      },
    };
  }

  /** An approval prompt's description and diff, computed like the call itself (without the ledger check). */
  async describe(kind: "write" | "edit", args: WriteArgs | EditArgs, ctx: RunContext) {
    const verb = kind === "write" ? "Write" : "Edit";
    try {
      const plan =
        kind === "write"
          ? await this.planWrite(args as WriteArgs, ctx, false)
          : await this.planEdit(args as EditArgs, ctx, false);
      return {
        description: plan.prompt,
        details: {
          path: plan.target.relative,
          diff: unifiedDiff(plan.target.relative, plan.beforeText, plan.afterText),
        },
      };
    } catch (error) {
      return { description: `${verb} ${args.path} — this call will fail: ${(error as Error).message}` };
    }
  }

  /**
   * Where the path really lands. The permission rule judged the path as spelled; a write that
   * reaches a protected file by another name — through a symbolic link (`notes.txt` ->
   * `.git/config`, or `.vscode/settings.json` -> `.git/config`), or a spelling the file system folds
   * — was asked about under that other name, if at all, so it is refused here, in every mode: the
   * model can write the file by its own name, and a person then sees which file it is.
   */
  async #resolve(given: string): Promise<ResolvedPath> {
    const target = await resolveInside(this.root, given);
    const reached = this.protectedPaths.match(target.relative);
    if (reached !== undefined && this.protectedPaths.spelled(given) !== target.relative) {
      throw new ToolError(
        `${given} leads to ${target.relative}, a protected file, by another name (a symbolic link or another spelling): ${this.protectedPaths.why(reached)}`,
        { hint: `Write ${target.relative} by its own name, so that a person can approve it.` },
      );
    }
    return target;
  }

  /**
   * The file's bytes now, or `undefined` when it does not exist. With `check`, an existing file
   * must be one this run read or wrote, unchanged since (by content: a touch does not count).
   */
  async #current(
    target: ResolvedPath,
    given: string,
    ctx: RunContext,
    check: boolean,
    verb: "write" | "edit",
  ): Promise<Buffer | undefined> {
    const bytes = await readExisting(target, given);
    if (bytes === undefined) return undefined;
    if (!check) return bytes;
    const seen = this.ledger.seen(ctx, target.root, target.relative);
    if (seen === undefined) {
      throw new ToolError(
        `${target.relative} exists and has not been read in this run, so it cannot be ${verb === "write" ? "overwritten" : "edited"} yet`,
        {
          hint: `Read it with read_file first, then ${verb} it.`,
        },
      );
    }
    if (seen !== sha256(bytes)) {
      throw new ToolError(
        `${target.relative} changed since it was read (its content is no longer what this run saw)`,
        {
          hint: `Read it again with read_file, then ${verb} it based on what it holds now.`,
        },
      );
    }
    return bytes;
  }
}

/**
 * An existing file's bytes, read through a verified descriptor (a link swapped in after the check
 * is refused, not followed), or `undefined` when there is no file. Files over `MAX_EDIT_BYTES`
 * are refused before a byte is read.
 */
async function readExisting(target: ResolvedPath, given: string): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await openInside(target.real, target.root, given);
  } catch (error) {
    if (error instanceof ToolError) throw error;
    const code = codeOf(error);
    if (code === "ENOENT") return undefined;
    if (code === "EISDIR") throw new ToolError(`${given} is a directory`);
    throw new ToolError(`cannot read ${given} (${code})`);
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new ToolError(`${given} is a directory`);
    // A FIFO or a device would block the read (or never end): only regular files are replaced.
    if (!info.isFile()) throw new ToolError(`${given} is not a regular file`);
    if (info.size > MAX_EDIT_BYTES) throw tooLarge(given, info.size);
    const reader = new ChunkReader(handle);
    const parts: Buffer[] = [];
    let size = 0;
    for (let chunk = await reader.next(); chunk; chunk = await reader.next()) {
      size += chunk.length;
      // It grew while being read: the same limit holds.
      if (size > MAX_EDIT_BYTES) throw tooLarge(given, size);
      parts.push(Buffer.from(chunk));
    }
    return Buffer.concat(parts, size);
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError(`cannot read ${given} (${codeOf(error)})`);
  } finally {
    await handle.close();
  }
}

function tooLarge(given: string, size: number): ToolError {
  return new ToolError(
    `${given} is ${megabytes(size)}, over the ${megabytes(MAX_EDIT_BYTES)} limit of write_file and edit_file`,
    {
      hint: "read_file can still read it with offset and limit; change it with the shell (sed, a script), or delete it first to write a new one.",
    },
  );
}

function megabytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb).toLocaleString("en-US") : mb.toFixed(1)} MB`;
}

/** Replaces `oldText` by `newText` in the file's text: exactly once, or every time with `all`. */
function applyEdit(
  file: TextFile,
  path: string,
  oldText: string,
  newText: string,
  all: boolean,
): { text: string; count: number; lines: number[] } {
  const offsets: number[] = [];
  for (let at = file.text.indexOf(oldText); at !== -1; at = file.text.indexOf(oldText, at + oldText.length)) {
    offsets.push(at);
  }
  if (offsets.length === 0) {
    const near = looseMatchLine(file.text, oldText);
    throw new ToolError(`old_string was found 0 times in ${path}`, {
      hint:
        near !== undefined
          ? `It matches at line ${near} if whitespace is ignored: copy the text exactly as read_file shows it (without the line-number prefix).`
          : "Copy the text exactly as read_file shows it (without the line-number prefix), including whitespace.",
    });
  }
  const lines = lineNumbersAt(file.text, offsets);
  if (offsets.length > 1 && !all) {
    throw new ToolError(
      `old_string was found ${offsets.length} times in ${path}, at lines ${lines.join(", ")}`,
      {
        hint: "Include more surrounding lines to make it unique, or set replace_all to replace every occurrence.",
      },
    );
  }
  const parts: string[] = [];
  let from = 0;
  for (const at of offsets) {
    parts.push(file.text.slice(from, at), newText);
    from = at + oldText.length;
  }
  parts.push(file.text.slice(from));
  return { text: parts.join(""), count: offsets.length, lines };
}

/** The first line where `needle` matches line by line once whitespace is ignored (runs of it inside a line count as one space). */
function looseMatchLine(text: string, needle: string): number | undefined {
  const loose = (line: string) => line.trim().replace(/\s+/g, " ");
  const want = needle.split("\n").map(loose);
  while (want.length > 1 && want.at(-1) === "") want.pop();
  if (want.every((l) => l === "")) return undefined;
  const have = text.split("\n").map(loose);
  for (let i = 0; i + want.length <= have.length; i++) {
    let ok = true;
    for (let j = 0; j < want.length && ok; j++) ok = have[i + j] === want[j];
    if (ok) return i + 1;
  }
  return undefined;
}

function describeSize(text: string): string {
  const lines = text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  return `${lines.toLocaleString("en-US")} line${lines === 1 ? "" : "s"}, ${Buffer.byteLength(text).toLocaleString("en-US")} bytes`;
}
