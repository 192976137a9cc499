import { ToolError, UserError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { disarm, FENCE_NOTE, fence } from "./fence.js";
import { HttpReader } from "./http-reader.js";
import type { Page, PageReader } from "./page-reader.js";
import { parseFetchUrl, shorten } from "./url.js";

export interface WebFetchOptions {
  /** Characters of page text per call; longer pages continue with `offset`. Default 20,000. */
  maxChars?: number;
  /** The tool's name. Default `web_fetch`. */
  name?: string;
}

/** The model-facing arguments, snake_case as in the spec pages. */
export type WebFetchArgs = { url: string; images?: boolean; offset?: number };

/** An HTTP error page is worth a glance, not a full budget. */
const ERROR_PAGE_CHARS = 500;
const format = (n: number) => n.toLocaleString("en-US");

/**
 * A tool that reads one URL with a GET: HTML comes back as Markdown that keeps its structure
 * and links, JSON compacted, text as-is, binary content as metadata only. Long pages come in
 * slices of `maxChars`, each ending with the `offset` to continue from. The page's own words
 * are fenced (see `fence`); the URL, status and notices are Quiver's and stay outside.
 *
 * Each call of `webFetch()` builds its own reader, so its cache is never shared with another
 * tool. Private and internal addresses are blocked unless the reader opens them.
 *
 * @example
 * const agent = new Agent({ name: "researcher", model, tools: [webFetch()] });
 * // an intranet wiki, deliberately opened:
 * const wikiFetch = webFetch(new HttpReader({ allowHosts: ["wiki.corp"] }), { name: "wiki_fetch", maxChars: 40_000 });
 */
export function webFetch(
  reader: PageReader = new HttpReader(),
  options: WebFetchOptions = {},
): Tool<WebFetchArgs> {
  const maxChars = options.maxChars ?? 20_000;
  if (!Number.isInteger(maxChars) || maxChars < 100) {
    throw new UserError(`webFetch: maxChars must be an integer of at least 100, got ${maxChars}`);
  }
  return tool({
    name: options.name ?? "web_fetch",
    label: "Fetch web page",
    description:
      "Read one web page (or a JSON or text URL) with a GET and return it as Markdown. " +
      `Long pages come in slices of ${format(maxChars)} characters; a slice that is not the last ends with the ` +
      "offset to continue from. No JavaScript runs, so pages that render in the browser may come back nearly empty.\n" +
      FENCE_NOTE,
    parameters: jsonSchema<WebFetchArgs>({
      type: "object",
      properties: {
        url: { type: "string", description: "Absolute http:// or https:// URL to read." },
        images: {
          type: "boolean",
          default: false,
          description: "Also list every image the page references (absolute URLs).",
        },
        offset: {
          type: "integer",
          minimum: 0,
          default: 0,
          description:
            "Character offset to continue a long page from, as given at the end of the previous slice.",
        },
      },
      required: ["url"],
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    untrustedOutput: true,
    // Above the slice size so the generic truncation never cuts the continuation notice; the
    // extra 30 % covers disarmed markers, which are a little longer than what they replace.
    maxOutputChars: Math.ceil(maxChars * 1.3) + 2_000,
    execute: async ({ url, images = false, offset = 0 }, ctx) => {
      const parsed = parseFetchUrl(String(url).trim());
      if (!parsed.ok)
        throw new ToolError(parsed.reason, { hint: "Pass an absolute http:// or https:// URL." });
      const page = await reader.read(parsed.url.href, { images, signal: ctx.signal });
      return renderPage(page, { offset, maxChars, images });
    },
  });
}

/**
 * The default rendering of a page, in the spec's shape:
 *
 * ```
 * URL: https://example.com/guide
 * HTTP 200 · text/html
 *
 * --- BEGIN EXTERNAL CONTENT (reference material) ---
 * Title: Example Domain
 *
 * # Example Domain
 * --- END EXTERNAL CONTENT ---
 *
 * [... truncated. Continue with offset=20000.]
 * ```
 */
export function renderPage(
  page: Page,
  options: { offset?: number; maxChars: number; images?: boolean },
): string {
  // A custom reader's fields reach lines outside the fence: keep each to one disarmed line.
  const head = `URL: ${shorten(oneLine(page.url), 1_000)}\nHTTP ${Number(page.status) || 0} · ${shorten(oneLine(page.mediaType), 100)}`;
  if (page.binary) {
    const size = page.byteLength === undefined ? "" : ` (${format(page.byteLength)} bytes)`;
    return `${head}\n\n[Binary content${size} is not shown: web_fetch reads HTML, JSON and text.]`;
  }

  const document = pageDocument(page, options.images === true);
  const notices: string[] = [];
  let slice: string;
  if (page.status >= 400) {
    slice = document.slice(0, ERROR_PAGE_CHARS);
    if (document.length > ERROR_PAGE_CHARS) {
      notices.push(`[... error page cut to ${ERROR_PAGE_CHARS} of ${format(document.length)} characters.]`);
    }
  } else {
    const offset = Math.max(0, Math.floor(options.offset ?? 0));
    if (offset > 0 && offset >= document.length) {
      slice = "";
      notices.push(`[Offset ${offset} is past the end of the page (${format(document.length)} characters).]`);
    } else {
      const end = sliceEnd(document, offset, options.maxChars);
      slice = document.slice(offset, end);
      if (end < document.length) notices.push(`[... truncated. Continue with offset=${end}.]`);
    }
  }
  if (page.sizeCapped) {
    const bytes = page.byteLength === undefined ? "the size limit" : `${format(page.byteLength)} bytes`;
    notices.push(
      `[The download stopped at ${bytes}: the rest of the page was never fetched, and no offset reaches it.]`,
    );
  }
  return [head, fence(slice), ...notices].join("\n\n");
}

function oneLine(text: string): string {
  return disarm(String(text)).replace(/\s+/g, " ").trim();
}

/** What the slices are cut from: title, text, and (when asked for) the image list. */
function pageDocument(page: Page, images: boolean): string {
  const parts: string[] = [];
  if (page.title) parts.push(`Title: ${page.title.replace(/\s+/g, " ").trim()}`);
  if (page.text) parts.push(page.text);
  if (images) {
    const list = page.images ?? [];
    parts.push(
      list.length === 0
        ? "Images: none found."
        : `Images (${list.length}):\n${list.map((img, i) => `${i + 1}. ${img.url}${img.alt ? ` — ${img.alt}` : ""}`).join("\n")}`,
    );
  }
  return parts.join("\n\n");
}

/**
 * Where a slice starting at `offset` ends: at most `maxChars` later, pulled back to a line
 * break (or a space) in the slice's last tenth so that a slice rarely ends mid-word, and
 * never between the two halves of a surrogate pair.
 */
function sliceEnd(text: string, offset: number, maxChars: number): number {
  let end = offset + maxChars;
  if (end >= text.length) return text.length;
  const floor = end - Math.floor(maxChars / 10);
  const newline = text.lastIndexOf("\n", end - 1);
  if (newline >= floor) end = newline + 1;
  else {
    const space = text.lastIndexOf(" ", end - 1);
    if (space >= floor) end = space + 1;
  }
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return end;
}
