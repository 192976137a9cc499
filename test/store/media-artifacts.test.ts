/**
 * Images are stored once, as artifacts the events refer to: a run holding a 5 MB image from
 * the user and another from a tool keeps its event log small, each image's bytes once beside
 * it, and after a restart (a new SqliteStore on the same file) the run resumes with both
 * images byte-equal in what the model receives.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  Agent,
  type ContentBlock,
  type Message,
  type ModelRequest,
  Runner,
  replay,
  ScriptedModel,
  tool,
} from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";

const dir = mkdtempSync(join(tmpdir(), "quiver-media-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MB = 1024 * 1024;

/** A PNG of `bytes` bytes: a real 1600×1200 header, then noise (nothing compresses it). */
function png(bytes: number): Buffer {
  const header = Buffer.from("89504e470d0a1a0a0000000d49484452000006400000004b008060000000", "hex");
  header.writeUInt32BE(1600, 16);
  header.writeUInt32BE(1200, 20);
  return Buffer.concat([header, randomBytes(bytes - header.length)]);
}

function imagesIn(messages: readonly Message[]): string[] {
  return messages.flatMap((m) =>
    typeof m.content === "string"
      ? []
      : m.content.flatMap((b) => (b.type === "image" && b.data ? [b.data] : [])),
  );
}

