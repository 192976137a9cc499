/**
 * From response bytes to text: what kind of content it is, and which character set to
 * decode it with (the Content-Type header, then a BOM, then `<meta charset>`, then UTF-8
 * with replacement characters, never an exception).
 */

/** How web_fetch treats a body. */
export type ContentKind = "html" | "json" | "text" | "binary";

/** The media type without parameters, lower case (`"text/html"`); `""` when absent. */
export function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

/** The `charset` parameter of a Content-Type header, if any. */
export function charsetOf(contentType: string | null | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? "");
  return match?.[2]?.toLowerCase();
}

const TEXT_TYPES = new Set([
  "application/xml",
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "application/x-yaml",
  "application/yaml",
  "application/toml",
  "application/x-sh",
  "application/sql",
  "application/graphql",
  "application/x-ndjson",
  "application/rss+xml",
  "application/atom+xml",
]);

/**
 * The kind a media type announces, or, when the server gave none (or only
 * `application/octet-stream`), the kind the first bytes look like.
 */
export function contentKind(mediaType: string, head: Uint8Array): ContentKind {
  if (mediaType === "text/html" || mediaType === "application/xhtml+xml") return "html";
  if (mediaType === "application/json" || mediaType.endsWith("+json") || mediaType === "text/json")
    return "json";
  if (mediaType.startsWith("text/") || mediaType.endsWith("+xml") || TEXT_TYPES.has(mediaType)) return "text";
  if (mediaType !== "" && mediaType !== "application/octet-stream") return "binary";
  return sniff(head);
}

function sniff(head: Uint8Array): ContentKind {
  const sample = head.subarray(0, 1024);
  if (sample.includes(0)) return "binary";
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(sample.subarray(0, lastCompleteUtf8(sample)));
  } catch {
    return "binary";
  }
  const start = text.trimStart().slice(0, 64).toLowerCase();
  if (start.startsWith("<!doctype html") || start.startsWith("<html") || start.startsWith("<head"))
    return "html";
  if (start.startsWith("{") || start.startsWith("[")) return "json";
  return "text";
}

/** Length of `bytes` without a UTF-8 sequence cut off at its end (a sample may end mid-character). */
function lastCompleteUtf8(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const byte = bytes[end - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? end - back : end;
  }
  return end;
}

/** The charset a `<meta charset>` or `<meta http-equiv="Content-Type">` declares in the first bytes. */
export function sniffHtmlCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 4096));
  const match =
    // Bounded repetitions, and no two runs of white space side by side: linear in the head.
    /<meta[^>]{1,512}?charset\s*=\s*(?:["']\s*)?([\w.:-]+)/i.exec(head) ??
    /<\?xml[^>]{1,512}?encoding\s*=\s*["']([\w.:-]+)/i.exec(head);
  return match?.[1]?.toLowerCase();
}

/**
 * Decodes a body. A byte-order mark wins (as in browsers), then the header's charset, then
 * for HTML the page's own `<meta charset>`, then UTF-8. Unknown labels fall back to UTF-8;
 * invalid bytes become U+FFFD.
 *
 * @example
 * decodeBody(bytes, { headerCharset: "windows-1252", html: false })
 */
export function decodeBody(
  bytes: Uint8Array,
  options: { headerCharset?: string | undefined; html: boolean },
): string {
  const label =
    bomCharset(bytes) ??
    options.headerCharset ??
    (options.html ? sniffHtmlCharset(bytes) : undefined) ??
    "utf-8";
  let decoder: { encoding: string; decode(bytes: Uint8Array): string };
  try {
    decoder = new TextDecoder(label);
  } catch {
    decoder = new TextDecoder("utf-8"); // an unknown label
  }
  // Node's windows-1252 decoder is really ISO-8859-1: 0x80–0x9F come out as C1 controls
  // instead of € ‚ ƒ „ … (nodejs/node#56542), so that range is mapped here.
  return decoder.encoding === "windows-1252" ? decodeWindows1252(bytes) : decoder.decode(bytes);
}

/** Windows-1252's 0x80–0x9F; the five unassigned bytes map to the C1 control of the same value, as browsers do. */
const WINDOWS_1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d,
  0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a,
  0x153, 0x9d, 0x17e, 0x178,
];

function decodeWindows1252(bytes: Uint8Array): string {
  const units = new Uint16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    units[i] = b >= 0x80 && b < 0xa0 ? WINDOWS_1252_HIGH[b - 0x80]! : b;
  }
  let out = "";
  for (let i = 0; i < units.length; i += 8192) out += String.fromCharCode(...units.subarray(i, i + 8192));
  return out;
}

function bomCharset(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
  return undefined;
}
