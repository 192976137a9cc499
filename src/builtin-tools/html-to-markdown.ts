/**
 * HTML → Markdown for web_fetch: linkedom parses once; a pre-pass fixes what the later
 * stages get wrong (relative URLs, lazy and responsive images, code languages, hidden text,
 * inline tags mdream does not know); Readability picks the main content, with the whole
 * body as a fallback when it finds too little; @mdream/js writes the Markdown.
 *
 * This module is heavy (≈ 1 MB of parser code) and is only ever loaded with `import()` by
 * the reader that needs it, so `import "quiver-agents/tools"` stays cheap.
 */
import { htmlToMarkdown as mdream } from "@mdream/js";
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { boundHtml } from "./html-bounds.js";
import type { PageImage } from "./page-reader.js";
import { resolveHttpUrl } from "./url.js";

export interface HtmlToMarkdownOptions {
  /** The page's final URL (after redirects); relative links resolve against it and `<base href>`. */
  url: string;
  /** Extract the main content with Readability (default true); false converts the whole body. */
  mainContent?: boolean;
}

export interface ConvertedHtml {
  title?: string;
  markdown: string;
  /** Every image the page references, deduplicated: `og:image` first, then document order. */
  images: PageImage[];
}

/** Elements that never carry readable text, or only carry script, layout or page chrome. */
const DROPPED =
  "title, script, style, noscript, template, iframe, frame, frameset, svg, object, embed, " +
  "canvas, link, meta, button, input, select, textarea, dialog, [hidden], [aria-hidden='true'], [role='dialog']";
/** Inline tags mdream does not know; it would drop the space before them (`with <tt>x</tt>` → `withx`). */
const CODE_LIKE = "tt, kbd, samp";
/** Below this many characters of main content (and half the body), the whole body is used instead. */
const MIN_MAIN_CONTENT_CHARS = 500;
/**
 * Readability's search for the main content costs about (elements × nesting depth) and more
 * on deep pages: above this budget the whole body is converted instead, which costs time
 * linear in the page. Real articles need well under a tenth of it (a 260 KB news page: 850
 * elements, 20 levels); 1 MB of nested `<div>` chains would need a minute.
 */
const MAIN_CONTENT_BUDGET = 1_500_000;
/** And above this many nodes, whatever their depth (200,000 flat paragraphs took seconds). */
const MAIN_CONTENT_MAX_NODES = 30_000;

/**
 * Converts one HTML page to Markdown that keeps headings, lists, tables, code blocks (with
 * their language) and absolute links, and lists the page's images.
 *
 * @example
 * const { title, markdown, images } = htmlToMarkdown(html, { url: "https://example.com/guide" });
 */
export function htmlToMarkdown(html: string, options: HtmlToMarkdownOptions): ConvertedHtml {
  const bounded = boundHtml(html);
  const { document } = parseHTML(bounded.html);
  const base = baseUrl(document, options.url);
  const title = pageTitle(document);
  const images = prepare(document, base);

  const body = document.body ?? document.documentElement;
  let content: any = body;
  const affordable =
    bounded.nodes <= MAIN_CONTENT_MAX_NODES && bounded.nodes * bounded.deepest <= MAIN_CONTENT_BUDGET;
  if (options.mainContent !== false && affordable) {
    const bodyChars = textLength(body);
    // Readability takes the document apart; the body is kept aside as the fallback.
    const fallback = body.cloneNode(true);
    const article = new Readability(document as any, {
      keepClasses: true,
      serializer: (el: any) => el,
    }).parse();
    const main = article?.content as any;
    const mainChars = main ? textLength(main) : 0;
    content = main && !(mainChars < MIN_MAIN_CONTENT_CHARS && mainChars < bodyChars / 2) ? main : fallback;
  }
  // Readability demotes every h1 to h2; the pre-pass marked the real ones.
  for (const h of content.querySelectorAll("[data-quiver-h1]")) {
    if (h.localName !== "h1") renameElement(h, "h1");
  }
  for (const marked of content.querySelectorAll("[data-quiver-h1]")) marked.removeAttribute("data-quiver-h1");

  // mdream's own `clean` pass is not needed (the pre-pass already removed empty and self
  // links) and would cost about half of mdream's time.
  const markdown = mdream(content.innerHTML ?? "");
  const result: ConvertedHtml = { markdown: tidy(markdown), images };
  if (title) result.title = title;
  return result;
}

function baseUrl(document: any, pageUrl: string): string {
  const href = document.querySelector("base[href]")?.getAttribute("href");
  if (href) {
    const resolved = resolveHttpUrl(href, pageUrl);
    if (resolved) return resolved;
  }
  return pageUrl;
}

