/**
 * What a stranger gets: packs the package, installs the tarball into an empty project that has
 * only zod, typescript and @types/node, compiles the README's and the docs' examples there with
 * `skipLibCheck: false` (so every type a public .d.ts names must come from a dependency), again
 * with `exactOptionalPropertyTypes` and `noUncheckedIndexedAccess` (with every subpath imported:
 * the declarations must hold in the strictest project too), then
 * runs every example not marked `no-run: <why>` (doc-examples.ts refuses a no-run without a
 * reason), and the README's `quiver init` / `run` / `chat` commands. Nothing here resolves to src/: the examples see only
 * what `npm install quiver-agents` gives.
 *
 * Usage: `npm run test:consumer` (CI runs it after `npm test`). Needs the npm registry (or the
 * npm cache that `npm ci` filled) for the tarball's own dependencies.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { docExamples } from "./doc-examples.js";

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, "..");
const RUN_TIMEOUT_MS = 30_000;
/**
 * Optional peers, and a word in an example's code that says it needs one to run. `declarations`:
 * a subpath's .d.ts name its types, so it is installed for every-subpath.ts whatever the examples.
 */
const OPTIONAL_PEERS: { name: string; usedBy: string; declarations?: true }[] = [
  { name: "better-sqlite3", usedBy: "SqliteStore" },
  { name: "@modelcontextprotocol/sdk", usedBy: "mcpServer", declarations: true },
  { name: "@opentelemetry/api", usedBy: "quiver-agents/otel", declarations: true },
  { name: "@opentelemetry/sdk-trace-base", usedBy: "@opentelemetry/sdk-trace-base" },
  { name: "@dbos-inc/dbos-sdk", usedBy: "quiver-agents/dbos", declarations: true },
  { name: "pg", usedBy: "quiver-agents/dbos", declarations: true },
  // DBOS's own declarations import pg's types, which live in @types/pg.
  { name: "@types/pg", usedBy: "quiver-agents/dbos", declarations: true },
  // The clients the server's AG-UI and A2A examples talk to it with.
  { name: "@ag-ui/client", usedBy: "@ag-ui/client" },
  { name: "@a2a-js/sdk", usedBy: "@a2a-js/sdk" },
];

/** An example that imports the MCP SDK's client itself (see where it is compiled). */
const SDK_NEEDS_DOM = /from "@modelcontextprotocol\/sdk\//;

/** An example naming one of these needs an optional peer's types to compile. */
const NEEDS_PEER =
  /quiver-agents\/(mcp|otel|dbos)\b|@opentelemetry\/|@modelcontextprotocol\/|@dbos-inc\/|@ag-ui\/client|@a2a-js\//;

const versionOf = async (name: string) =>
  (
    JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")) as {
      version: string;
    }
  ).version;

