import { UserError } from "../errors.js";
import { HttpError } from "./http.js";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * `createServer`'s `allowedOrigins` as bare origins (`https://app.example`, with the port only
 * when it is not the scheme's default). `null` and `*` are refused: either would let any page in.
 *
 * @example
 * allowedOriginSet(["https://app.example/"]); // Set { "https://app.example" }
 */
export function allowedOriginSet(origins: readonly string[] | undefined): ReadonlySet<string> {
  const allowed = new Set<string>();
  for (const given of origins ?? []) {
    const origin = typeof given === "string" ? originOf(given) : undefined;
    if (origin === undefined)
      throw new UserError(
        `allowedOrigins: ${JSON.stringify(given)} is not an origin; give scheme, host and port only, like "https://app.example" ("null" and "*" are never allowed)`,
      );
    allowed.add(origin);
  }
  return allowed;
}

/**
 * Refuses (403) a state-changing request a browser sent from a page that is neither this
 * server's nor an allowed origin: an `Origin` of another site or `null` (sandboxed frames, file
 * pages), or, without `Origin`, `Sec-Fetch-Site: cross-site` / `same-site`. A request with
 * neither header (curl, another server, the SDKs) is not a browser's and passes.
 *
 * The server's own origin is the request's: its Host with the URL's scheme, or the scheme a proxy
 * in front reports in `X-Forwarded-Proto` (a page cannot set that header on a request to another
 * origin without a CORS preflight, which this server never grants).
 *
 * @example
 * checkOrigin(request, allowedOriginSet(["https://app.example"])); // throws HttpError 403 when refused
 */
export function checkOrigin(
  request: Request,
  allowed: ReadonlySet<string>,
  remedy = "list it in createServer's allowedOrigins if that page is yours",
): void {
  if (!STATE_CHANGING.has(request.method)) return;
  const origin = request.headers.get("origin");
  if (origin !== null) {
    const normalized = originOf(origin);
    if (normalized !== undefined && (normalized === ownOrigin(request) || allowed.has(normalized))) return;
    throw new HttpError(
      403,
      "cross_origin",
      origin === "null"
        ? "requests from an opaque origin (Origin: null) are refused"
        : `requests from ${origin} are refused; ${remedy}`,
    );
  }
  refuseCrossSite(request);
}

/**
 * Refuses (403) a request, of any method, that a browser sent for a page of another site
 * without an `Origin`: `Sec-Fetch-Site: cross-site` or `same-site` on a `<script>`, `<img>`,
 * `<object>` or no-cors fetch, or on a frame or link it opened. Such a page cannot read the
 * answer, but it can tell a 200 from a 404 (does a chat of that name exist?), and the browser
 * sends the cookies it holds for this server along. A page that may read an answer (CORS) sends
 * its `Origin`, and is left to the rest of the checks; so are clients that are not browsers
 * (no `Sec-Fetch-Site`) and the server's own page (`same-origin`).
 *
 * @example
 * refuseCrossSite(request); // before answering anything a request's caller may see
 */
export function refuseCrossSite(request: Request): void {
  if (request.headers.get("origin") !== null) return;
  const site = request.headers.get("sec-fetch-site");
  if (site === "cross-site" || site === "same-site")
    throw new HttpError(
      403,
      "cross_origin",
      `requests from another site (Sec-Fetch-Site: ${site}) are refused`,
    );
}

/** The origin this request was made to, as a browser on this server's own page would send it. */
function ownOrigin(request: Request): string | undefined {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return undefined;
  }
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  const scheme = forwarded === "http" || forwarded === "https" ? forwarded : url.protocol.slice(0, -1);
  const host = request.headers.get("host") ?? url.host;
  return originOf(`${scheme}://${host}`);
}

/** `scheme://host[:port]` normalized, for http(s) origins with nothing after the host; else undefined. */
function originOf(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return undefined;
  return url.origin;
}
