import type { IncomingMessage } from "node:http";
import { ToolError } from "../errors.js";
import type { AddressPolicy, BlockedAddressError } from "./address-policy.js";
import { type ContentKind, charsetOf, contentKind, decodeBody, mediaTypeOf } from "./body-decoding.js";
import { sharedConversionPool } from "./conversion-pool.js";
import type { GuardedAgents, LookupFunction } from "./guarded-agent.js";
import { PageCache } from "./page-cache.js";
import type { Page, PageReader, ReadOptions } from "./page-reader.js";
import { parseFetchUrl, shorten } from "./url.js";

export type { LookupFunction } from "./guarded-agent.js";

export interface HttpReaderOptions {
  /** For the whole read: every redirect hop and the body. Default 30,000 ms. */
  timeoutMs?: number;
  /** The download stops here (decompressed bytes); the page is marked `sizeCapped`. Default 1,000,000. */
  maxBytes?: number;
  /** Pages are cached by URL this long, so an `offset` continuation reads the same version. 0 disables. Default 300,000 ms. */
  cacheTtlMs?: number;
  /** At most this many pages are cached (least recently used go first). Default 32. */
  cacheSize?: number;
  /** The User-Agent header. */
  userAgent?: string;
  /**
   * Fetch private and internal addresses too (loopback, RFC 1918, link-local, metadata…).
   * Off by default: with it, a model that reads untrusted text can be steered into your network.
   */
  allowPrivateNetwork?: boolean;
  /**
   * Hosts that may be private: names (`wiki.corp`), wildcards (`*.corp`), IP literals
   * (`127.0.0.1`) or CIDR ranges (`10.1.0.0/16`). Narrower than `allowPrivateNetwork`.
   */
  allowHosts?: readonly string[];
  /** Redirects followed per read. Default 5. */
  maxRedirects?: number;
  /** Extract the main content with Readability (default true); false converts the whole body. */
  mainContent?: boolean;
  /**
   * The hard deadline for turning one HTML page into Markdown, on its worker thread. A page
   * that takes longer fails with a tool error and its thread is stopped. Default 10,000 ms.
   */
  conversionTimeoutMs?: number;
  /** DNS resolution, `dns.lookup` by default (for tests and split-horizon DNS). Every answer is still checked. */
  lookup?: LookupFunction;
}

const DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; Quiver-web_fetch/0.1)";
const ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,*/*;q=0.5";
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

type Transport = typeof import("./http-transport.js");
type Network = { agents: GuardedAgents; policy: AddressPolicy; transport: Transport };

/**
 * The built-in `PageReader`: one plain HTTP GET (no JavaScript runs, so a single-page app may
 * come back nearly empty), redirects followed by hand with every hop checked, HTML turned
 * into Markdown, JSON compacted, text as-is, binary content described but not downloaded.
 *
 * Private and internal addresses are refused unless opened with `allowPrivateNetwork` or
 * `allowHosts`: each connection is checked when it is made, against the address it really
 * connects to, whatever notation the URL used. Connections are kept alive and reused per
 * reader (`close()` ends them); bodies are decompressed (gzip, deflate, br) as they arrive.
 *
 * @example
 * const reader = new HttpReader({ timeoutMs: 15_000, maxBytes: 2_000_000, cacheTtlMs: 60_000 });
 * const page = await reader.read("https://example.com/guide", { images: true });
 */
export class HttpReader implements PageReader {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly maxRedirects: number;
  readonly userAgent: string;
  readonly conversionTimeoutMs: number;
  readonly #options: HttpReaderOptions;
  readonly #cache: PageCache;
  #network: Promise<Network> | undefined;

  constructor(options: HttpReaderOptions = {}) {
    this.#options = options;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxBytes = options.maxBytes ?? 1_000_000;
    this.maxRedirects = options.maxRedirects ?? 5;
    this.userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.conversionTimeoutMs = options.conversionTimeoutMs ?? 10_000;
    this.#cache = new PageCache(options.cacheTtlMs ?? 300_000, options.cacheSize ?? 32);
  }

  async read(url: string, options: ReadOptions = {}): Promise<Page> {
    const parsed = parseFetchUrl(url);
    if (!parsed.ok) throw new ToolError(parsed.reason, { hint: "Pass an absolute http:// or https:// URL." });
    const key = parsed.url.href;
    const cached = this.#cache.get(key);
    if (cached) return withImages(cached, options.images === true);

    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    try {
      const page = await this.#fetchPage(parsed.url, signal);
      this.#cache.set(key, page);
      return withImages(page, options.images === true);
    } catch (error) {
      // A cancelled run or a tool timeout is the caller's business: let it through as is.
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      if (timeout.aborted) {
        throw new ToolError(
          `fetching ${shorten(key)} timed out after ${this.timeoutMs.toLocaleString("en-US")} ms`,
          {
            hint: "The site is slow or unreachable; try again later or another source.",
          },
        );
      }
      throw toToolError(error, key);
    }
  }

  /**
   * Closes the reader's connections, pooled ones and those of reads in flight (which fail).
   * The reader opens new ones if it is used again.
   */
  async close(): Promise<void> {
    const network = this.#network;
    this.#network = undefined;
    if (network) (await network).agents.destroy();
  }

