import { type Browser, type BrowserContextOptions, chromium, type Page } from "playwright-core";
import type { Serving } from "quiver-agents/server";
import { expect } from "vitest";

/** One headless Chromium for a test file (Debian's, no download). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** What a page did that a person would not want: the test fails on any of it. */
export type PageTrouble = {
  /** Script errors thrown in the page. */
  errors: string[];
  /** `alert`, `confirm`, `prompt` or `beforeunload` dialogs. */
  dialogs: string[];
  /** Requests to anywhere but the server under test (aborted before they leave). */
  remote: string[];
  /** Responses with a status of 400 or more, as `status url`. */
  failed: string[];
};

export type PageOptions = BrowserContextOptions & {
  width?: number;
  height?: number;
  /** Statuses the test expects (e.g. the 401 a wrong token gets), not counted as failures. */
  allowStatus?: number[];
};

/**
 * Opens the server's page in a fresh context and runs `body`; afterwards the page must have
 * thrown nothing, opened no dialog, asked nothing of another host and met no error response.
 */
export async function withPage<T>(
  browser: Browser,
  serving: Serving,
  body: (page: Page, trouble: PageTrouble) => Promise<T>,
  options: PageOptions = {},
): Promise<T> {
  const { width = 390, height = 800, allowStatus = [], ...contextOptions } = options;
  const context = await browser.newContext({ viewport: { width, height }, ...contextOptions });
  const page = await context.newPage();
  const trouble: PageTrouble = { errors: [], dialogs: [], remote: [], failed: [] };
  const own = new URL(serving.url).host;
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.host === own) return route.continue();
    trouble.remote.push(route.request().url());
    return route.abort("blockedbyclient");
  });
  page.on("pageerror", (error) => trouble.errors.push(error.message));
  page.on("dialog", (dialog) => {
    trouble.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on("response", (response) => {
    if (response.status() >= 400 && !allowStatus.includes(response.status()))
      trouble.failed.push(`${response.status()} ${response.url()}`);
  });
  try {
    await page.goto(serving.url);
    const result = await body(page, trouble);
    expect(trouble).toEqual({ errors: [], dialogs: [], remote: [], failed: [] });
    return result;
  } finally {
    await context.close();
  }
}

/** Sends a message the way a person does: types it into the message box and presses Enter. */
export async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel("Message").fill(text);
  await page.getByLabel("Message").press("Enter");
}
