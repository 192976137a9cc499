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
  const flat = terminalText(text.replace(/\s+/g, " ").trim());
  return flat.length > max ? `${flat.slice(0, Math.max(1, max - 1))}…` : flat;
}

/**
 * `name(key: value, …)` for a call line: values as JSON, a key that is not a plain word quoted
 * (a model writes the keys too), the whole thing cut to `max` and safe to print.
 */
export function callLabel(name: string, args: unknown, max = 100): string {
  let inner: string;
  if (args && typeof args === "object" && !Array.isArray(args)) {
    inner = Object.entries(args as Record<string, unknown>)
      .map(([key, value]) => `${/^[\w$-]+$/.test(key) ? key : JSON.stringify(key)}: ${jsonText(value)}`)
      .join(", ");
  } else inner = args === undefined ? "" : jsonText(args);
  const shownName = terminalText(name);
  return `${shownName}(${oneLine(inner, Math.max(10, max - shownName.length - 2))})`;
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
