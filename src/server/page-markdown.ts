/**
 * The page's Markdown rendering (plain browser JavaScript, part of the page's one script): the
 * model's text is parsed by `marked` (GFM) and sanitized by DOMPurify into elements, never set as
 * HTML. What the sanitizer keeps is a short list of formatting tags; links open in a new tab and
 * show their real host when their text names another; images become links the person may click
 * (the page loads nothing from another host); code blocks get a copy button.
 *
 * Streaming: text arrives in many small deltas. Each animation frame renders only what changed:
 * the blocks of a text that can no longer change (all but its last two top-level blocks) are
 * rendered once and kept, and only the tail is parsed again, so the work per frame stays bounded
 * however long the answer grows. When the text ends it is rendered once more in full (what a
 * reference link defined at the end, say, changes earlier on).
 *
 * Without both scripts (a runtime that could not read them) text shows as plain text.
 */
export const PAGE_MARKDOWN = String.raw`
  const markdownReady = typeof window.marked === "object" && typeof window.DOMPurify === "function" &&
    typeof window.DOMPurify.sanitize === "function" && window.DOMPurify.isSupported !== false;
  const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
  const ALLOWED_TAGS = ["a", "b", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "kbd", "li", "mark", "ol", "p", "pre", "s", "span", "strong", "sub", "summary",
    "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul"];
  const PURIFY = {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ["href", "title", "align", "start", "open", "colspan", "rowspan", "class"],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
    // DOMPurify checks every other attribute's value against the URI pattern: these hold no URL
    // (a table cell's alignment, a list's first number, a cell's span), so they are exempt.
    ADD_URI_SAFE_ATTR: ["align", "start", "open", "colspan", "rowspan"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  };
  let md = null;
  if (markdownReady) {
    md = new window.marked.Marked({ gfm: true, breaks: false, async: false });
    md.use({ renderer: {
      // An image would be fetched from wherever the text points: offer a link to it instead.
      image({ href, text }) { return '<a href="' + escapeHtml(href) + '">' + escapeHtml("Image: " + (text || href)) + "</a>"; },
      checkbox({ checked }) { return checked ? "☑ " : "☐ "; },
    } });
    // Only code blocks keep a class (their language): no text may borrow the page's own styles.
    window.DOMPurify.addHook("uponSanitizeAttribute", (node, data) => {
      if (data.attrName === "class" && !(node.nodeName === "CODE" && /^language-[\w+#.-]{1,40}$/.test(data.attrValue)))
        data.keepAttr = false;
    });
  }

  function hostOf(text) {
    const t = String(text).trim();
    try {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) return new URL(t).host.toLowerCase();
      if (/^(www\.)?[a-z0-9-]+(\.[a-z0-9-]+)+(\/\S*)?$/i.test(t)) return new URL("http://" + t).host.toLowerCase();
    } catch {}
    return "";
  }
  function finishLinks(root) {
    for (const a of root.querySelectorAll("a")) {
      const href = a.getAttribute("href");
      if (!href) { a.replaceWith(...a.childNodes); continue; }
      a.target = "_blank";
      a.rel = "noopener noreferrer nofollow";
      a.title = href;
      const real = hostOf(href), claimed = hostOf(a.textContent);
      if (real && claimed && real !== claimed) a.append(el("span", { class: "link-host" }, " (" + real + ")"));
    }
  }
  async function copyCode(button, pre) {
    try {
      if (navigator.clipboard) await navigator.clipboard.writeText(pre.textContent);
      else {
        // No clipboard API outside a secure context (plain http to another machine): copy the selection.
        const range = document.createRange();
        range.selectNodeContents(pre);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        if (!document.execCommand("copy")) throw new Error("copy refused");
        getSelection().removeAllRanges();
      }
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed: select the text";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  }
  function decorate(root) {
    finishLinks(root);
    for (const pre of root.querySelectorAll("pre")) {
      const code = pre.querySelector("code");
      const lang = code && /language-([\w+#.-]+)/.exec(code.className);
      const button = el("button", { type: "button", class: "copy", "aria-label": "Copy code" + (lang ? " (" + lang[1] + ")" : "") }, "Copy");
      button.addEventListener("click", () => copyCode(button, pre));
      const wrap = el("div", { class: "code" });
      pre.replaceWith(wrap);
      wrap.append(el("div", { class: "code-bar" }, el("span", {}, lang ? lang[1] : "text"), button), pre);
    }
    // A task item's box stands in for its bullet (marked once sanitized: text cannot set a class).
    for (const li of root.querySelectorAll("li")) if (/^\s*[☑☐] /.test(li.textContent)) li.classList.add("task");
    for (const table of root.querySelectorAll("table")) {
      const wrap = el("div", { class: "table-wrap" });
      table.replaceWith(wrap);
      wrap.append(table);
    }
    return root;
  }
  function markdownFragment(html) {
    return decorate(window.DOMPurify.sanitize(html, PURIFY));
  }

  // ---- streaming text blocks ----------------------------------------------------------
  const dirty = new Set();
  let frameAsked = false;
  /** A block of streamed text (the model's words) in parent, rendered as Markdown. */
  function textBlock(parent, className) {
    const node = el("div", { class: className + (markdownReady ? " md" : " plain") });
    const block = { node, src: "", at: 0, links: Object.create(null), done: el("div"), live: el("div"), final: false };
    node.append(block.done, block.live);
    parent.append(node);
    return block;
  }
  function addText(block, delta) {
    // As the parser reads it, so the blocks it returns measure the text itself.
    block.src += delta.replace(/\r\n?/g, "\n");
    dirty.add(block);
    askFrame();
  }
  function endText(block) {
    if (!block || block.final) return;
    block.final = true;
    dirty.add(block);
    askFrame();
  }
  /** Renders on the next animation frame (many deltas in between cost one render). */
  function askFrame() {
    if (frameAsked) return;
    frameAsked = true;
    requestAnimationFrame(frame);
  }
  function frame() {
    frameAsked = false;
    const started = performance.now();
    for (const block of dirty) renderBlock(block);
    dirty.clear();
    stats.frames++;
    stats.renderMs += performance.now() - started;
  }
  function renderBlock(b) {
    if (!md) { b.live.textContent = b.src; return; }
    if (b.final) {
      stats.parsedChars += b.src.length;
      b.done.replaceChildren(markdownFragment(md.parse(b.src)));
      b.live.replaceChildren();
      b.at = b.src.length;
      return;
    }
    const lexer = new window.marked.Lexer(md.defaults);
    Object.assign(lexer.tokens.links, b.links);
    const tail = b.src.slice(b.at);
    stats.parsedChars += tail.length;
    const tokens = lexer.lex(tail);
    // The last two blocks may still change (a paragraph becomes a table or a heading, a list
    // gets another item): everything before them is final.
    let cut = 0;
    for (let i = tokens.length - 1, seen = 0; i >= 0; i--) {
      if (tokens[i].type !== "space" && ++seen === 2) { cut = i; break; }
    }
    const head = tokens.slice(0, cut);
    const headRaw = head.map((t) => t.raw).join("");
    if (cut > 0 && tail.startsWith(headRaw)) {
      head.links = tokens.links;
      b.done.append(markdownFragment(md.parser(head)));
      b.at += headRaw.length;
      Object.assign(b.links, tokens.links);
    } else cut = 0;
    const rest = tokens.slice(cut);
    rest.links = tokens.links;
    b.live.replaceChildren(markdownFragment(md.parser(rest)));
  }
`;