async function main(): Promise<number> {
  const scratch = await mkdtemp(join(tmpdir(), "quiver-consumer-"));
  try {
    console.log(`consumer check in ${scratch}`);
    const { stdout } = await exec("npm", ["pack", "--silent", "--pack-destination", scratch], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    });
    const tarball = join(scratch, stdout.trim().split("\n").pop()!);
    console.log(`packed ${tarball}`);

    await writeFile(
      join(scratch, "package.json"),
      JSON.stringify(
        {
          name: "quiver-consumer-check",
          private: true,
          type: "module",
          dependencies: {
            "quiver-agents": `file:${tarball}`,
            zod: `^${await versionOf("zod")}`,
            typescript: await versionOf("typescript"),
            "@types/node": `^${await versionOf("@types/node")}`,
          },
        },
        null,
        2,
      ),
    );
    await exec("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: scratch,
      maxBuffer: 64 * 1024 * 1024,
    });
    console.log("installed the tarball with zod, typescript and @types/node only");
    // The README's first commands, as a newcomer types them in that folder (no optional peer:
    // the chat keeps its conversation in memory without better-sqlite3, and says so).
    if (!(await readmeCommands(scratch))) return 1;

    const examples = await docExamples(root);
    for (const example of examples) await writeFile(join(scratch, example.file), example.code);
    // First without any optional peer: an example that imports only subpaths needing none
    // (the root, tools, providers, store, workspace, server) must compile on the bare install.
    // Then with the optional peers the other examples name, as their pages tell a user to
    // install them (`quiver-agents/mcp` needs the MCP SDK's types, `/otel` the OTel API's).
    const bare = examples.filter((e) => !NEEDS_PEER.test(e.code));
    if (
      !(await compiles(
        scratch,
        bare.map((e) => e.file),
      ))
    )
      return 1;
    console.log(`compiled ${bare.length} examples that need no optional package, with skipLibCheck: false`);

    const peers = OPTIONAL_PEERS.filter(
      (peer) => peer.declarations || examples.some((e) => e.code.includes(peer.usedBy)),
    );
    if (peers.length) {
      const specs = await Promise.all(
        peers.map(async (peer) => `${peer.name}@${await versionOf(peer.name)}`),
      );
      await exec(
        "npm",
        ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...specs],
        { cwd: scratch, maxBuffer: 64 * 1024 * 1024 },
      );
      console.log(
        `installed the optional packages the examples and the declarations use: ${specs.join(", ")}`,
      );
    }
    // The MCP SDK's own client types name DOM's HeadersInit (@types/node has no such global), so
    // an example that imports the SDK itself compiles with the DOM library as well; every other
    // example, and so every type of the package's own, without it.
    const withDom = examples.filter((e) => SDK_NEEDS_DOM.test(e.code));
    const plain = [
      await everySubpath(scratch),
      ...examples.filter((e) => !SDK_NEEDS_DOM.test(e.code)).map((e) => e.file),
    ];
    if (!(await compiles(scratch, plain))) return 1;
    if (
      withDom.length &&
      !(await compiles(
        scratch,
        withDom.map((e) => e.file),
        ["ES2023", "DOM"],
      ))
    )
      return 1;
    console.log(
      `compiled all ${examples.length} examples with skipLibCheck: false (${withDom.length} that import the MCP SDK itself with the DOM library)`,
    );
    // The same files in a project with the strictest options: a class in a .d.ts that implements
    // an interface must still fit it when `?:` no longer means `| undefined`.
    if (!(await compiles(scratch, plain, ["ES2023"], STRICTEST))) return 1;
    if (
      withDom.length &&
      !(await compiles(
        scratch,
        withDom.map((e) => e.file),
        ["ES2023", "DOM"],
        STRICTEST,
      ))
    )
      return 1;
    console.log(`compiled them again with ${Object.keys(STRICTEST).join(" and ")}, every subpath imported`);

    const failures: string[] = [];
    const runnable = examples.filter((e) => e.run);
    for (const example of runnable) {
      const file = join(scratch, "out", example.file.replace(/\.ts$/, ".js"));
      try {
        await exec(process.execPath, [file], {
          cwd: scratch,
          timeout: RUN_TIMEOUT_MS,
          maxBuffer: 16 * 1024 * 1024,
          // No keys: an example that would reach a hosted model must say `no-run`.
          env: { PATH: process.env.PATH ?? "", HOME: scratch, NO_COLOR: "1" },
        });
      } catch (error) {
        const { stderr = "", killed } = error as { stderr?: string; killed?: boolean };
        failures.push(
          `${example.page} block ${example.index}: ${killed ? `still running after ${RUN_TIMEOUT_MS} ms` : stderr.trim().split("\n").slice(0, 6).join("\n")}`,
        );
      }
    }
    if (failures.length) {
      console.error(
        `${failures.length} of ${runnable.length} runnable examples failed:\n${failures.join("\n\n")}`,
      );
      return 1;
    }
    console.log(`ran ${runnable.length} examples; not run, as their pages say:`);
    for (const example of examples.filter((e) => !e.run))
      console.log(`  ${example.page}:${example.line}: ${example.noRun}`);
    return 0;
  } finally {
    if (!process.env.KEEP_CONSUMER_CHECK) await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * `npx quiver init`, then the agent it wrote and the example the package ships, run the way the
 * README shows; each must exit 0 and print what a person would look for. Prints what failed.
 */
async function readmeCommands(scratch: string): Promise<boolean> {
  const env = { PATH: process.env.PATH ?? "", HOME: scratch, NO_COLOR: "1" };
  const checks: {
    args: string[];
    input?: string;
    expect: RegExp;
    in: "stdout" | "stderr";
    /** A command that runs until stopped: it must still run when `expect` shows (then Ctrl+C). */
    serves?: boolean;
  }[] = [
    { args: ["init"], expect: /wrote agent\.mjs/, in: "stdout" },
    { args: ["run", "agent.mjs", "what time is it?"], expect: /● now\(\)/, in: "stderr" },
    {
      args: ["run", "agent.mjs", "what time is it?", "--json"],
      expect: /"type":"run_completed"/,
      in: "stdout",
    },
    {
      args: ["chat", "agent.mjs"],
      input: "what time is it?\n/exit\n",
      expect: /Done — [\s\S]*session chat-\S+ — not stored \(a memory store ends with this process\)/,
      in: "stdout",
    },
    {
      args: ["serve", "agent.mjs", "--port", "0"],
      expect: /chat page {3}http:\/\/127\.0\.0\.1:\d+\//,
      in: "stdout",
      serves: true,
    },
    {
      args: ["run", "node_modules/quiver-agents/examples/agents/hello.mjs", "hello"],
      expect: /I'm a ScriptedModel/,
      in: "stdout",
    },
  ];
  const failures: string[] = [];
  for (const check of checks) {
    const command = `npx quiver ${check.args.join(" ")}`;
    let stopped = false;
    const ran = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = execFile(
        "npx",
        ["quiver", ...check.args],
        { cwd: scratch, env, timeout: RUN_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) =>
          done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(check.input ?? "");
      if (check.serves) {
        let seen = "";
        child[check.in]?.on("data", (chunk) => {
          seen += String(chunk);
          if (!stopped && check.expect.test(seen)) {
            stopped = true;
            child.kill("SIGINT");
          }
        });
      }
    });
    // A server is stopped by the signal (npx's exit code then varies); it must not end by itself.
    if ((check.serves ? !stopped : ran.code !== 0) || !check.expect.test(ran[check.in]))
      failures.push(`${command} (exit ${ran.code}):\n${ran.stdout}${ran.stderr}`.trim());
  }
  if (failures.length) {
    console.error(`the README's commands failed in an empty project:\n${failures.join("\n\n")}`);
    return false;
  }
  console.log(
    `ran the README's ${checks.length} quiver commands (init, run, chat, serve, the shipped example)`,
  );
  return true;
}