describe("SqliteStore keeps images once, beside the log", () => {
  it("a run with two 5 MB images has a small log, one artifact per image, and resumes with them byte-equal", async () => {
    const photo = png(5 * MB);
    const screenshot = png(5 * MB);
    const capture = tool({
      name: "capture",
      description: "Take a screenshot.",
      parameters: z.object({}),
      readOnly: true,
      execute: () => ({
        content: [
          { type: "text" as const, text: "the dashboard" },
          { type: "image" as const, data: screenshot.toString("base64"), mimeType: "image/png" },
        ],
      }),
    });
    const publish = tool({
      name: "publish",
      description: "Publish the comparison.",
      parameters: z.object({ title: z.string() }),
      needsApproval: true,
      execute: ({ title }) => `published ${title}`,
    });
    const turns = () => [
      { toolCalls: [{ id: "c1", name: "capture", args: {} }] },
      { toolCalls: [{ id: "p1", name: "publish", args: { title: "compare" } }] },
      (req: ModelRequest) => ({ text: `saw ${imagesIn(req.messages).length} images` }),
    ];
    const path = join(dir, "runs.db");
    const first = new SqliteStore({ path });
    const agent = new Agent({
      name: "analyst",
      model: new ScriptedModel(turns()),
      tools: [capture, publish],
      // A tool's images are capped per result (default 5,000,000 bytes): this one is 5 MiB.
      maxImageBytes: 6 * MB,
    });
    const input: ContentBlock[] = [
      { type: "text", text: "Compare my photo with the dashboard, then publish." },
      { type: "image", data: photo.toString("base64"), mimeType: "image/png" },
    ];
    const parked = await Runner.run(agent, input, { store: first });
    expect(parked.stopReason).toBe("awaiting_approval");
    await first.close();

    // The log: every event small; each image's base64 once among the artifacts.
    const db = new Database(path, { readonly: true });
    const events = db
      .prepare("SELECT count(*) AS n, sum(length(CAST(body AS BLOB))) AS bytes FROM quiver_events")
      .get() as { n: number; bytes: number };
    const artifacts = db
      .prepare("SELECT length(CAST(text AS BLOB)) AS bytes FROM quiver_artifacts ORDER BY bytes DESC")
      .all() as Array<{ bytes: number }>;
    // The run's first event keeps the text and the image's type; its bytes are a reference.
    const started = JSON.parse(
      (db.prepare("SELECT body FROM quiver_events ORDER BY event_key LIMIT 1").get() as { body: string })
        .body,
    );
    db.close();
    expect(started.input[0].content).toEqual([
      { type: "text", text: "Compare my photo with the dashboard, then publish." },
      { type: "image", data: null, mimeType: "image/png" },
    ]);
    expect(started.$payloads).toEqual({
      "input.0.content.1.data": expect.stringMatching(/^quiver:payload:[0-9a-f]{64}$/),
    });
    const base64Length = Math.ceil((5 * MB) / 3) * 4;
    console.info(
      `events: ${events.n} rows, ${events.bytes.toLocaleString("en-US")} bytes; artifacts: ${artifacts.map((a) => a.bytes.toLocaleString("en-US")).join(", ")} bytes`,
    );
    expect(events.bytes).toBeLessThan(32 * 1024);
    // The photo and the screenshot, each once (the screenshot rides on the tool's completion
    // and on its message: one artifact), as JSON strings of their base64.
    expect(artifacts.filter((a) => a.bytes > MB).map((a) => a.bytes)).toEqual([
      base64Length + 2,
      base64Length + 2,
    ]);

    // A restart: another store on the same file decides and resumes the run.
    const second = new SqliteStore({ path });
    await Runner.decide(second, parked.runId, "p1", true);
    const model = new ScriptedModel(turns().slice(2));
    const resumed = await Runner.resume(agent.clone({ model }), parked.runId, { store: second }).result();
    expect(resumed.output).toBe("saw 2 images");
    const [sentPhoto, sentScreenshot] = imagesIn(model.requests[0]!.messages);
    expect(Buffer.from(sentPhoto!, "base64").equals(photo)).toBe(true);
    expect(Buffer.from(sentScreenshot!, "base64").equals(screenshot)).toBe(true);
    // Replay from the stored log rebuilds the same transcript, images whole.
    expect(replay(await second.read(parked.runId)).messages).toEqual(resumed.messages);
    await second.close();
  });

  it("a chat's later runs do not store its image again: three runs of one session keep a 5 MB photo once, and each run's model gets it whole", async () => {
    const photo = png(5 * MB);
    const path = join(dir, "chat.db");
    const store = new SqliteStore({ path });
    const model = new ScriptedModel([
      (req: ModelRequest) => ({ text: `turn 1 sees ${imagesIn(req.messages).length}` }),
      (req: ModelRequest) => ({ text: `turn 2 sees ${imagesIn(req.messages).length}` }),
      (req: ModelRequest) => ({ text: `turn 3 sees ${imagesIn(req.messages).length}` }),
    ]);
    const agent = new Agent({ name: "chat", model });
    const session = { store, sessionId: "chat-photo" };
    const outputs: string[] = [];
    outputs.push(
      (
        await Runner.run(
          agent,
          [
            { type: "text", text: "What is in this photo?" },
            { type: "image", data: photo.toString("base64"), mimeType: "image/png" },
          ],
          session,
        )
      ).output,
    );
    outputs.push((await Runner.run(agent, "And the colours?", session)).output);
    outputs.push((await Runner.run(agent, "Thanks.", session)).output);
    expect(outputs).toEqual(["turn 1 sees 1", "turn 2 sees 1", "turn 3 sees 1"]);
    for (const request of model.requests) {
      expect(Buffer.from(imagesIn(request.messages)[0]!, "base64").equals(photo)).toBe(true);
    }
    // Each later run starts from the whole conversation, photo included, and reads back whole.
    const runs = await store.listRuns({ sessionId: "chat-photo" });
    expect(runs).toHaveLength(3);
    for (const run of runs) {
      const [first] = await store.read(run.runId);
      const input = first?.type === "run_started" ? first.input : [];
      expect(Buffer.from(imagesIn(input)[0]!, "base64").equals(photo)).toBe(true);
    }
    await store.close();

    const db = new Database(path, { readonly: true });
    const large = db
      .prepare("SELECT count(*) AS n FROM quiver_artifacts WHERE length(CAST(text AS BLOB)) > ?")
      .get(MB) as { n: number };
    db.close();
    expect(large.n).toBe(1);

    // Deleting the chat deletes the photo with it.
    const again = new SqliteStore({ path });
    await again.clearSession("chat-photo");
    await again.close();
    const after = new Database(path, { readonly: true });
    expect((after.prepare("SELECT count(*) AS n FROM quiver_artifacts").get() as { n: number }).n).toBe(0);
    after.close();
  });
  it("a chat's later messages do not read its photo back again: each costs a fraction of the message that sent it", async () => {
    const photo = png(8 * MB).toString("base64");
    const store = new SqliteStore({ path: join(dir, "chat-later.db") });
    const model = new ScriptedModel(
      Array.from({ length: 8 }, () => (req: ModelRequest) => ({
        text: `sees ${imagesIn(req.messages).length}`,
      })),
    );
    const agent = new Agent({ name: "chat", model });
    const session = { store, sessionId: "chat-later" };
    const cpu = async (input: Parameters<typeof Runner.run>[1]) => {
      const before = process.cpuUsage();
      const result = await Runner.run(agent, input, session);
      const used = process.cpuUsage(before);
      expect(result.output).toBe("sees 1");
      return used.user + used.system;
    };
    const first = await cpu([
      { type: "text", text: "What is in this photo?" },
      { type: "image", data: photo, mimeType: "image/png" },
    ]);
    const later: number[] = [];
    for (let i = 0; i < 5; i++) later.push(await cpu(`And now? (${i})`));
    later.sort((a, b) => a - b);
    // Reading the conversation back fetched, checked and decoded the 11 MB again for every
    // message, and storing the next run's input hashed it again: each later message cost more
    // than the first (measured: 260 ms each, against 95 ms).
    expect(later[2]!).toBeLessThan(first / 3);
    for (const request of model.requests) expect(imagesIn(request.messages)[0]).toBe(photo);
    await store.close();
  });
});
