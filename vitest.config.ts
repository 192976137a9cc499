import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests import the package by its public names, as users do, straight from the sources
// (the same map as tsconfig.json's `paths` and package.json's `exports`).
const entries: Record<string, string> = {
  quiver: "./src/index.ts",
  "quiver/tools": "./src/tools/index.ts",
  "quiver/providers": "./src/providers/index.ts",
  "quiver/mcp": "./src/hosts/mcp/index.ts",
  "quiver/store": "./src/store/index.ts",
  "quiver/workspace": "./src/workspace/index.ts",
  "quiver/server": "./src/server/index.ts",
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
