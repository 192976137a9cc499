/** `npm run bench`: every benchmark in this folder, one after another. */
import { readdir } from "node:fs/promises";

const here = import.meta.dirname;
const files = (await readdir(here)).filter((f) => f.endsWith(".ts") && f !== "index.ts").sort();
console.log(`Node ${process.version}, ${new Date().toISOString()}`);
for (const file of files) {
  const mod: { main?: () => Promise<void> } = await import(`./${file}`);
  if (typeof mod.main !== "function") throw new Error(`bench/${file} must export main()`);
  await mod.main();
}
