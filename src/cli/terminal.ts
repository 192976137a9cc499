import pc from "picocolors";
import { terminalText } from "./terminal-text.js";

export type Colors = ReturnType<typeof pc.createColors>;

/**
 * Whether to color what goes to `stream`: only on a terminal, never with NO_COLOR (any value)
 * or TERM=dumb; FORCE_COLOR (not "0") turns it on anyway.
 */
export function colorsFor(stream: NodeJS.WriteStream): Colors {
  const env = process.env;
  const forced = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0";
  const enabled = forced || (env.NO_COLOR === undefined && env.TERM !== "dumb" && Boolean(stream.isTTY));
  return pc.createColors(enabled);
}

/** True when a person can answer prompts: stdin and the prompt's output are terminals. */
export function isInteractive(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/** One line of `text`, at most `max` characters, whitespace folded, safe to print (see `terminalText`). */
export function oneLine(text: string, max: number): string {
  return cut(terminalText(text.replace(/\s+/g, " ").trim()), max);
}

/**
 * `name(key: value, …)` for a call line and the approval question: values as JSON, the whole
 * thing cut to `max` and safe to print. The model writes the keys as well as the values, so a key
 * that is not a plain word is JSON-quoted and cut short, and when everything does not fit, each
 * value gets an even share of the room: no key or value can push the other arguments out of
 * sight (a key made of escape codes and a fake question once hid `target: "prod"`).
 *
 * @example
 * callLabel("deploy", { target: "prod" }); // 'deploy(target: "prod")'
 */
export function callLabel(name: string, args: unknown, max = 100): string {
  const shownName = terminalText(name);
  const room = Math.max(10, max - shownName.length - 2);
  if (!args || typeof args !== "object" || Array.isArray(args))
    return `${shownName}(${oneLine(args === undefined ? "" : jsonText(args), room)})`;
  const entries = Object.entries(args as Record<string, unknown>).map(([key, value]) => ({
    key: cut(terminalText(/^[\w$-]+$/.test(key) ? key : JSON.stringify(key)), MAX_KEY),
    value: oneLine(jsonText(value), Number.POSITIVE_INFINITY),
  }));
  const join = (share: number) => entries.map((e) => `${e.key}: ${cut(e.value, share)}`).join(", ");
  let inner = join(Number.POSITIVE_INFINITY);
  if (inner.length > room) {
    const keys = entries.reduce((n, e) => n + e.key.length + 4, 0);
    const share = evenShare(
      entries.map((e) => e.value.length),
      room - keys,
    );
    inner = join(Math.max(MIN_VALUE_SHARE, share));
  }
  return `${shownName}(${cut(inner, room)})`;
}

/** A key longer than this is cut (a model-written key this long is no parameter name). */
const MAX_KEY = 40;
/** The fewest characters of each value shown when the arguments share the room. */
const MIN_VALUE_SHARE = 8;

/** The largest cap such that the values, each cut to it, fit in `room`: short ones leave theirs to long ones. */
function evenShare(lengths: number[], room: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let left = room;
  for (const [i, length] of sorted.entries()) {
    const even = Math.floor(left / (sorted.length - i));
    if (length > even) return even;
    left -= length;
  }
  return Number.POSITIVE_INFINITY;
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Milliseconds as a person reads them: 850 ms, 2.4 s, 3 min 5 s. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function plural(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}
