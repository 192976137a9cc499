// The public surface of "quiver-agents/server": re-exports only.
export type { A2aOptions } from "./a2a.js";
export type { A2aPushOptions } from "./a2a-push-options.js";
export type { Caller, ServerAuth } from "./auth.js";
export {
  type CloseOptions,
  createServer,
  type QuiverServer,
  type ServerOptions,
  type ServerRunOptions,
} from "./create-server.js";
export { MAX_BODY_BYTES, MAX_MESSAGE_BODY_BYTES } from "./http.js";
export { type ServeOptions, type Serving, serve } from "./serve.js";
export type { ServerErrorContext, ServerErrorHandler } from "./server-errors.js";
