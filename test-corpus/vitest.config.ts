import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import root from "../vitest.config.js";

/**
 * The corpus suite (`npm run test:corpus`): tests over data that lives beside the checkout,
 * not in it. Same module names as `npm test`; only what runs differs.
 */
export default defineConfig({
  ...root,
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    ...root.test,
    include: ["test-corpus/**/*.test.ts"],
    testTimeout: 60_000,
  },
});
