/**
 * grep_files throughput (MB/s of file content searched) over this repository and over a
 * generated ~100 MB tree: the workspace's search (the Node walk honouring .gitignore, and `rg`
 * when it is on PATH) against a plain Node walk that reads every file and tests it line by
 * line. Then read_file of a 10 MB file, timed as a tool call (target: under 50 ms).
 *
 *   npx tsx bench/workspace-grep.ts
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Agent, Runner, ScriptedModel } from "../src/index.js";
import { ripgrepPath } from "../src/workspace/grep-files.js";
import { grepFiles, workspace } from "../src/workspace/index.js";

const REPO = path.resolve(import.meta.dirname, "..");
const MB = 1024 * 1024;

type Row = { tree: string; engine: string; mb: number; ms: number; mbPerSecond: number; matches: number };

/** A tree of source-like text files: `totalMb` spread over directories of 100 files. */
function generateTree(dir: string, totalMb: number): void {
  const words = [
    "const",
    "value",
    "return",
    "function",
    "import",
    "export",
    "await",
    "result",
    "config",
    "items",
    "index",
    "error",
  ];
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const fileBytes = 25 * 1024;
  const files = Math.ceil((totalMb * MB) / fileBytes);
  for (let f = 0; f < files; f++) {
    const sub = path.join(dir, `pkg${Math.floor(f / 100)}`, f % 3 === 0 ? "src" : "lib");
    if (f % 100 === 0 || f % 100 < 3) mkdirSync(sub, { recursive: true });
    const lines: string[] = [];
    let size = 0;
    while (size < fileBytes) {
      const n = 4 + Math.floor(random() * 8);
      let line = "  ";
      for (let w = 0; w < n; w++)
        line += `${words[Math.floor(random() * words.length)]}${w % 3 === 0 ? "(" : " "}`;
      // A rare marker: a few hundred matches in the whole tree.
      if (random() < 0.00005) line += ` needle_${f}`;
      lines.push(line);
      size += line.length + 1;
    }
    writeFileSync(path.join(sub, `file${f}.ts`), `${lines.join("\n")}\n`);
  }
}

/** The baseline: every file under `dir` (no ignore rules but .git/node_modules), read and tested line by line. */
function plainWalk(dir: string, regex: RegExp): { matches: number; bytes: number } {
  let matches = 0;
  let bytes = 0;
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      if (entry.name === ".git" || entry.name === "node_modules") continue;
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        const text = readFileSync(full, "utf8");
        bytes += Buffer.byteLength(text);
        for (const line of text.split("\n")) if (regex.test(line)) matches++;
      }
    }
  };
  walk(dir);
  return { matches, bytes };
}

async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measureTree(tree: string, root: string, pattern: string, rounds: number): Promise<Row[]> {
  const rows: Row[] = [];
  const engines: Array<"node" | "rg"> = (await ripgrepPath()) ? ["node", "rg"] : ["node"];
  let bytes = 0;
  for (const engine of engines) {
    const times: number[] = [];
    let matches = 0;
    for (let i = 0; i < rounds + 1; i++) {
      const { value, ms } = await timed(() => grepFiles({ root, pattern, limit: 2_000, engine }));
      if (i > 0) times.push(ms); // the first round warms the page cache
      matches = value.matches.length;
      if (engine === "node") bytes = value.bytesSearched ?? 0;
    }
    const ms = median(times);
    rows.push({
      tree,
      engine: engine === "node" ? "grep_files (Node walk, .gitignore)" : "grep_files (rg)",
      mb: bytes / MB,
      ms,
      mbPerSecond: bytes / MB / (ms / 1000),
      matches,
    });
  }
  const times: number[] = [];
  let plain = { matches: 0, bytes: 0 };
  for (let i = 0; i < rounds + 1; i++) {
    const { value, ms } = await timed(() => plainWalk(root, new RegExp(pattern)));
    if (i > 0) times.push(ms);
    plain = value;
  }
  const ms = median(times);
  rows.push({
    tree,
    engine: "plain Node walk (readFileSync + split + test)",
    mb: plain.bytes / MB,
    ms,
    mbPerSecond: plain.bytes / MB / (ms / 1000),
    matches: plain.matches,
  });
  return rows;
}

/** read_file of a 10 MB text file as a tool call in a run: its `durationMs` (median of `rounds`). */
async function readTenMb(dir: string, rounds: number): Promise<number> {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < 10 * MB; i++) {
    const line = `${i}\tsome log line with a few words and a number ${i * 7919}`;
    lines.push(line);
    size += line.length + 1;
  }
  writeFileSync(path.join(dir, "big.log"), lines.join("\n"));
  const ws = workspace({ root: dir });
  const durations: number[] = [];
  for (let i = 0; i < rounds + 1; i++) {
    const agent = new Agent({
      name: "reader",
      model: new ScriptedModel(
        [
          { toolCalls: [{ name: "read_file", args: { path: "big.log", offset: 100_000 } }] },
          { text: "done" },
        ],
        { record: false },
      ),
      tools: ws.tools,
    });
    for await (const ev of Runner.stream(agent, "read")) {
      if (ev.type === "tool_call_completed" && i > 0) durations.push(ev.durationMs);
    }
  }
  return median(durations);
}

export async function main(options: { treeMb?: number; rounds?: number; log?: (line: string) => void } = {}) {
  const log = options.log ?? console.log;
  const rounds = options.rounds ?? 5;
  const scratch = mkdtempSync(path.join(tmpdir(), "quiver-grep-bench-"));
  try {
    const generated = path.join(scratch, "tree");
    const gen = await timed(() => generateTree(generated, options.treeMb ?? 100));
    log(
      `generated ${options.treeMb ?? 100} MB tree in ${(gen.ms / 1000).toFixed(1)} s; rg on PATH: ${(await ripgrepPath()) ?? "no"}`,
    );
    const rows = [
      // The repository is small: more rounds, so the median is not one unlucky scheduling slice.
      ...(await measureTree("this repository", REPO, "getRunContext\\(", rounds * 3)),
      ...(await measureTree("generated tree", generated, "needle_[0-9]+", rounds)),
    ];
    log("| tree | search | MB searched | ms (median) | MB/s | matching lines |");
    log("| --- | --- | --: | --: | --: | --: |");
    for (const r of rows) {
      log(
        `| ${r.tree} | ${r.engine} | ${r.mb.toFixed(1)} | ${r.ms.toFixed(0)} | ${r.mbPerSecond.toFixed(0)} | ${r.matches} |`,
      );
    }
    const readMs = await readTenMb(scratch, rounds * 2);
    log(
      `read_file of a 10 MB file (offset 100,000): ${readMs} ms median tool-call duration (target < 50 ms: ${readMs < 50 ? "met" : "NOT met"})`,
    );
    return { rows, readTenMbMs: readMs };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
