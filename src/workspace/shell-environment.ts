import { UserError } from "../errors.js";

const NON_INTERACTIVE = {
  TERM: "dumb",
  CI: "1",
  GIT_TERMINAL_PROMPT: "0",
  PAGER: "cat",
  GIT_PAGER: "cat",
};

/** `shell: { env }`: see `ShellOptions.env`. */
export type ShellEnvironmentOption = "minimal" | "inherit" | string[] | Record<string, string>;

/** The environment a command gets, from the `env` option. */
export function shellEnvironment(env: ShellEnvironmentOption | undefined): Record<string, string> {
  const minimal: Record<string, string> = {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME || "/",
    LANG: process.env.LANG || "C.UTF-8",
    ...NON_INTERACTIVE,
  };
  if (env === undefined || env === "minimal") return minimal;
  if (env === "inherit") {
    const inherited: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) inherited[key] = value;
    return { ...inherited, ...NON_INTERACTIVE };
  }
  if (Array.isArray(env)) {
    const picked = { ...minimal };
    for (const name of env) {
      const value = process.env[name];
      if (value !== undefined) picked[name] = value;
    }
    return picked;
  }
  if (typeof env === "object" && env !== null) return { ...minimal, ...env };
  throw new UserError(
    `workspace shell env must be "minimal", "inherit", a list of names or an object, got ${JSON.stringify(env)}`,
  );
}
