import { createHash, timingSafeEqual } from "node:crypto";
import { HttpError } from "./http.js";
import { refuseCrossSite } from "./origin.js";
import { AuthFailure } from "./server-errors.js";

/**
 * Who may use the server: a bearer token (one user), or a function that names the user of a
 * request (`null` refuses it with 401; throwing is a failure of the server: 503, reported to
 * `onError`). Without it the server answers only on loopback.
 */
export type ServerAuth =
  | string
  | ((request: Request) => string | null | undefined | Promise<string | null | undefined>);

/** The identity a request acts as: `userId` owns the runs it starts (`undefined`: the single user). */
export type Caller = { userId: string | undefined };

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** True for names and addresses that only reach this machine. */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase();
  return (
    LOOPBACK_NAMES.has(name) ||
    /^127(\.\d{1,3}){3}$/.test(name) ||
    name === "::ffff:127.0.0.1" ||
    name.endsWith(".localhost")
  );
}

/**
 * Authenticates a request. Without `auth`, only loopback requests pass: the Host header must
 * name loopback (a DNS-rebinding page cannot pass it off as its own site), the peer must be
 * loopback when the runtime says who it is, and a browser request from another origin is refused.
 *
 * Whatever the auth, an API request that another site's page made the browser send without an
 * `Origin` is refused first (`refuseCrossSite`): it could only be a probe, and an `auth` function
 * may read cookies the browser sends along. The page and its files (`serving: "page"`) hold nothing
 * of the user's and are exempt: a link to the server, followed, still shows it.
 */
export async function authenticate(
  request: Request,
  auth: ServerAuth | undefined,
  remoteAddress: string | undefined,
  serving: "api" | "page" = "api",
): Promise<Caller> {
  if (serving === "api") refuseCrossSite(request);
  if (auth === undefined) {
    const url = new URL(request.url);
    const host = hostOf(request.headers.get("host") ?? url.host);
    if (!isLoopback(host) || (remoteAddress !== undefined && !isLoopback(remoteAddress)))
      throw new HttpError(
        403,
        "loopback_only",
        "this server has no auth configured, so it only answers requests to and from this machine; pass { auth } to createServer",
      );
    // A reverse proxy in front of a loopback server makes every peer look local; the address
    // it forwards does not. (A proxy that forwards nothing cannot be told apart: give it auth.)
    const relayed = forwardedFor(request.headers).find((address) => !isLoopback(address));
    if (relayed !== undefined)
      throw new HttpError(
        403,
        "loopback_only",
        `this server has no auth configured, and this request was forwarded from ${relayed}; pass { auth } to createServer to serve other machines`,
      );
    const origin = request.headers.get("origin");
    if (origin && origin !== "null" && !isLoopback(hostOf(safeHost(origin))))
      throw new HttpError(403, "cross_origin", `requests from ${origin} are refused`);
    return { userId: undefined };
  }
  if (typeof auth === "string") {
    const token = bearer(request);
    if (token === undefined || !sameSecret(token, auth)) throw unauthorized();
    return { userId: undefined };
  }
  let userId: string | null | undefined;
  try {
    userId = await auth(request);
  } catch (error) {
    // Its backend failed, which says nothing of the credentials: a 503 the operator hears of,
    // not a 401 that makes a page log its user out and an outage look like bad tokens.
    throw new AuthFailure(error);
  }
  if (typeof userId !== "string" || userId === "") throw unauthorized();
  return { userId };
}

/** The client addresses proxies forwarded (`X-Forwarded-For`, `X-Real-IP`, `Forwarded: for=`). */
function forwardedFor(headers: Headers): string[] {
  const addresses: string[] = [];
  for (const name of ["x-forwarded-for", "x-real-ip"])
    for (const part of headers.get(name)?.split(",") ?? []) addresses.push(part.trim());
  for (const match of (headers.get("forwarded") ?? "").matchAll(/for=("[^"]*"|[^;,\s]+)/gi))
    addresses.push(match[1]!.replace(/^"|"$/g, ""));
  // "unknown" and obfuscated names (`_hidden`) are not loopback: a proxy that hides the client is refused.
  return addresses.filter((a) => a !== "").map(addressOnly);
}

/** "1.2.3.4:80" → "1.2.3.4", "[::1]:80" → "::1"; anything else as it is. */
function addressOnly(value: string): string {
  if (value.startsWith("[")) return value.slice(1, value.indexOf("]") > 0 ? value.indexOf("]") : undefined);
  return /^[\d.]+:\d+$/.test(value) ? value.slice(0, value.lastIndexOf(":")) : value;
}

function bearer(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  const match = header ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  return match?.[1];
}

/** Compares digests, so the time taken says nothing about how much of the token matched. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

function unauthorized(): HttpError {
  return new HttpError(401, "unauthorized", "send Authorization: Bearer <token>");
}

/** "host:port" or "[v6]:port" → the host alone. */
function hostOf(hostHeader: string): string {
  if (hostHeader.startsWith("[")) return hostHeader.slice(0, hostHeader.indexOf("]") + 1);
  const colon = hostHeader.lastIndexOf(":");
  return colon > 0 && hostHeader.indexOf(":") === colon ? hostHeader.slice(0, colon) : hostHeader;
}

function safeHost(origin: string): string {
  try {
    return new URL(origin).host;
  } catch {
    return origin;
  }
}
