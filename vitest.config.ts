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
  },
});
