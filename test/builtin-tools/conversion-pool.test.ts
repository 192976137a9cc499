import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConversionPool } from "../../src/builtin-tools/conversion-pool.js";
import { ToolError } from "../../src/errors.js";

/** The nice value of each thread of this process, by thread id (Linux: /proc/self/task/<tid>/stat). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      nices.set(Number(tid), niceOf(readFileSync(`/proc/self/task/${tid}/stat`, "utf8")));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return nices;
}

/** Field 19 of a stat line; the fields after the command name (in parentheses) start at field 3. */
function niceOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
}

describe("the conversion threads", () => {
  it("run at a lower CPU priority than the thread that uses them, which keeps its own", async () => {
    const mine = niceOf(readFileSync("/proc/thread-self/stat", "utf8"));
    const before = new Set([...threadNices()].filter(([, nice]) => nice === 10).map(([tid]) => tid));
    const pool = new ConversionPool(1);
    try {
      const converted = await pool.convert(
        { html: "<h1>Hi</h1>" },
        { url: "https://example.com/", timeoutMs: 30_000 },
      );
      expect(converted.markdown).toBe("# Hi");
      const lowered = [...threadNices()].filter(([tid, nice]) => nice === 10 && !before.has(tid));
      expect(lowered.length).toBeGreaterThanOrEqual(1);
      expect(niceOf(readFileSync("/proc/thread-self/stat", "utf8"))).toBe(mine);
      expect(threadNices().get(process.pid)).not.toBe(10);
    } finally {
      await pool.close();
    }
  });

  it("a page that needs more heap than a thread may use fails that call, not the process", async () => {
    const pool = new ConversionPool(1, { heapLimitMb: 64 });
    try {
      // 400,000 elements: several hundred MB as a DOM.
      const html = `<main>${"<p>a <b>b</b> <i>c</i></p>".repeat(100_000)}</main>`;
      const failure = await pool
        .convert({ html }, { url: "https://example.com/huge", timeoutMs: 30_000, mainContent: false })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ToolError);
      expect((failure as Error).message).toMatch(
        /could not convert https:\/\/example\.com\/huge to Markdown: it needed more than 64 MB of memory/,
      );
      // A fresh thread takes the next page.
      const next = await pool.convert(
        { html: "<h1>Small</h1>" },
        { url: "https://example.com/", timeoutMs: 30_000 },
      );
      expect(next.markdown).toBe("# Small");
    } finally {
      await pool.close();
    }
  });

  it("decodes bytes in the thread with the header's charset, and moves them instead of copying", async () => {
    const pool = new ConversionPool(1);
    try {
      const bytes = new Uint8Array([
        0x3c, 0x70, 0x3e, 0x63, 0x61, 0x66, 0xe9, 0x20, 0x80, 0x3c, 0x2f, 0x70, 0x3e,
      ]); // <p>café €</p>
      const converted = await pool.convert(
        { bytes, charset: "windows-1252" },
        { url: "https://example.com/", timeoutMs: 30_000 },
      );
      expect(converted.markdown).toBe("café €");
      expect(bytes.byteLength).toBe(0); // transferred to the thread
      // A view on part of a larger buffer is copied, so the rest of the buffer stays.
      const buffer = new TextEncoder().encode("xx<p>part</p>yy");
      const view = buffer.subarray(2, 13);
      expect(
        (await pool.convert({ bytes: view }, { url: "https://example.com/", timeoutMs: 30_000 })).markdown,
      ).toBe("part");
      expect(buffer.byteLength).toBe(15);
    } finally {
      await pool.close();
    }
  });

  it("close() rejects what is queued and running; the pool works again afterwards", async () => {
    const pool = new ConversionPool(1);
    const slow = `${"<div>w ".repeat(64)}y${"</div>".repeat(64)}`.repeat(2_000);
    const settled = (promise: Promise<unknown>) =>
      promise.then(
        () => "converted",
        (error: Error) => error.message,
      );
    const running = settled(
      pool.convert({ html: slow }, { url: "https://example.com/a", timeoutMs: 30_000 }),
    );
    const queued = settled(pool.convert({ html: slow }, { url: "https://example.com/b", timeoutMs: 30_000 }));
    await new Promise((done) => setTimeout(done, 50));
    await pool.close();
    expect(await running).toBe("the HTML conversion pool was closed");
    expect(await queued).toBe("the HTML conversion pool was closed");
    const again = await pool.convert(
      { html: "<p>again</p>" },
      { url: "https://example.com/", timeoutMs: 30_000 },
    );
    expect(again.markdown).toBe("again");
    await pool.close();
  });
});