  async #fetchPage(start: URL, signal: AbortSignal): Promise<Page> {
    const network = await this.#loadNetwork();
    let url = start;
    for (let hop = 0; ; hop++) {
      // Before any connection: scheme, credentials, literal addresses and localhost names.
      network.policy.checkHostname(url.hostname);
      const response = await network.transport.get(
        url,
        network.agents,
        { "user-agent": this.userAgent, accept: ACCEPT },
        signal,
      );
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(response.statusCode ?? 0) && location !== undefined) {
        network.transport.discard(response);
        if (hop >= this.maxRedirects) {
          throw new ToolError(
            `too many redirects: ${shorten(start.href)} redirected more than ${this.maxRedirects} times`,
            {
              hint: "The site redirects in a loop or too deep; try the final URL directly.",
            },
          );
        }
        const next = parseFetchUrl(location, url.href);
        if (!next.ok) {
          throw new ToolError(
            `${shorten(url.href)} redirected to a URL that cannot be fetched: ${next.reason}`,
          );
        }
        url = next.url;
        continue;
      }
      return this.#toPage(url, response, network.transport, signal);
    }
  }

  async #toPage(
    url: URL,
    response: IncomingMessage,
    transport: Transport,
    signal: AbortSignal,
  ): Promise<Page> {
    const contentType = response.headers["content-type"];
    const mediaType = mediaTypeOf(contentType);
    const declaredLength = Number(response.headers["content-length"] ?? Number.NaN);
    const base: Page = {
      url: url.href,
      status: response.statusCode ?? 0,
      mediaType: mediaType || "application/octet-stream",
      text: "",
    };

    let kind: ContentKind | undefined =
      mediaType === "" || mediaType === "application/octet-stream"
        ? undefined
        : contentKind(mediaType, new Uint8Array());
    if (kind === "binary") {
      // Nothing a model can read: describe it and never download it.
      transport.discard(response);
      const page: Page = { ...base, binary: true };
      if (Number.isFinite(declaredLength)) page.byteLength = declaredLength;
      return page;
    }
    const { bytes, capped } = await transport.readBody(response, this.maxBytes, signal);
    kind ??= contentKind(mediaType, bytes);
    if (kind === "binary")
      return { ...base, binary: true, byteLength: bytes.byteLength, ...(capped ? { sizeCapped: true } : {}) };

    const headerCharset = charsetOf(contentType);
    const page: Page = { ...base, byteLength: bytes.byteLength };
    if (capped) page.sizeCapped = true;
    if (kind === "html") {
      // Decoding, parsing and converting all happen on a worker thread with a hard deadline:
      // no page can hold up the event loop, and a hostile one is stopped, not waited for. The
      // bytes own their buffer, so they move to the thread without a copy.
      const converted = await sharedConversionPool().convert(
        { bytes, charset: headerCharset },
        {
          url: url.href,
          mainContent: this.#options.mainContent ?? true,
          timeoutMs: this.conversionTimeoutMs,
          signal,
        },
      );
      page.text = converted.markdown;
      if (converted.title) page.title = converted.title;
      page.images = converted.images;
      return page;
    }
    const text = decodeBody(bytes, { headerCharset, html: false });
    if (kind === "json") {
      page.text = compactJson(text);
    } else {
      page.text = text;
    }
    return page;
  }

  /**
   * ipaddr.js, the guard and the transport load on first use, not when "quiver-agents/tools"
   * is imported. They stand on node:http, node:https and node:zlib: nothing heavy to load on
   * this thread, so the first fetch of a process does not stall it.
   */
  #loadNetwork(): Promise<Network> {
    this.#network ??= (async () => {
      const [transport, { createGuardedAgents }, { AddressPolicy }] = await Promise.all([
        import("./http-transport.js"),
        import("./guarded-agent.js"),
        import("./address-policy.js"),
      ]);
      const policy = new AddressPolicy({
        allowPrivateNetwork: this.#options.allowPrivateNetwork ?? false,
        allowHosts: this.#options.allowHosts ?? [],
      });
      const agents = createGuardedAgents({
        policy,
        lookup: this.#options.lookup,
        connectTimeoutMs: Math.min(this.timeoutMs, 10_000),
      });
      return { agents, policy, transport };
    })();
    return this.#network;
  }
}

function compactJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text; // labelled JSON but is not (or was cut by the byte cap): show it as text
  }
}

function withImages(page: Page, images: boolean): Page {
  if (images) return { ...page, images: page.images ?? [] };
  const { images: _dropped, ...rest } = page;
  return rest;
}

/** Network failures become tool errors that say what failed, never a stack trace. */
function toToolError(error: unknown, url: string): Error {
  if (error instanceof ToolError) return error;
  // Matched by name: address-policy.js loads lazily, with the network stack.
  const blocked = findCause(error, (e) => (e as Error)?.name === "BlockedAddressError") as
    | BlockedAddressError
    | undefined;
  if (blocked) {
    return new ToolError(`refused to fetch ${shorten(url)}: ${blocked.message}`, {
      hint: "Private and internal network addresses are blocked; fetch a public URL instead.",
    });
  }
  const code = (findCause(error, (e) => typeof (e as any)?.code === "string") as any)?.code as
    | string
    | undefined;
  const detail = (findCause(error, (e) => (e as any)?.cause === undefined) as Error | undefined)?.message;
  const hint =
    code === "ENOTFOUND" || code === "EAI_AGAIN"
      ? "The host name does not resolve; check the URL for typos."
      : code === "ECONNREFUSED"
        ? "Nothing is listening at that address; check the URL."
        : "The site could not be reached; try again later or another source.";
  return new ToolError(
    `could not fetch ${shorten(url)}: ${detail ?? String(error)}${code && !detail?.includes(code) ? ` (${code})` : ""}`,
    {
      hint,
      cause: error,
    },
  );
}

function findCause(error: unknown, test: (e: unknown) => boolean): unknown {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as any).cause, depth++) {
    if (test(e)) return e;
  }
  return undefined;
}
