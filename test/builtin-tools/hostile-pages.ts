/**
 * Pages built to hurt an HTML → Markdown converter: deep nesting, unclosed constructs,
 * storms of one token, shapes that make a backtracking regex or a recursive walk go
 * super-linear. Shared by test/builtin-tools/hostile-pages.test.ts and bench/hostile-pages.ts.
 *
 * `expect` says what a reader should still get: a word that must survive (the page is read)
 * or `undefined` when only a bounded outcome matters (a result or a clear tool error).
 */
export interface HostilePage {
  name: string;
  html: string;
  /** Text the Markdown must contain when the page converts. */
  keeps?: string;
  /** Takes a second or more to convert (on its thread): measured by the benchmark, not the tests. */
  heavy?: boolean;
}

const nest = (open: string, close: string, depth: number, inner: string) =>
  open.repeat(depth) + inner + close.repeat(depth);

/** Chains of `depth` nested elements, repeated up to `bytes`. */
const chains = (tag: string, depth: number, bytes: number) => {
  const chain = nest(`<${tag}>w `, `</${tag}>`, depth, "y");
  return chain.repeat(Math.max(1, Math.floor(bytes / chain.length)));
};

export function hostilePages(): HostilePage[] {
  return [
    {
      name: "100,000 nested div (1.1 MB)",
      html: nest("<div>", "</div>", 100_000, "deepword"),
      keeps: "deepword",
    },
    { name: "1,000 nested div (11 KB)", html: nest("<div>", "</div>", 1_000, "deepword"), keeps: "deepword" },
    {
      name: "3,000 nested span (31 KB)",
      html: nest("<span>", "</span>", 3_000, "deepword"),
      keeps: "deepword",
    },
    { name: "400 KB of '<!doctype '", html: "<!doctype ".repeat(40_000) },
    { name: "400 KB of '<html '", html: `<p>firstword</p>${"<html ".repeat(66_000)}`, keeps: "firstword" },
    {
      name: "one tag with 100,000 attributes",
      html: `<p ${"a=b ".repeat(100_000)}>firstword</p>`,
      keeps: "firstword",
    },
    { name: "unclosed comment", html: `<p>firstword</p><!--${"x".repeat(1_000_000)}`, keeps: "firstword" },
    {
      name: "unclosed script",
      html: `<p>firstword</p><script>${"<div>".repeat(200_000)}`,
      keeps: "firstword",
    },
    {
      name: "unclosed attribute quote",
      html: `<p>firstword</p><a href="${"<div>".repeat(200_000)}`,
      keeps: "firstword",
    },
    {
      name: "srcset of 500,000 commas",
      html: `<p>firstword</p><img srcset="a.png${",".repeat(500_000)}b.png, c.png 2x" src="d.png">`,
      keeps: "firstword",
    },
    { name: "500,000 spaces in pre", html: `<pre>${" ".repeat(500_000)}x</pre>` },
    { name: "'<' and 200,000 spaces as text", html: `<p>&lt;${" ".repeat(200_000)}x</p>` },
    {
      name: "10,000 nested tables",
      html: nest("<table><tr><td>", "</td></tr></table>", 10_000, "deepword"),
      keeps: "deepword",
      heavy: true,
    },
    {
      name: "100,000 unclosed div",
      html: `${"<div>a".repeat(100_000)}lastword`,
      keeps: "lastword",
      heavy: true,
    },
    { name: "200,000 unclosed p", html: `${"<p>a".repeat(200_000)}lastword`, keeps: "lastword", heavy: true },
    {
      name: "400 KB of '<'",
      html: `<p>firstword</p>${"<".repeat(400_000)}`,
      keeps: "firstword",
      heavy: true,
    },
    { name: "200,000 entities", html: `<p>${"&amp;".repeat(200_000)}</p>`, heavy: true },
    { name: "50,000 svg contexts never closed", html: "<div><svg></div>".repeat(50_000), heavy: true },
    {
      name: "50,000 links",
      html: `<p>${'<a href="/a/b?c=d#e">link</a> '.repeat(50_000)}</p>`,
      keeps: "[link](",
      heavy: true,
    },
    {
      name: "1 MB of nested div chains (depth 64)",
      html: chains("div", 64, 1_000_000),
      keeps: "y",
      heavy: true,
    },
    {
      name: "1 MB of nested span chains (depth 128)",
      html: chains("span", 128, 1_000_000),
      keeps: "y",
      heavy: true,
    },
    { name: "1 MB of text, no tags", html: "plain words ".repeat(85_000), keeps: "plain words", heavy: true },
  ];
}
