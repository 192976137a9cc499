/**
 * A linear pass over a page's HTML before it is parsed, so that no page can make the parse or
 * the later stages super-linear: elements nested deeper than `maxDepth` lose their tags (their
 * text stays), and a fragment without `<html>` and `<body>` is made a whole document.
 *
 * Why before parsing: the parser behind linkedom (htmlparser2) keeps its open elements in an
 * array it grows at the front, so each level of nesting costs as much as all the levels above
 * it (100,000 nested `<div>` took seconds), and Readability walks subtrees recursively (3,000
 * nested `<span>` overflowed the stack). The pass mirrors htmlparser2's tokenizer and its
 * tree rules (implied end tags, void and raw-text elements, foreign content), so its idea of
 * depth is the parser's. It counts the elements that remain and the deepest nesting, from which
 * the converter decides whether Readability's main-content search is affordable.
 */

/** How deep elements may nest. Real pages stay under ~40 levels; Blink stops nesting at 512. */
export const MAX_DEPTH = 128;
/** Open `<svg>`/`<math>` contexts kept; the parser grows a second array at the front for them. */
const MAX_FOREIGN_CONTEXTS = 256;

export interface BoundedHtml {
  /** The HTML to parse: the input, or a copy with the over-deep tags removed. */
  html: string;
  /**
   * About how many nodes the parser will create: elements (void ones included), comments, and
   * the text nodes that stray `<` and character references split text into.
   */
  nodes: number;
  /** The deepest nesting the parser will see (the document element is level 1). */
  deepest: number;
  /** Tags removed because they were nested too deep. */
  flattened: number;
}

