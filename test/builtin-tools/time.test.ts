import { describe, expect, it } from "vitest";
import { currentDate, isoInZone, now } from "../../src/builtin-tools/time.js";
import { ToolError, UserError } from "../../src/errors.js";
import { testContext } from "./helpers.js";

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|[+-]\d{2}:\d{2}) \((Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([\w/+-]+)\)$/;

describe("now", () => {
  it("is a tool with an optional tz argument", () => {
    const spec = now.toSpec();
    expect(spec.name).toBe("now");
    expect(Object.keys((spec.parameters as any).properties)).toEqual(["tz"]);
    expect((spec.parameters as any).required ?? []).toEqual([]);
    expect(now.readOnly).toBe(true);
  });

  it("returns ISO-8601 wall-clock time in the asked zone, matching the real clock", async () => {
    const before = Date.now();
    const out = String(await now.execute({ tz: "Asia/Shanghai" }, testContext()));
    const after = Date.now();
    const match = ISO.exec(out);
    expect(match, out).not.toBeNull();
    expect(match![7]).toBe("+08:00");
    expect(match![9]).toBe("Asia/Shanghai");
    const instant = Date.parse(out.split(" ")[0]!);
    expect(instant).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(instant).toBeLessThanOrEqual(after);
  });

  it("uses the server's zone without tz, and Z for UTC", async () => {
    const local = String(await now.execute({}, testContext()));
    expect(local).toMatch(ISO);
    expect(local).toContain(Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(String(await now.execute({ tz: "UTC" }, testContext()))).toMatch(
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z \(\w+, UTC\)$/,
    );
  });

  it("rejects an unknown zone with a tool error and a hint", async () => {
    const error = (await Promise.resolve(now.execute({ tz: "Mars/Olympus_Mons" }, testContext())).catch(
      (e) => e,
    )) as ToolError;
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toBe('unknown time zone "Mars/Olympus_Mons"');
    expect(error.hint).toMatch(/IANA/);
  });

  it("formats offsets, half hours and DST correctly", () => {
    const instant = new Date("2025-01-02T03:04:05Z");
    expect(isoInZone(instant, "Asia/Shanghai")).toBe("2025-01-02T11:04:05+08:00");
    expect(isoInZone(instant, "America/New_York")).toBe("2025-01-01T22:04:05-05:00");
    expect(isoInZone(new Date("2025-07-02T03:04:05Z"), "America/New_York")).toBe("2025-07-01T23:04:05-04:00");
    expect(isoInZone(instant, "Asia/Kolkata")).toBe("2025-01-02T08:34:05+05:30");
    expect(isoInZone(new Date("2025-01-02T00:30:00Z"), "UTC")).toBe("2025-01-02T00:30:00Z");
  });
});

describe("currentDate", () => {
  it("is an instruction fragment stating today's date and weekday", () => {
    const fragment = currentDate("Pacific/Kiritimati");
    expect(typeof fragment).toBe("function");
    const text = fragment();
    const today = new Intl.DateTimeFormat("en-CA", { timeZone: "Pacific/Kiritimati" }).format(new Date());
    const weekday = new Intl.DateTimeFormat("en-US", {
      timeZone: "Pacific/Kiritimati",
      weekday: "long",
    }).format(new Date());
    expect(text).toBe(`Today is ${weekday}, ${today} (Pacific/Kiritimati).`);
  });

  it("uses the server's zone by default", () => {
    expect(currentDate()()).toMatch(/^Today is \w+day, \d{4}-\d{2}-\d{2} \(.+\)\.$/);
  });

  it("fails at construction for an unknown zone", () => {
    expect(() => currentDate("Not/AZone")).toThrow(UserError);
  });
});
