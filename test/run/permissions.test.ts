import {
  Agent,
  type AgentConfig,
  type RunEvent,
  Runner,
  replay,
  ScriptedModel,
  StandardPermissions,
  tool,
  UserError,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const ran: string[] = [];
const make = (name: string, options: Record<string, unknown> = {}) =>
  tool({
    name,
    description: `${name} tool`,
    parameters: z.object({}),
    execute: async () => {
      ran.push(name);
      return `${name} done`;
    },
    ...options,
  });

const read = make("read_file", { readOnly: true });
const write = make("write_file", { destructive: true });
const shell = make("shell", { destructive: true });
const deploy = make("deploy", { needsApproval: true });
const fetchPage = make("web_fetch", { untrustedOutput: true, readOnly: true });

async function run(names: string[], config: Partial<AgentConfig>, approve?: "approve" | "reject") {
  ran.length = 0;
  const model = new ScriptedModel([
    { toolCalls: names.map((name) => ({ name, args: {} })) },
    { text: "done" },
  ]);
  const agent = new Agent({ name: "a", model, tools: [read, write, shell, deploy, fetchPage], ...config });
  const handle = Runner.stream(agent, "go");
  const events: RunEvent[] = [];
  for await (const ev of handle) {
    events.push(ev);
    if (ev.type === "approval_required") {
      if (approve === "approve") ev.approve();
      else ev.reject("no");
    }
  }
  const result = await handle.result();
  const asked = events.filter((e) => e.type === "approval_required").map((e) => [e.call.name, e.reason]);
  return { result, events, asked, ran: [...ran], offered: model.requests[0]!.tools.map((t) => t.name) };
}

describe("StandardPermissions", () => {
  it("default mode (also with no permissions set): destructive tools ask, others run", async () => {
    for (const permissions of [undefined, new StandardPermissions({ mode: "default" })]) {
      const out = await run(["read_file", "write_file", "shell"], permissions ? { permissions } : {});
      expect(out.asked).toEqual([
        ["write_file", "write_file is destructive"],
        ["shell", "shell is destructive"],
      ]);
      expect(out.ran).toEqual(["read_file"]);
    }
  });

  it("acceptEdits: only edit tools pass; every other destructive tool still asks", async () => {
    const permissions = new StandardPermissions({ mode: "acceptEdits", editTools: ["write_file"] });
    const out = await run(["write_file", "shell"], { permissions }, "approve");
    expect(out.asked.map(([name]) => name)).toEqual(["shell"]);
    expect(out.ran.sort()).toEqual(["shell", "write_file"]);
  });

  it("bypass: everything passes except an explicit needsApproval", async () => {
    const permissions = new StandardPermissions({ mode: "bypass" });
    const out = await run(["write_file", "shell", "deploy"], { permissions });
    expect(out.asked.map(([name]) => name)).toEqual(["deploy"]);
    expect(out.ran.sort()).toEqual(["shell", "write_file"]);
  });

  it("denied tools are not offered and are denied if called anyway; an allow-list miss denies", async () => {
    const denied = await run(["shell", "read_file"], {
      permissions: new StandardPermissions({ mode: "bypass", deniedTools: ["shell"] }),
    });
    expect(denied.offered).not.toContain("shell");
    expect(denied.result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
    expect(denied.result.toolCalls[0]?.output).toMatch(/shell is denied by this agent's permissions/);
    expect(denied.asked).toEqual([]);
    const allowed = await run(["read_file", "write_file"], {
      permissions: new StandardPermissions({ mode: "bypass", allowedTools: ["read_file"] }),
    });
    expect(allowed.offered).toEqual(["read_file"]);
    expect(allowed.ran).toEqual(["read_file"]);
    expect(allowed.result.toolCalls[1]?.output).toMatch(/not among this agent's allowed tools/);
  });

  it("rejects an unknown mode", () => {
    expect(() => new StandardPermissions({ mode: "yolo" as never })).toThrow(UserError);
  });
});

describe("taint", () => {
  it("once untrusted output entered the run, destructive tools ask even in acceptEdits", async () => {
    const permissions = new StandardPermissions({ mode: "acceptEdits", editTools: ["write_file"] });
    ran.length = 0;
    const model = new ScriptedModel([
      { toolCalls: [{ name: "write_file", args: {} }] },
      { toolCalls: [{ name: "web_fetch", args: {} }] },
      { toolCalls: [{ name: "write_file", args: {} }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "a", model, tools: [write, fetchPage], permissions });
    const handle = Runner.stream(agent, "go");
    const events: RunEvent[] = [];
    for await (const ev of handle) {
      events.push(ev);
      if (ev.type === "approval_required") ev.reject("not after reading the web");
    }
    expect(ran).toEqual(["write_file", "web_fetch"]);
    expect(events.filter((e) => e.type === "approval_required").map((e) => e.reason)).toEqual([
      "write_file is destructive and this run has read untrusted content (web_fetch output)",
    ]);
    expect(events.find((e) => e.type === "run_tainted")).toMatchObject({ source: "web_fetch output" });
    expect(replay(events).tainted).toBe("web_fetch output");
  });

  it('taintPolicy: "off" turns that off', async () => {
    ran.length = 0;
    const model = new ScriptedModel([
      { toolCalls: [{ name: "web_fetch", args: {} }] },
      { toolCalls: [{ name: "write_file", args: {} }] },
      { text: "done" },
    ]);
    const permissions = new StandardPermissions({ mode: "acceptEdits", editTools: ["write_file"] });
    await Runner.run(
      new Agent({ name: "a", model, tools: [write, fetchPage], permissions, taintPolicy: "off" }),
      "go",
    );
    expect(ran).toEqual(["web_fetch", "write_file"]);
  });
});

describe("endsTurn", () => {
  it("lets the other calls of the turn finish first, then ends the run without another model request", async () => {
    ran.length = 0;
    const handover = make("handover", { endsTurn: true });
    const slow = tool({
      name: "slow",
      description: "Slow.",
      parameters: z.object({}),
      execute: async () => {
        await new Promise((r) => setTimeout(r, 30));
        ran.push("slow");
        return "slow done";
      },
    });
    const model = new ScriptedModel([
      {
        text: "Handing over.",
        toolCalls: [
          { name: "handover", args: {} },
          { name: "slow", args: {} },
        ],
      },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [handover, slow] }), "go");
    expect(result).toMatchObject({ stopReason: "ends_turn", output: "Handing over." });
    expect(ran.sort()).toEqual(["handover", "slow"]);
    expect(model.requests).toHaveLength(1);
  });

  it("lets the loop go on when the call fails", async () => {
    const failing = tool({
      name: "escalate",
      description: "Escalate.",
      parameters: z.object({}),
      endsTurn: true,
      execute: async () => {
        throw new Error("ticket system down");
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "escalate", args: {} }] },
      { text: "I could not escalate." },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [failing] }), "go");
    expect(result).toMatchObject({ stopReason: "completed", output: "I could not escalate." });
  });
});
