import { statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { call, play, tempDir } from "./helpers.js";

const root = tempDir("quiver-large-");
const GB3 = 3 * 1024 ** 3;
const numbered = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join("");

/** A 3 GB file that takes a few kilobytes of disk: text lines, then a hole (zeros) to the end. */
function sparse(name: string, head: string | Buffer): string {
  const file = join(root, name);
  writeFileSync(file, head);
  truncateSync(file, GB3);
  expect(statSync(file).blocks * 512).toBeLessThan(1024 * 1024);
  return file;
}

/** Runs `fn`, returning its result with the wall time and the growth of resident memory. */
async function measured<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; rssMB: number }> {
  const rss = process.memoryUsage().rss;
  const start = performance.now();
  const value = await fn();
  return {
    value,
    ms: performance.now() - start,
    rssMB: (process.memoryUsage().rss - rss) / (1024 * 1024),
  };
}

/** The window as the tool computed it before it streamed (the whole file in memory): the oracle. */
function wholeFileWindow(buf: Buffer, name: string, offset: number, limit: number): string {
  const MAX_LINE = 2_000;
  const bom = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  const end = buf.length;
  if (end - bom === 0) return `${name} is empty.`;
  let at = bom;
  for (let line = 1; line < offset; line++) {
    const next = buf.indexOf(10, at);
    if (next === -1 || next === end - 1)
      return `Tool error: offset ${offset} is past the end of ${name} (${line} lines)`;
    at = next + 1;
  }
  const maxLines = Math.min(limit, 2_000);
  const out: string[] = [];
  let chars = 0;
  let line = offset;
  let stoppedByChars = false;
  while (at < end && out.length < maxLines) {
    let stop = buf.indexOf(10, at);
    if (stop === -1) stop = end;
    const contentEnd = stop > at && buf[stop - 1] === 13 ? stop - 1 : stop;
    const cut = ` [... line cut: ${(contentEnd - at).toLocaleString("en-US")} bytes ...]`;
    let content: string;
    if (contentEnd - at > MAX_LINE * 4)
      content = `${buf.toString("utf8", at, at + MAX_LINE * 4).slice(0, MAX_LINE)}${cut}`;
    else {
      content = buf.toString("utf8", at, contentEnd);
      if (content.length > MAX_LINE) content = `${content.slice(0, MAX_LINE)}${cut}`;
    }
    const rendered = `${line}\t${content}`;
    if (chars + rendered.length + 1 > 50_000 && out.length > 0) {
      stoppedByChars = true;
      break;
    }
    out.push(rendered);
    chars += rendered.length + 1;
    line++;
    at = stop + 1;
  }
  if (at < end) {
    let lines = 0;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) lines++;
    if (buf[end - 1] !== 10) lines++;
    const why = stoppedByChars
      ? "the 50,000-character limit of one call"
      : `the ${maxLines.toLocaleString("en-US")}-line limit`;
    out.push(`[showing lines ${offset}-${line - 1} of ${lines} (${why}); continue with offset ${line}]`);
  }
  return out.join("\n");
}

/** A file of random lines: short and empty ones, CRLF, multi-byte characters, lines longer than a read chunk. */
function randomText(seed: number, bytes: number): Buffer {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
  const pieces = ["a", "é", "😀", " ", "x", "\t", "\r"];
  const parts: string[] = seed % 2 ? ["\uFEFF"] : [];
  let size = 0;
  while (size < bytes) {
    const kind = next(100);
    const length = kind < 70 ? next(80) : kind < 95 ? 1_900 + next(7_000) : 100_000 + next(200_000);
    let line = "";
    while (line.length < length) line += pieces[next(pieces.length)]!.repeat(1 + next(50));
    line += next(4) === 0 ? "\r\n" : "\n";
    parts.push(line);
    size += Buffer.byteLength(line);
  }
  if (next(2)) parts.push("last line without a newline");
  return Buffer.from(parts.join(""));
}