/** What a project with the strictest settings adds to `strict` (checked without emitting). */
const STRICTEST = { exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true };

/**
 * Writes a module that imports every subpath the installed package exports, so that each of its
 * declarations is type-checked whether or not an example uses it; returns its file name.
 */
async function everySubpath(scratch: string): Promise<string> {
  const manifest = JSON.parse(
    await readFile(join(scratch, "node_modules/quiver-agents/package.json"), "utf8"),
  ) as { exports: Record<string, unknown> };
  const specifiers = Object.keys(manifest.exports)
    .filter((key) => key !== "./package.json")
    .map((key) => `quiver-agents${key.slice(1)}`);
  const file = "every-subpath.ts";
  await writeFile(
    join(scratch, file),
    `${specifiers.map((s, i) => `import type * as m${i} from "${s}";`).join("\n")}\nexport type Every = [${specifiers.map((_, i) => `typeof m${i}`).join(", ")}];\n`,
  );
  return file;
}

/**
 * Compiles `files` in `scratch` with `skipLibCheck: false` (and `strictest` options, if given,
 * without emitting); prints tsc's errors when it fails.
 */
async function compiles(
  scratch: string,
  files: string[],
  lib = ["ES2023"],
  strictest?: typeof STRICTEST,
): Promise<boolean> {
  const config = strictest ? "tsconfig.strictest.json" : "tsconfig.json";
  await writeFile(
    join(scratch, config),
    JSON.stringify({
      compilerOptions: {
        target: "ES2023",
        lib,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        skipLibCheck: false,
        types: ["node"],
        outDir: "out",
        rootDir: ".",
        ...(strictest && { ...strictest, noEmit: true }),
      },
      files,
    }),
  );
  try {
    await exec(join(scratch, "node_modules/.bin/tsc"), ["-p", config], {
      cwd: scratch,
      maxBuffer: 64 * 1024 * 1024,
    });
    return true;
  } catch (error) {
    const { stdout: out = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    console.error(
      `the examples do not compile against the installed package${strictest ? ` with ${Object.keys(strictest).join(" and ")}` : ""}:\n${out}${stderr}`,
    );
    return false;
  }
}

process.exitCode = await main();
