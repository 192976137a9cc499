/**
 * The extension point behind web_fetch: anything that turns a URL into a `Page`.
 * `HttpReader` is the built-in one; a hosted extraction service is a short class.
 */

/** One image a page references, with an absolute URL. */
export interface PageImage {
  url: string;
  alt?: string;
}

/**
 * What a reader returns: the whole readable text of one URL. Clipping to a character budget
 * is web_fetch's job, so a reader returns everything it has.
 */
export interface Page {
  /** The final URL, after redirects. */
  url: string;
  /** The HTTP status of the final response. */
  status: number;
  /** The media type without parameters (`text/html`, `application/json`). */
  mediaType: string;
  title?: string;
  /** Markdown for HTML, compact JSON for JSON, the text for text; empty for binary content. */
  text: string;
  /** Present when `images: true` was asked for: every image the page references, deduplicated. */
  images?: PageImage[];
  /** The download stopped at the reader's byte cap; the rest of the page was never fetched. */
  sizeCapped?: boolean;
  /** Set for content that is not text (images, PDFs, archives): only its metadata is shown. */
  binary?: boolean;
  /** The body's size in bytes, when known (Content-Length for binary content). */
  byteLength?: number;
}

export interface ReadOptions {
  /** Also list every image the page references (`Page.images`). */
  images?: boolean;
  /** Aborts the read (the run was cancelled or the call timed out). */
  signal?: AbortSignal;
}

/**
 * Turns a URL into a `Page`. Implementations must be safe for concurrent calls.
 *
 * @example
 * class JinaReader implements PageReader {
 *   async read(url: string, { images = false, signal }: ReadOptions = {}): Promise<Page> {
 *     const headers: Record<string, string> = { "X-Return-Format": "markdown" };
 *     if (images) headers["X-With-Images-Summary"] = "true";
 *     const response = await fetch(`https://r.jina.ai/${url}`, { headers, signal });
 *     return { url, status: response.status, mediaType: "text/markdown", text: await response.text() };
 *   }
 * }
 * const fetchTool = webFetch(new JinaReader());
 */
export interface PageReader {
  read(url: string, options?: ReadOptions): Promise<Page>;
}