describe("files of any size", () => {
  it("the streamed window is exactly what reading the whole file showed, across chunk boundaries", async () => {
    const tools = workspace({ root }).tools;
    for (const seed of [1, 2, 3, 4]) {
      const bytes = randomText(seed, 1_500_000);
      writeFileSync(join(root, "random.txt"), bytes);
      const lines = bytes.toString("latin1").split("\n").length;
      for (const [offset, limit] of [
        [1, 2_000],
        [1, 1],
        [2, 3],
        [Math.floor(lines / 2), 40],
        [lines - 2, 5],
        [lines, 5],
        [lines + 1, 5],
        [lines + 5, 1],
      ] as const) {
        const record = await call(tools, "read_file", { path: "random.txt", offset, limit });
        expect(record.output.split("\nHint:")[0]).toBe(wholeFileWindow(bytes, "random.txt", offset, limit));
      }
    }
    writeFileSync(join(root, "empty.txt"), "\uFEFF");
    expect((await call(tools, "read_file", { path: "empty.txt" })).output).toBe("empty.txt is empty.");
  });

  it("read_file with a limit reads a 3 GB file's first lines in bounded time and memory", async () => {
    sparse("huge.log", numbered(1, 1000));
    const tools = workspace({ root }).tools;
    const {
      value: record,
      ms,
      rssMB,
    } = await measured(() => call(tools, "read_file", { path: "huge.log", limit: 5 }));
    expect(record.ok).toBe(true);
    expect(record.output).toBe(
      "1\tline 1\n2\tline 2\n3\tline 3\n4\tline 4\n5\tline 5\n" +
        "[showing lines 1-5 of a 3,221,225,472-byte file (the 5-line limit); continue with offset 6]",
    );
    expect(ms).toBeLessThan(2_000);
    expect(rssMB).toBeLessThan(64);

    const later = await call(tools, "read_file", { path: "huge.log", offset: 998, limit: 2 });
    expect(later.output).toBe(
      "998\tline 998\n999\tline 999\n" +
        "[showing lines 998-999 of a 3,221,225,472-byte file (the 2-line limit); continue with offset 1000]",
    );
  });

  it("write_file and edit_file refuse a file over the 50 MB limit with a clear error, read or not", async () => {
    sparse("huge.txt", numbered(1, 10));
    const { records } = await play(workspace({ root }).tools, [
      { name: "read_file", args: { path: "huge.txt", limit: 1 } },
      { name: "edit_file", args: { path: "huge.txt", old_string: "line 1\n", new_string: "first\n" } },
      { name: "write_file", args: { path: "huge.txt", content: "small now\n" } },
    ]);
    expect(records[0]!.ok).toBe(true);
    for (const record of records.slice(1)) {
      expect(record.ok).toBe(false);
      expect(record.output).toContain(
        "huge.txt is 3,072 MB, over the 50 MB limit of write_file and edit_file",
      );
      expect(record.output).not.toContain("ERR_");
    }
    expect(statSync(join(root, "huge.txt")).size).toBe(GB3);
  });

  it("the binary check looks at the head only", async () => {
    sparse("huge.bin", Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2]));
    const { value: record, ms } = await measured(() =>
      call(workspace({ root }).tools, "read_file", { path: "huge.bin" }),
    );
    expect(record.output).toMatch(
      /^huge\.bin: binary file, 3,221,225,472 bytes, modified [^,]+\. Its content is not shown\.$/,
    );
    expect(ms).toBeLessThan(2_000);
  });

  it("a file under the limit is hashed while streamed: its line count is known and it can be edited", async () => {
    writeFileSync(join(root, "medium.log"), numbered(1, 1_000_000)); // 12.9 MB
    const { records } = await play(workspace({ root }).tools, [
      { name: "read_file", args: { path: "medium.log", offset: 2, limit: 2 } },
      {
        name: "edit_file",
        args: { path: "medium.log", old_string: "line 999999\n", new_string: "edited\n" },
      },
      { name: "read_file", args: { path: "medium.log", offset: 999_998 } },
    ]);
    expect(records[0]!.output).toBe(
      "2\tline 2\n3\tline 3\n[showing lines 2-3 of 1000000 (the 2-line limit); continue with offset 4]",
    );
    expect(records[1]!.ok).toBe(true);
    expect(records[2]!.output).toBe("999998\tline 999998\n999999\tedited\n1000000\tline 1000000");
  });
});
