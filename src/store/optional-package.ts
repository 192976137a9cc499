import { createRequire } from "node:module";
import { UserError } from "../errors.js";

const require = createRequire(import.meta.url);

/**
 * Loads an optional peer dependency the first time a store needs it, so `import "quiver-agents/store"`
 * never loads a database driver its user does not use. A missing package is a `UserError`
 * saying which command installs it.
 *
 * @example
 * const Database = loadOptionalPackage<typeof import("better-sqlite3")>("better-sqlite3", "SqliteStore", "npm install better-sqlite3@12");
 */
export function loadOptionalPackage<T>(name: string, user: string, install: string): T {
  try {
    return require(name) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" && String((error as Error).message).includes(`'${name}'`)) {
      throw new UserError(
        `${user} needs the optional package ${name}, which is not installed: run \`${install}\``,
        {
          cause: error,
        },
      );
    }
    throw new UserError(`${user} could not load the package ${name}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * Where an optional package that `loadOptionalPackage` loaded resolves from, for a worker
 * thread to load the same copy.
 *
 * @example
 * new Worker(code, { eval: true, workerData: { driver: optionalPackagePath("better-sqlite3") } });
 */
export function optionalPackagePath(name: string): string {
  return require.resolve(name);
}
