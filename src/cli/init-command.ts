import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";
import { UserError } from "../errors.js";
import { flag, parseCommand } from "./options.js";
import { colorsFor } from "./terminal.js";
import { EXIT, INIT_HELP, UsageError } from "./usage.js";

/** The starter agent: the package ships it (package.json "files"), so an installed copy has it. */
const STARTER = new URL("../../examples/agents/hello.mjs", import.meta.url);
const FILE = "agent.mjs";

/**
 * `quiver init [dir]`: writes a starter agent file, agent.mjs, that runs as it is — the built-in
 * `now` tool, a tool of its own that asks before it writes, and a ScriptedModel when no model is
 * set (`--model` or QUIVER_MODEL picks a real one). An existing agent.mjs is kept unless `--force`.
 */
export async function initCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(
    args,
    { force: { type: "boolean" }, help: { type: "boolean", short: "h" } },
    INIT_HELP,
  );
  if (flag(parsed, "help")) {
    process.stdout.write(`${INIT_HELP}\n`);
    return EXIT.completed;
  }
  const [target = ".", ...extra] = parsed.positionals;
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`, INIT_HELP);
  const dir = resolve(target);
  const file = join(dir, FILE);
  const shown = relative(process.cwd(), file) || FILE;
  await mkdir(dir, { recursive: true });
  try {
    await writeFile(file, await readFile(STARTER, "utf8"), { flag: flag(parsed, "force") ? "w" : "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST")
      throw new UserError(`${shown} exists already: pass --force to replace it`);
    throw error;
  }
  const c = colorsFor(process.stdout);
  const cd = relative(process.cwd(), dir);
  const lines = [
    `wrote ${shown}: an agent with the built-in now tool and a save_note tool that asks before it writes`,
    "",
    "Try it:",
    ...(cd ? [`  cd ${cd}`] : []),
    `  npx quiver chat ${FILE}                          ${c.dim("# a conversation (a ScriptedModel answers)")}`,
    `  npx quiver run ${FILE} "what time is it?"        ${c.dim("# one run")}`,
    `  npx quiver chat ${FILE} --model openai:gpt-4.1-mini   ${c.dim("# a real model (OPENAI_API_KEY)")}`,
  ];
  if (!installedFrom(dir))
    lines.push(
      "",
      c.yellow(`quiver-agents is not installed in ${cd || "this folder"}: npm install quiver-agents`),
    );
  process.stdout.write(`${lines.join("\n")}\n`);
  return EXIT.completed;
}

/** Whether an agent file in `dir` can import quiver-agents (it must be the project's own copy). */
function installedFrom(dir: string): boolean {
  try {
    createRequire(join(dir, FILE)).resolve("quiver-agents");
    return true;
  } catch {
    return false;
  }
}
