// The A2A SDK is an optional peer dependency: it loads on the first A2A request (or when
// `quiver serve --a2a` starts), never on `import "quiver-agents/server"`. Only its
// framework-free parts are used — the JSON-RPC transport handlers, errors and the protocol's
// message types — so none of its own optional peers (express, grpc, kysely…) are needed.
import { UserError } from "../index.js";

type CoreModule = typeof import("@a2a-js/sdk");
type ServerModule = typeof import("@a2a-js/sdk/server");
type LegacyModule = typeof import("@a2a-js/sdk/compat/v0_3/server");
type ErrorsModule = typeof import("@a2a-js/sdk/errors");

/** The parts of `@a2a-js/sdk` the server uses. */
export type A2aSdk = { core: CoreModule; server: ServerModule; legacy: LegacyModule; errors: ErrorsModule };

const PACKAGE = "@a2a-js/sdk";
export const INSTALL_A2A = `npm install ${PACKAGE}@1`;

let loading: Promise<A2aSdk> | undefined;

/**
 * Loads the A2A SDK once; a `UserError` naming the install command when it is missing.
 *
 * @example
 * await loadA2aSdk(); // fails early, before a server starts, when the package is not installed
 */
export function loadA2aSdk(): Promise<A2aSdk> {
  loading ??= Promise.all([
    import("@a2a-js/sdk"),
    import("@a2a-js/sdk/server"),
    import("@a2a-js/sdk/compat/v0_3/server"),
    import("@a2a-js/sdk/errors"),
  ]).then(
    ([core, server, legacy, errors]) => ({ core, server, legacy, errors }),
    (error) => {
      loading = undefined;
      throw missing(error);
    },
  );
  return loading;
}

function missing(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = String((error as { message?: unknown } | null)?.message ?? error);
  if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && message.includes(PACKAGE))
    return new UserError(
      `createServer({ a2a: true }) needs the optional package ${PACKAGE}, which is not installed: run \`${INSTALL_A2A}\``,
      { cause: error },
    );
  return error;
}