function pageTitle(document: any): string | undefined {
  const title = (document.querySelector("title")?.textContent ?? "").replace(/\s+/g, " ").trim();
  return title || meta(document, "og:title") || undefined;
}

function meta(document: any, name: string): string | undefined {
  const el = document.querySelector(`meta[property="${name}"], meta[name="${name}"]`);
  const value = el?.getAttribute("content")?.trim();
  return value || undefined;
}

/** The pre-pass. Mutates the document; returns the image list. */
function prepare(document: any, base: string): PageImage[] {
  const images = new ImageList();
  for (const name of ["og:image", "og:image:secure_url", "twitter:image"]) {
    const url = meta(document, name);
    if (url) images.add(url, base, meta(document, "og:image:alt"));
  }

  for (const el of document.querySelectorAll(DROPPED)) el.remove();
  // Text a browser would not show is a classic hiding place for injected instructions.
  for (const el of document.querySelectorAll("[style]")) {
    const style = String(el.getAttribute("style")).toLowerCase().replace(/\s+/g, "");
    if (/display:none|visibility:hidden|font-size:0(?![.\d])/.test(style)) el.remove();
  }
  for (const el of document.querySelectorAll(CODE_LIKE)) renameElement(el, "code");
  for (const h of document.querySelectorAll("h1")) h.setAttribute("data-quiver-h1", "");

  for (const a of document.querySelectorAll("a[href]")) {
    const raw = String(a.getAttribute("href")).trim();
    // A link to "#", or a heading's link to itself, says nothing a reader needs.
    const selfLink =
      raw === "" || raw === "#" || (raw.startsWith("#") && a.closest("h1, h2, h3, h4, h5, h6"));
    const href = selfLink ? undefined : resolveHttpUrl(raw, base, { links: true });
    if (href) a.setAttribute("href", href);
    // A heading's permalink sign (`#`, `¶`, `§`, `🔗`) is not part of the heading.
    else if (selfLink && /^\s*(?:#|¶|§|🔗)\s*$/u.test(a.textContent)) a.remove();
    else unwrap(a); // javascript:, data:, broken: keep the words, drop the link
  }

  for (const picture of document.querySelectorAll("picture")) {
    const img = picture.querySelector("img");
    const candidates = [...picture.querySelectorAll("source")].map((s: any) => s.getAttribute("srcset"));
    if (img) candidates.push(img.getAttribute("srcset"));
    const best = largestCandidate(candidates.filter(Boolean).join(","));
    if (img && best) img.setAttribute("src", best);
  }
  for (const img of document.querySelectorAll("img")) {
    const src = imageSource(img, base);
    if (!src || isTrackingPixel(img)) {
      img.remove();
      continue;
    }
    img.setAttribute("src", src);
    img.removeAttribute("srcset");
    images.add(src, base, img.getAttribute("alt") ?? undefined);
  }

  // Links left with nothing to show (icon fonts, anchors whose image was dropped) would be `[](url)`.
  for (const a of document.querySelectorAll("a[href]")) {
    if (!a.textContent.trim() && !a.querySelector("img")) a.remove();
  }
  for (const pre of document.querySelectorAll("pre")) labelCodeBlock(pre);
  return images.list;
}

/** The best URL for an image: the largest `srcset` candidate, else `src`, else a lazy-loading attribute. */
function imageSource(img: any, base: string): string | undefined {
  const candidates = [
    largestCandidate(img.getAttribute("srcset") ?? img.getAttribute("data-srcset") ?? ""),
    img.getAttribute("src"),
    img.getAttribute("data-src"),
    img.getAttribute("data-lazy-src"),
    img.getAttribute("data-original"),
  ];
  for (const candidate of candidates) {
    const url = candidate ? resolveHttpUrl(candidate, base) : undefined;
    if (url) return url; // data:, blob:, javascript: and "#" resolve to nothing: try the next
  }
  return undefined;
}

/** The candidate with the largest width (`800w`) or density (`2x`) descriptor in a srcset. */
function largestCandidate(srcset: string): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const { url, descriptor } of parseSrcset(srcset)) {
    const value = descriptor ? Number.parseFloat(descriptor) : 1;
    // Widths outrank densities: 1x/2x say nothing about pixels, 800w does.
    const score = descriptor.endsWith("w") ? value * 1000 : value;
    if (Number.isFinite(score) && score > bestScore) {
      best = url;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The HTML srcset grammar, simplified: a URL runs to the next whitespace (so commas inside
 * it, as in `w_400,c_fill`, stay), and its descriptor runs to the next comma.
 */
function parseSrcset(srcset: string): Array<{ url: string; descriptor: string }> {
  const out: Array<{ url: string; descriptor: string }> = [];
  let i = 0;
  while (i < srcset.length) {
    while (i < srcset.length && /[\s,]/.test(srcset[i]!)) i++;
    const start = i;
    while (i < srcset.length && !/\s/.test(srcset[i]!)) i++;
    let url = srcset.slice(start, i);
    let descriptor = "";
    if (url.endsWith(",")) {
      let end = url.length;
      while (end > 0 && url.charCodeAt(end - 1) === 0x2c) end--;
      url = url.slice(0, end);
    } else {
      const from = i;
      while (i < srcset.length && srcset[i] !== ",") i++;
      descriptor = srcset.slice(from, i).trim().toLowerCase();
    }
    if (url) out.push({ url, descriptor });
  }
  return out;
}

function isTrackingPixel(img: any): boolean {
  const tiny = (v: string | null) => v !== null && /^\s*[01](px)?\s*$/.test(v);
  return tiny(img.getAttribute("width")) && tiny(img.getAttribute("height"));
}

const LANGUAGE_CLASS =
  /(?:^|\s)(?:lang(?:uage)?-|highlight-source-|highlight-|sourcecode\s+|brush:\s*)([a-z0-9+#._-]+)/i;

/**
 * Makes every code block `<pre><code class="language-x">`, the one shape mdream turns into a
 * fenced block with its language, finding the language where sites put it: on `pre`, on
 * `code`, in `data-lang`, or on a wrapping `div.highlight-source-x` (GitHub, Pygments…).
 */
function labelCodeBlock(pre: any): void {
  const code = pre.querySelector("code");
  const holders = [code, pre, pre.parentElement, pre.parentElement?.parentElement].filter(Boolean);
  let language: string | undefined;
  for (const el of holders) {
    language =
      el.getAttribute("data-lang") ||
      el.getAttribute("data-language") ||
      LANGUAGE_CLASS.exec(el.getAttribute("class") ?? "")?.[1];
    if (language) break;
  }
  if (!language) return;
  language = language.toLowerCase().replace(/[^a-z0-9+#._-]/g, "");
  const onlyChild =
    code && [...pre.childNodes].every((n: any) => n === code || (n.nodeType === 3 && !n.textContent.trim()));
  if (onlyChild) {
    code.setAttribute("class", `language-${language}`);
    return;
  }
  const wrapper = pre.ownerDocument.createElement("code");
  wrapper.setAttribute("class", `language-${language}`);
  while (pre.firstChild) wrapper.appendChild(pre.firstChild);
  pre.appendChild(wrapper);
}

function renameElement(el: any, tag: string): void {
  const replacement = el.ownerDocument.createElement(tag);
  for (const { name, value } of [...el.attributes]) replacement.setAttribute(name, value);
  while (el.firstChild) replacement.appendChild(el.firstChild);
  el.replaceWith(replacement);
}

function unwrap(el: any): void {
  const parent = el.parentNode;
  if (!parent) return;
  while (el.firstChild) parent.insertBefore(el.firstChild, el);
  el.remove();
}

function textLength(el: any): number {
  return String(el.textContent ?? "")
    .replace(/\s+/g, " ")
    .trim().length;
}

/**
 * Collapses runs of blank lines and trailing spaces that carry no meaning; two trailing
 * spaces (a Markdown hard break) stay. Line by line rather than with `/[ \t]+$/gm`, which a
 * regex engine retries at every space of a long run that does not end its line.
 */
function tidy(markdown: string): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  let blank = 0;
  for (const line of lines) {
    let end = line.length;
    while (end > 0 && (line.charCodeAt(end - 1) === 0x20 || line.charCodeAt(end - 1) === 0x09)) end--;
    if (end === 0) {
      if (++blank <= 1) out.push("");
      continue;
    }
    blank = 0;
    const trailing = line.slice(end);
    const hardBreak = trailing.length >= 2 && !trailing.includes("\t");
    out.push(hardBreak ? `${line.slice(0, end)}  ` : line.slice(0, end));
  }
  return out.join("\n").trim();
}

class ImageList {
  readonly list: PageImage[] = [];
  readonly #seen = new Set<string>();
  add(raw: string, base: string, alt?: string): void {
    const url = resolveHttpUrl(raw, base);
    if (!url || this.#seen.has(url)) return;
    this.#seen.add(url);
    const text = alt?.replace(/\s+/g, " ").trim();
    this.list.push(text ? { url, alt: text } : { url });
  }
}
