/**
 * The child side of `inChild()`: `child.ts <module> <export> <json args>` imports a module
 * (relative to bench/), calls that export with the arguments and prints its JSON result on
 * the last line of stdout. Kept apart from harness.ts, which the workloads import: a module
 * that is both the entry point and imported by what it imports would wait on itself.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [module, exportName, args] = process.argv.slice(2);
const url = pathToFileURL(resolve(import.meta.dirname, "..", module!)).href;
const mod = (await import(url)) as Record<string, (args: unknown) => Promise<unknown>>;
const fn = mod[exportName!];
if (typeof fn !== "function") throw new Error(`bench/${module} has no export ${exportName}`);
const result = await fn(JSON.parse(args ?? "{}"));
process.stdout.write(`\n${JSON.stringify(result)}\n`);
