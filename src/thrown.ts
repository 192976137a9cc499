/**
 * Reading a thrown value without trusting it. A tool (or a host, a policy, a plugin) may throw
 * anything: an `Error` whose `message` getter throws, a Proxy whose every trap throws, an
 * object that cannot become a string. The loop reads thrown values only through these
 * functions, which never throw, so one hostile value cannot crash the process with an
 * unhandled rejection or leave a run's `result()` pending for ever.
 */

/** The longest message kept from a thrown value (a model or a log reads it). */
const MAX_MESSAGE_CHARS = 10_000;

/**
 * `value instanceof type`, false instead of a throw (a Proxy's `getPrototypeOf` trap may throw).
 *
 * @example
 * if (isInstance(error, ToolError)) hint = error.hint;
 */
export function isInstance<T>(value: unknown, type: abstract new (...args: any[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/**
 * A one-line message for any thrown value, never throwing: an Error's message (or its name),
 * a string as it is, anything else as JSON or its string form, else a description of its kind.
 *
 * @example
 * thrownMessage(new Error("disk full")) // "disk full"
 * thrownMessage({ code: 42 })           // '{"code":42}'
 */
export function thrownMessage(value: unknown): string {
  return cap(describe(value));
}

/** The `name` of a thrown Error (or "Error" for anything that is not one, or cannot say). */
export function thrownName(value: unknown): string {
  if (!isInstance(value, Error)) return "Error";
  const name = read(value, "name");
  return typeof name === "string" && name ? cap(name) : "Error";
}

/**
 * A real `Error` for any thrown value: the value itself when it is an Error whose name and
 * message can be read, else a new Error carrying its description (the original as `cause`).
 */
export function asError(value: unknown): Error {
  if (isInstance(value, Error)) {
    const message = read(value, "message");
    const name = read(value, "name");
    if (typeof message === "string" && typeof name === "string") return value;
  }
  const error = new Error(thrownMessage(value));
  try {
    (error as { cause?: unknown }).cause = value;
  } catch {
    // A frozen Error prototype: the description is enough.
  }
  return error;
}

function describe(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return String(value);
  if (typeof value !== "object" && typeof value !== "function") {
    try {
      return String(value);
    } catch {
      return typeof value;
    }
  }
  if (isInstance(value, Error)) {
    const message = read(value, "message");
    if (typeof message === "string" && message) return message;
    const name = read(value, "name");
    return typeof name === "string" && name ? name : "Error";
  }
  try {
    const json = JSON.stringify(value);
    if (typeof json === "string" && json !== "{}") return json;
  } catch {
    // Cycles, bigints, throwing getters or toJSON: try its string form.
  }
  try {
    const text = String(value);
    if (typeof text === "string") return text;
  } catch {
    // No usable toString or Symbol.toPrimitive.
  }
  return `a thrown ${typeof value === "function" ? "function" : "object"} that cannot be described`;
}

function read(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function cap(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}… (message cut)` : text;
}
