/**
 * The page script's small DOM helpers (plain browser JavaScript, the first part of the page's one
 * script). Elements are only ever built with `el` and filled with text: the page never turns a
 * string into HTML itself (Trusted Types would refuse it); Markdown goes through DOMPurify.
 */
export const PAGE_DOM = `
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== undefined && c !== null) node.append(c);
    return node;
  };
  const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  // Diagnostics a person (or a test) can read in the console: how much rendering the page did.
  const stats = { frames: 0, renderMs: 0, parsedChars: 0 };
  window.quiverPageStats = stats;
`;
