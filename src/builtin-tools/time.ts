import type { InstructionContext } from "../contract/instructions.js";
import { ToolError, UserError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { tool } from "../tool/tool.js";

/** The server's own time zone (what `now` and `currentDate` use without `tz`). */
function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** The canonical name of an IANA zone, or `undefined` when the runtime does not know it. */
function canonicalZone(tz: string): string | undefined {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

type WallClock = {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  weekday: string;
  offset: string;
};

/** The wall-clock fields of `date` in `timeZone`, with the UTC offset as `+08:00` (`Z` for UTC). */
function wallClock(date: Date, timeZone: string): WallClock {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    weekday: "long",
    timeZoneName: "longOffset",
  }).formatToParts(date);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  // "GMT+08:00", "GMT-03:30"; a zero offset reads "GMT" or "GMT+00:00" depending on the ICU version.
  const gmtOffset = get("timeZoneName").replace(/^(GMT|UTC)/, "");
  const offset = gmtOffset === "" || /^[+-]00:?00$/.test(gmtOffset) ? "Z" : gmtOffset;
  return {
    year: get("year"),
    month: get("month"),
    day: get("day"),
    hour: get("hour"),
    minute: get("minute"),
    second: get("second"),
    weekday: get("weekday"),
    offset,
  };
}

/**
 * ISO-8601 wall-clock time in `timeZone`, to the second, with its UTC offset.
 *
 * @example
 * isoInZone(new Date("2025-01-02T03:04:05Z"), "Asia/Shanghai") // → "2025-01-02T11:04:05+08:00"
 */
export function isoInZone(date: Date, timeZone: string): string {
  const c = wallClock(date, timeZone);
  return `${c.year}-${c.month}-${c.day}T${c.hour}:${c.minute}:${c.second}${c.offset}`;
}

/**
 * The `now` tool: the current wall-clock time as ISO-8601, in the server's zone or the IANA
 * zone the model passes as `tz` ("Asia/Shanghai"). An unknown zone is a tool error.
 *
 * @example
 * const agent = new Agent({ name: "planner", model, tools: [now] });
 * // the model calls now({ tz: "Europe/Paris" }) → "2025-01-02T04:04:05+01:00 (Thursday, Europe/Paris)"
 */
export const now = tool({
  name: "now",
  label: "Current time",
  description:
    "Get the current date and time as ISO-8601, with the weekday. Optional tz: an IANA time zone such as " +
    '"America/New_York"; default: the server\'s zone.',
  parameters: jsonSchema<{ tz?: string }>({
    type: "object",
    properties: { tz: { type: "string", description: 'IANA time zone name, e.g. "Asia/Shanghai".' } },
    additionalProperties: false,
  }),
  readOnly: true,
  execute: async ({ tz }) => {
    const zone = tz === undefined || tz.trim() === "" ? localZone() : canonicalZone(tz.trim());
    if (zone === undefined) {
      throw new ToolError(`unknown time zone ${JSON.stringify(tz)}`, {
        hint: 'Use an IANA zone name such as "Europe/Paris", "America/New_York" or "UTC".',
      });
    }
    const date = new Date();
    return `${isoInZone(date, zone)} (${wallClock(date, zone).weekday}, ${zone})`;
  },
});

/** An instruction fragment: evaluated at each run start. */
export type DateFragment = (ctx?: InstructionContext<any>) => string;

/**
 * An instruction fragment (not a tool) that states today's date and weekday in the system
 * prompt, so the model writes the current year into searches instead of spending a turn on
 * `now`. Date only, by design: a date stays the same within any prompt-cache window, so it
 * does not bust the provider's cache; precise time is `now`'s job. An unknown `tz` is a
 * `UserError` here, at construction.
 *
 * @example
 * const agent = new Agent({ name: "researcher", model,
 *   instructions: ["You research questions on the web.", currentDate("Europe/Berlin")],
 *   tools: [webSearch(duckduckgoSearch()), webFetch()] });
 * // the system prompt gains: "Today is Thursday, 2025-01-02 (Europe/Berlin)."
 */
export function currentDate(tz?: string): DateFragment {
  const zone = tz === undefined ? undefined : canonicalZone(tz);
  if (tz !== undefined && zone === undefined) {
    throw new UserError(
      `currentDate: unknown time zone ${JSON.stringify(tz)}; use an IANA name such as "Europe/Paris"`,
    );
  }
  return () => {
    const name = zone ?? localZone();
    const c = wallClock(new Date(), name);
    return `Today is ${c.weekday}, ${c.year}-${c.month}-${c.day} (${name}).`;
  };
}
