// How one AG-UI response is encoded: SSE (the default) or AG-UI's protobuf framing, which a
// client asks for with `Accept: application/vnd.ag-ui.event+proto`.
import type { Event as AgUiEvent } from "@ag-ui/core";
import { AGUI_MEDIA_TYPE, EventEncoder } from "@ag-ui/encoder";
import { SSE_HEADERS } from "./http.js";

/** The encoding of one response: each event as sent, and the headers that say which. */
export type AgUiWire = { frame(event: AgUiEvent): string | Uint8Array; headers: Record<string, string> };

const encoder = new EventEncoder();

const sse: AgUiWire = {
  frame: (event) => encoder.encodeSSE(event),
  headers: SSE_HEADERS,
};

const protobuf: AgUiWire = {
  // Each event is a protobuf message after its length (4 bytes, big-endian), as @ag-ui/client reads it.
  frame: (event) => encoder.encodeProtobuf(event),
  headers: {
    "content-type": AGUI_MEDIA_TYPE,
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
  },
};

/**
 * Protobuf when the request's `Accept` names AG-UI's protobuf type with a quality above zero
 * and no lower than any it gives `text/event-stream`; SSE otherwise. Wildcards (`*\/*`, what
 * curl and fetch send) stay on SSE, which any client can read.
 *
 * @example
 * agUiWire("application/vnd.ag-ui.event+proto").headers["content-type"]; // the protobuf type
 */
export function agUiWire(accept: string | null): AgUiWire {
  if (!accept) return sse;
  const proto = qualityIn(accept, AGUI_MEDIA_TYPE);
  if (proto === undefined || proto <= 0) return sse;
  return proto >= (qualityIn(accept, "text/event-stream") ?? 0) ? protobuf : sse;
}

/** The quality an `Accept` header gives a media type it names exactly (undefined if it does not). */
function qualityIn(accept: string, type: string): number | undefined {
  let quality: number | undefined;
  for (const range of accept.split(",")) {
    const [name, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (name !== type) continue;
    const q = params.find((param) => param.startsWith("q="));
    const value = q === undefined ? 1 : Number(q.slice(2));
    if (Number.isFinite(value)) quality = Math.max(quality ?? 0, value);
  }
  return quality;
}
