import { execFile } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { trace } from "@opentelemetry/api";
import { Agent, Runner, ScriptedModel, tool } from "quiver-agents";
import { instrument, TRACER_NAME } from "quiver-agents/otel";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { recordingTracer } from "./harness.js";

const exec = promisify(execFile);
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/otel/${name}`, import.meta.url));

const echo = tool({
  name: "echo",
  description: "Echo.",
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
});
const agent = () =>
  new Agent({
    name: "echoer",
    model: new ScriptedModel([
      { toolCalls: [{ name: "echo", args: { text: "PRIVATE" } }] },
      { text: "said it" },
    ]),
    tools: [echo],
  });

let undo: (() => void) | undefined;
afterEach(() => {
  undo?.();
  undo = undefined;
  trace.disable();
});

describe("instrument()", () => {
  it("traces every run from then on, until undone; a run's tracer: false opts out", async () => {
    const recorder = recordingTracer();
    undo = instrument({ tracerProvider: recorder.provider });
    await Runner.run(agent(), "say it");
    expect(
      recorder
        .spans()
        .map((s) => s.name)
        .sort(),
    ).toEqual(["chat scripted", "chat scripted", "execute_tool echo", "invoke_agent echoer"]);
    expect(recorder.one("invoke_agent echoer").instrumentationScope.name).toBe(TRACER_NAME);
    expect(recorder.one("invoke_agent echoer").instrumentationScope.version).toMatch(/^\d+\.\d+\.\d+/);

    recorder.exporter.reset();
    await Runner.run(agent(), "say it", { tracer: false });
    expect(recorder.spans()).toHaveLength(0);

    undo();
    undo = undefined;
    await Runner.run(agent(), "say it");
    expect(recorder.spans()).toHaveLength(0);
  });

  it("uses the global tracer provider by default, even one registered after the call", async () => {
    undo = instrument();
    const recorder = recordingTracer();
    trace.setGlobalTracerProvider(recorder.provider);
    await Runner.run(agent(), "say it");
    expect(recorder.one("invoke_agent echoer")).toBeDefined();
  });

  it("sets content capture for every run; a run's own captureContent and tracer win", async () => {
    const recorder = recordingTracer();
    undo = instrument({ tracerProvider: recorder.provider, captureContent: true });
    await Runner.run(agent(), "say it");
    expect(recorder.one("execute_tool echo").attributes["gen_ai.tool.call.result"]).toBe("PRIVATE");

    recorder.exporter.reset();
    await Runner.run(agent(), "say it", { captureContent: false });
    expect(JSON.stringify(recorder.spans().map((s) => s.attributes))).not.toContain("PRIVATE");

    const own = recordingTracer();
    recorder.exporter.reset();
    await Runner.run(agent(), "say it", { tracer: own.tracer });
    expect(recorder.spans()).toHaveLength(0);
    expect(own.spans()).toHaveLength(4);
  });
});

describe("@opentelemetry/api stays optional", () => {
  const run = async (probe: string, preload: string[] = []) => {
    const { stdout } = await exec(process.execPath, [...preload, "--import", "tsx", fixture("probe.ts")], {
      env: { ...process.env, PROBE: probe },
      timeout: 20_000,
    });
    return JSON.parse(stdout.trim().split("\n").pop()!);
  };

  it('import "quiver-agents" and an untraced run never load it', async () => {
    const report = await run("cold");
    expect(report).toEqual({ output: "ok", loaded: [] });
  });

  it("without it, instrument() and a traced run are a UserError naming the install line; untraced runs work", async () => {
    const report = await run("missing", ["--require", fixture("hide-otel-api.cjs")]);
    expect(report.importedOtel).toBe(true);
    expect(report.instrument).toMatchObject({ name: "UserError" });
    expect(report.instrument.message).toContain("npm install @opentelemetry/api");
    expect(report.run).toMatchObject({ name: "UserError" });
    expect(report.run.message).toContain("npm install @opentelemetry/api");
    expect(report.untraced).toBe("ok");
  });
});

describe("the documentation's local example", () => {
  it("runs and prints the run's spans in one trace", async () => {
    const page = await readFile(
      fileURLToPath(new URL("../../docs/observability.md", import.meta.url)),
      "utf8",
    );
    const block = [...page.matchAll(/^```ts[^\n]*\n([\s\S]*?)^```$/gm)]
      .map((m) => m[1]!)
      .find((code) => code.includes("ConsoleSpanExporter"));
    expect(block).toBeDefined();
    // Inside the checkout, so that "quiver-agents" and the SDK resolve as they do for the tests.
    const file = fixture(`doc-console-${process.pid}.ts`);
    await writeFile(file, block!);
    try {
      const { stdout } = await exec(process.execPath, ["--import", "tsx", file], { timeout: 20_000 });
      const names = [...stdout.matchAll(/^\s*name: '([^']+)'/gm)].map((m) => m[1]);
      expect(names.sort()).toEqual([
        "chat gpt-4.1-mini",
        "chat gpt-4.1-mini",
        "execute_tool lookup_order",
        "invoke_agent support",
      ]);
      expect(new Set([...stdout.matchAll(/^\s*traceId: '([0-9a-f]+)'/gm)].map((m) => m[1])).size).toBe(1);
    } finally {
      await rm(file, { force: true });
    }
  });
});
