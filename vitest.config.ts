import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = fileURLToPath(new URL("./src/", import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import the package by its public name, as users do, straight from the sources.
    alias: [
      { find: /^quiver$/, replacement: `${src}index.ts` },
      { find: /^quiver\/(.+)$/, replacement: `${src}$1/index.ts` },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
