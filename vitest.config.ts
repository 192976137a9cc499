import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests import the package by its public names, as users do, straight from the sources
// (the same map as tsconfig.json's `paths` and package.json's `exports`).
const entries: Record<string, string> = {
  "quiver-agents": "./src/index.ts",
  "quiver-agents/tools": "./src/builtin-tools/index.ts",
  "quiver-agents/providers": "./src/providers/index.ts",
  "quiver-agents/mcp": "./src/hosts/mcp/index.ts",
  "quiver-agents/mcp-server": "./src/mcp-server/index.ts",
  "quiver-agents/store": "./src/store/index.ts",
  "quiver-agents/workspace": "./src/workspace/index.ts",
  "quiver-agents/server": "./src/server/index.ts",
  "quiver-agents/otel": "./src/otel/index.ts",
  "quiver-agents/dbos": "./src/dbos/index.ts",
};

export default defineConfig({
  resolve: {
    alias: Object.entries(entries).map(([name, path]) => ({
      find: new RegExp(`^${name.replace("/", "\\/")}$`),
      replacement: at(path),
    })),
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Vitest's default is cores − 1 workers, so one on a 2-core machine: the files then run one at
    // a time, 620 s. Most of a file's time is waiting on child processes, Postgres and Chromium, so
    // two workers finish in about 390 s on the same machine; larger machines keep their default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
