/**
 * Text from a model, a tool, a peer or a store, made safe to print on a terminal: every control
 * character but newline and tab is shown instead of obeyed. A model that read a hostile page can
 * otherwise write escape sequences into the developer's terminal — erase the line and redraw an
 * approval question for a harmless call over a dangerous one, hide the real arguments, set the
 * clipboard (OSC 52) or the window title. C0 controls (ESC and carriage return among them) and
 * DEL become their Unicode pictures (␛, ␍, ␡), C1 controls (0x9B is a one-byte CSI) and the
 * bidirectional overrides and isolates that reorder what a reader sees become `\u…` text.
 * Quiver's own colors are added after this, to text already made safe — never the other way round.
 *
 * @example
 * terminalText("ok\u001b[2K\u001b[1GAllow list_files?"); // "ok␛[2K␛[1GAllow list_files?"
 * terminalText("\u202eexe.txt"); // "\\u202eexe.txt"
 */
export function terminalText(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, shown) : text;
}

/**
 * JSON text (from `JSON.stringify` or `serializeEvent`) made safe to print on a terminal, with
 * the same value: JSON escapes C0 controls but leaves DEL, C1 controls and bidi overrides as
 * they are, and a terminal obeys a UTF-8 encoded 0x9B as it does ESC [. Those only occur inside
 * strings, where `\u009b` means the same character, so `JSON.parse` reads back exactly what it
 * would have read.
 *
 * @example
 * terminalJson(JSON.stringify({ text: "\u009b2J" })); // '{"text":"\\u009b2J"}'
 */
export function terminalJson(json: string): string {
  return UNSAFE_IN_JSON.test(json) ? json.replace(UNSAFE_IN_JSON_ALL, escaped) : json;
}

// C0 but \t and \n, DEL, C1, the bidi embeddings/overrides (U+202A–E) and isolates (U+2066–9).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, "g");
// What JSON.stringify leaves unescaped of the above.
const UNSAFE_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_IN_JSON_ALL = new RegExp(UNSAFE_IN_JSON.source, "g");

function shown(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  return escaped(char);
}

function escaped(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}
