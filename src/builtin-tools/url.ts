/**
 * URL rules shared by the reader and the HTML converter: only absolute http(s) URLs are
 * fetched or shown, and credentials never travel.
 */

/**
 * Resolves `raw` against `base` and returns it when it is an http(s) URL worth showing.
 * `data:`, `blob:`, `javascript:` and the like give `undefined`: a single inline base64
 * image can be 100 KB inside one attribute, and a model can do nothing with it anyway.
 * Fragment-only targets (`#top`) give `undefined` unless `links` is set, where they are
 * kept as absolute links to a section of the page; `links` also keeps `mailto:`.
 *
 * @example
 * resolveHttpUrl("../a.png", "https://x.org/docs/") // → "https://x.org/a.png"
 * resolveHttpUrl("data:image/png;base64,...", "https://x.org/") // → undefined
 */
export function resolveHttpUrl(
  raw: string | null | undefined,
  base: string,
  options: { links?: boolean } = {},
): string | undefined {
  const text = raw?.trim();
  if (!text) return undefined;
  if (text.startsWith("#") && !options.links) return undefined;
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    return undefined;
  }
  if (url.protocol === "mailto:" && options.links) return url.href;
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  return url.href;
}

/** Why a URL cannot be fetched, or the URL to fetch (credentials removed). */
export type FetchUrl = { ok: true; url: URL; hadCredentials: boolean } | { ok: false; reason: string };

/**
 * Checks a URL a model (or a redirect) asked for: absolute, http or https, and without
 * `user:password@`, which is removed so that credentials never reach another host.
 *
 * @example
 * parseFetchUrl("https://user:pw@example.com/a") // → { ok: true, url: https://example.com/a, hadCredentials: true }
 */
export function parseFetchUrl(raw: string, base?: string): FetchUrl {
  let url: URL;
  try {
    url = base === undefined ? new URL(raw) : new URL(raw, base);
  } catch {
    return { ok: false, reason: `not an absolute URL: ${shorten(raw)}` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, reason: `unsupported scheme "${url.protocol}" (only http: and https: are fetched)` };
  }
  const hadCredentials = url.username !== "" || url.password !== "";
  url.username = "";
  url.password = "";
  return { ok: true, url, hadCredentials };
}

/** Keeps a quoted URL or value to a readable length in messages. */
export function shorten(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
