/**
 * A message that provably never reached the server: the process was gone or the
 * connection was refused before a byte was accepted. Only such a failure makes it safe to
 * send a call that has side effects again after reconnecting.
 */
export class NotDelivered extends Error {
  override name = "NotDelivered";
}

/** Connection-level network errors that mean the request was never accepted by the peer. */
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/** Whether `error` (from fetch or a socket) says the connection was never established. */
export function neverConnected(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NEVER_CONNECTED.has(code)) return true;
  }
  return false;
}