const VOID = new Set([
  "area",
  "base",
  "basefont",
  "br",
  "col",
  "command",
  "embed",
  "frame",
  "hr",
  "img",
  "input",
  "isindex",
  "keygen",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);
const RAW_TEXT = new Set(["script", "style", "title", "textarea", "xmp"]);
const FOREIGN = new Set(["math", "svg"]);
const INTEGRATION = new Set([
  "mi",
  "mo",
  "mn",
  "ms",
  "mtext",
  "annotation-xml",
  "foreignobject",
  "desc",
  "title",
]);
const DOCUMENT_TAGS = new Set(["html", "head", "body"]);

// htmlparser2's implied end tags: opening the key closes any of these at the top of the stack.
const P = new Set(["p"]);
const FORM = new Set(["input", "option", "optgroup", "select", "button", "datalist", "textarea"]);
const IMPLIES_CLOSE = new Map<string, Set<string>>([
  ["tr", new Set(["tr", "th", "td"])],
  ["th", new Set(["th"])],
  ["td", new Set(["thead", "th", "td"])],
  ["body", new Set(["head", "link", "script"])],
  ["li", new Set(["li"])],
  ["option", new Set(["option"])],
  ["optgroup", new Set(["optgroup", "option"])],
  ["dd", new Set(["dd", "dt"])],
  ["dt", new Set(["dd", "dt"])],
  ["rt", new Set(["rt", "rp"])],
  ["rp", new Set(["rt", "rp"])],
  ["tbody", new Set(["thead", "tbody"])],
  ["tfoot", new Set(["thead", "tbody"])],
  ...["select", "input", "output", "button", "datalist", "textarea"].map(
    (n) => [n, FORM] as [string, Set<string>],
  ),
  ...[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "pre",
    "section",
    "table",
    "ul",
  ].map((n) => [n, P] as [string, Set<string>]),
]);

/** Tags whose removal would glue the words on either side together: they become a line break. */
const BLOCK = new Set([
  ...IMPLIES_CLOSE.keys(),
  "li",
  "tr",
  "td",
  "th",
  "dd",
  "dt",
  "caption",
  "center",
  "menu",
  "summary",
  "legend",
  "thead",
]);

const isWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;
const isAsciiAlpha = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
/** Where a tag name ends for the tokenizer: white space, `/` or `>`. */
const endsTagSection = (c: number) => isWhitespace(c) || c === 0x2f || c === 0x3e;

/**
 * Bounds `html` for parsing: see the module comment. Linear in the input's length.
 *
 * @example
 * boundHtml("<div>".repeat(100_000) + "x").deepest // → 128 (the wrapper's html and body included)
 */
export function boundHtml(html: string, maxDepth = MAX_DEPTH): BoundedHtml {
  // linkedom builds a sensible tree only from a complete document: given `<p>x</p>` or a page
  // without `<html>` and `<body>` tags (valid HTML), it loses the body. Such input is rebuilt as
  // one: its doctype and document tags are dropped and the rest goes inside a fresh body.
  const wrap = !(/<html[\s>]/i.test(html) && /<body[\s>]/i.test(html));
  const stack: string[] = wrap ? ["html", "body"] : [];
  const foreign: boolean[] = [];
  const droppedOpen = new Map<string, number>();
  const out: string[] = [];
  let copied = 0;
  let lastBreakAt = -1;
  let nodes = wrap ? 3 : 0; // html, head, body
  let deepest = stack.length;
  let flattened = 0;
  const n = html.length;
  // Each character reference ends a text node in this parser: `&amp;` × 200,000 is 400,000 nodes.
  for (let at = html.indexOf("&"); at !== -1; at = html.indexOf("&", at + 1)) nodes++;

  /** Where the last `<` that starts no tag is. */
  let strayAt = -1;
  /** Replaces `html[from, to)` with nothing, or with one line break for a block tag. */
  const remove = (from: number, to: number, asBreak: boolean) => {
    if (strayAt === from - 1 && strayAt >= copied) {
      // `<` + a removed tag + `text` must not become the tag `<text`: the `<` is escaped.
      out.push(html.slice(copied, strayAt), "&lt;");
    } else out.push(html.slice(copied, from));
    // A run of adjacent removed block tags (100,000 nested divs) is one line break, not 200,000.
    if (asBreak && lastBreakAt !== from) {
      out.push("<br>");
      nodes++;
    }
    if (asBreak || lastBreakAt === from) lastBreakAt = to;
    copied = to;
  };
  const after = (needle: string, from: number) => {
    const at = html.indexOf(needle, from);
    return at === -1 ? n : at + needle.length;
  };

  let i = 0;
  while (i < n) {
    const lt = html.indexOf("<", i);
    if (lt === -1 || lt + 1 >= n) break;
    const c = html.charCodeAt(lt + 1);

    if (c === 0x21 /* ! */) {
      nodes++;
      if (html.startsWith("--", lt + 2)) {
        i = after("-->", lt + 2); // `<!-->` and `<!--->` are whole comments, as in the parser
      } else if (html.startsWith("[CDATA[", lt + 2)) {
        i = after("]]>", lt + 9);
      } else {
        // A declaration (`<!doctype html>`) runs to the next `>`; the character after `<!`
        // (or after `<!-`) is consumed before the parser starts looking for it.
        i = after(">", lt + (html.charCodeAt(lt + 2) === 0x2d ? 4 : 3));
        if (wrap && /^<!doctype/i.test(html.slice(lt, lt + 9))) remove(lt, i, false);
      }
      continue;
    }
    if (c === 0x3f /* ? */) {
      i = after(">", lt + 2);
      continue;
    }
    if (c === 0x2f /* / */) {
      i = closeTag(lt);
      continue;
    }
    if (!isAsciiAlpha(c)) {
      nodes++; // a `<` that starts no tag is text, in a text node of its own
      strayAt = lt;
      i = lt + 1;
      continue;
    }
    i = openTag(lt);
  }
  if (wrap) {
    out.push(html.slice(copied));
    return {
      html: `<!doctype html><html><head></head><body>${out.join("")}</body></html>`,
      nodes,
      deepest,
      flattened,
    };
  }
  return { html: copied === 0 ? html : out.join("") + html.slice(copied), nodes, deepest, flattened };

  /** `lt` is at `</`. Returns where scanning continues. */
  function closeTag(lt: number): number {
    let j = lt + 2;
    while (j < n && isWhitespace(html.charCodeAt(j))) j++;
    if (j >= n) return n;
    if (html.charCodeAt(j) === 0x3e) return j + 1; // `</>` is nothing
    if (!isAsciiAlpha(html.charCodeAt(j))) return after(">", j); // a bogus comment
    const start = j;
    while (j < n && html.charCodeAt(j) !== 0x3e && !isWhitespace(html.charCodeAt(j))) j++;
    const name = html.slice(start, j).toLowerCase();
    const end = after(">", j);
    closeElement(name, lt, end);
    return end;
  }

  function closeElement(name: string, from: number, to: number): void {
    if (wrap && DOCUMENT_TAGS.has(name)) {
      remove(from, to, false);
      return;
    }
    const dropped = droppedOpen.get(name) ?? 0;
    if (dropped > 0) {
      droppedOpen.set(name, dropped - 1);
      flattened++;
      remove(from, to, BLOCK.has(name));
      return;
    }
    if (FOREIGN.has(name) || INTEGRATION.has(name)) foreign.pop();
    if (VOID.has(name)) {
      if (name === "br") nodes++; // `</br>` is a line break to the parser
      return;
    }
    const at = stack.lastIndexOf(name);
    if (at !== -1) stack.length = at;
    else if (name === "p") nodes++; // `</p>` without `<p>` is an empty paragraph
  }

  /** `lt` is at `<` + a letter. Returns where scanning continues. */
  function openTag(lt: number): number {
    let j = lt + 1;
    while (j < n && !endsTagSection(html.charCodeAt(j))) j++;
    const name = html.slice(lt + 1, j).toLowerCase();
    const { end, selfClosing } = tagEnd(j);

    if (wrap && DOCUMENT_TAGS.has(name)) {
      remove(lt, end, false);
      return end;
    }
    const closes = IMPLIES_CLOSE.get(name);
    let popped = 0;
    if (closes) while (popped < stack.length && closes.has(stack[stack.length - 1 - popped]!)) popped++;
    const isVoid = VOID.has(name);
    const opensContext = FOREIGN.has(name) || INTEGRATION.has(name);
    const tooDeep =
      (!isVoid && stack.length - popped >= maxDepth) ||
      (opensContext && !isVoid && foreign.length >= MAX_FOREIGN_CONTEXTS);
    const rawText = RAW_TEXT.has(name) && !selfClosing;

    if (tooDeep) {
      flattened++;
      if (rawText) {
        // Without its tag the parser would read a script's text as markup: drop it whole.
        const close = rawTextEnd(name, end).end;
        remove(lt, close, false);
        return close;
      }
      droppedOpen.set(name, (droppedOpen.get(name) ?? 0) + 1);
      remove(lt, end, BLOCK.has(name));
      return end;
    }

    stack.length -= popped;
    nodes++;
    if (isVoid) deepest = Math.max(deepest, stack.length + 1);
    else {
      stack.push(name);
      if (stack.length > deepest) deepest = stack.length;
      if (FOREIGN.has(name)) foreign.push(true);
      else if (INTEGRATION.has(name)) foreign.push(false);
    }
    // Inside <svg> and <math>, `/>` closes the element; elsewhere the parser ignores it.
    if (selfClosing && foreign[foreign.length - 1] === true && stack[stack.length - 1] === name) stack.pop();
    if (!rawText) return end;
    // Raw text runs to its end tag, which then closes the element like any other.
    const close = rawTextEnd(name, end);
    if (close.tagAt < n) closeElement(name, close.tagAt, close.end);
    return close.end;
  }

  /** The raw text of `name` from `from` runs to its `</name>`: where that tag starts and ends (or the input's end). */
  function rawTextEnd(name: string, from: number): { tagAt: number; end: number } {
    let k = from;
    for (;;) {
      const at = html.indexOf("</", k);
      if (at === -1) return { tagAt: n, end: n };
      const next = html.charCodeAt(at + 2 + name.length);
      if (
        html.slice(at + 2, at + 2 + name.length).toLowerCase() === name &&
        (next === 0x3e || isWhitespace(next))
      ) {
        return { tagAt: at, end: after(">", at + 2 + name.length) };
      }
      k = at + 2;
    }
  }

  /** Attributes up to the tag's `>`, quotes respected, as the tokenizer reads them. */
  function tagEnd(from: number): { end: number; selfClosing: boolean } {
    const BEFORE_NAME = 0;
    const SELF_CLOSING = 1;
    const IN_NAME = 2;
    const AFTER_NAME = 3;
    const BEFORE_VALUE = 4;
    const UNQUOTED = 5;
    let state = BEFORE_NAME;
    let j = from;
    while (j < n) {
      const c = html.charCodeAt(j);
      switch (state) {
        case BEFORE_NAME:
          if (c === 0x3e) return { end: j + 1, selfClosing: false };
          if (c === 0x2f) state = SELF_CLOSING;
          else if (!isWhitespace(c)) state = IN_NAME;
          j++;
          break;
        case SELF_CLOSING:
          if (c === 0x3e) return { end: j + 1, selfClosing: true };
          if (isWhitespace(c)) j++;
          else state = BEFORE_NAME;
          break;
        case IN_NAME:
          if (c === 0x3d || endsTagSection(c)) state = AFTER_NAME;
          else j++;
          break;
        case AFTER_NAME:
          if (c === 0x3d) {
            state = BEFORE_VALUE;
            j++;
          } else if (c === 0x2f || c === 0x3e) state = BEFORE_NAME;
          else {
            if (!isWhitespace(c)) state = IN_NAME;
            j++;
          }
          break;
        case BEFORE_VALUE:
          if (c === 0x22 || c === 0x27) {
            const close = html.indexOf(c === 0x22 ? '"' : "'", j + 1);
            if (close === -1) return { end: n, selfClosing: false };
            j = close + 1;
            state = BEFORE_NAME;
          } else if (isWhitespace(c)) j++;
          else state = UNQUOTED;
          break;
        default: // UNQUOTED
          if (isWhitespace(c) || c === 0x3e) state = BEFORE_NAME;
          else j++;
      }
    }
    return { end: n, selfClosing: false };
  }
}
