import type { Page } from "./page-reader.js";

/**
 * A small least-recently-used cache of pages with a time to live. Its main job is
 * correctness: an `offset` continuation must read the same version of the page as the first
 * call, or two versions would be spliced together.
 */
export class PageCache {
  readonly #entries = new Map<string, { page: Page; expiresAt: number }>();
  readonly #ttlMs: number;
  readonly #size: number;
  readonly #now: () => number;

  constructor(ttlMs: number, size: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#size = size;
    this.#now = now;
  }

  get(key: string): Page | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    // Re-insert so that Map order is recency order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.page;
  }

  set(key: string, page: Page): void {
    if (this.#ttlMs <= 0 || this.#size <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { page, expiresAt: this.#now() + this.#ttlMs });
    while (this.#entries.size > this.#size) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}
