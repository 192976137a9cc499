/**
 * A run's input as content parts: an array of parts is one user message (an array of
 * messages stays a transcript), a mix of the two is a clear `UserError`, a malformed part is
 * named, a data: URL is kept as base64 bytes, and an attachment over `maxAttachmentBytes` is
 * refused before the model or a store sees anything.
 */
import { Agent, type ContentBlock, Runner, ScriptedModel, UserError } from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

function agent() {
  const model = new ScriptedModel([{ text: "a red pixel" }]);
  return { model, agent: new Agent({ name: "looker", model }) };
}

describe("content parts as a run's input", () => {
  it("an array of parts is one user message the model receives", async () => {
    const { model, agent: a } = agent();
    const parts: ContentBlock[] = [
      { type: "text", text: "What is this?" },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "file", url: "https://example.com/q3.pdf", mimeType: "application/pdf", filename: "q3.pdf" },
    ];
    const result = await Runner.run(a, parts);
    expect(result.output).toBe("a red pixel");
    expect(model.requests[0]!.messages).toEqual([{ role: "user", content: parts }]);
  });

  it("an array of messages is still a transcript", async () => {
    const { model, agent: a } = agent();
    await Runner.run(a, [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: [{ type: "image", url: "https://example.com/cat.jpg" }] },
    ]);
    expect(model.requests[0]!.messages).toHaveLength(3);
  });

  it("parts continue a stored session like a message does", async () => {
    const model = new ScriptedModel([{ text: "hello" }, { text: "a red pixel" }]);
    const a = new Agent({ name: "looker", model });
    const store = new MemoryStore();
    await Runner.run(a, "hi", { store, sessionId: "s1" });
    await Runner.run(a, [{ type: "image", data: PNG_1PX, mimeType: "image/png" }], {
      store,
      sessionId: "s1",
    });
    expect(model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("a data: URL becomes base64 data with its media type", async () => {
    const { model, agent: a } = agent();
    await Runner.run(a, [{ type: "image", url: `data:image/png;base64,${PNG_1PX}` }]);
    expect(model.requests[0]!.messages[0]!.content).toEqual([
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
    ]);
  });

  it("a mix of messages and parts is a UserError saying which is which", async () => {
    const { model, agent: a } = agent();
    const mixed = [
      { role: "user", content: "hi" },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
    ];
    const error = await Runner.run(a, mixed as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toBe(
      'the input mixes messages and content parts (element 0 is a message with a role, element 1 is a part with a type and no role): pass either an array of messages, or the parts of one user message ([{ type: "text", … }, { type: "image", … }])',
    );
    expect(model.requests).toHaveLength(0);
  });

  for (const [label, part, message] of [
    [
      "an image with neither data nor url",
      { type: "image", mimeType: "image/png" },
      /input part 0 \(image\) needs exactly one of "data" \(its bytes as base64\) or "url"/,
    ],
    [
      "an image with both",
      { type: "image", data: PNG_1PX, url: "https://x.test/a.png", mimeType: "image/png" },
      /needs exactly one of/,
    ],
    [
      "a file without a media type",
      { type: "file", data: PNG_1PX },
      /input part 0 \(file\) needs a "mimeType" such as "application\/pdf"/,
    ],
    [
      "audio by URL",
      { type: "audio", url: "https://x.test/a.wav", mimeType: "audio/wav" },
      /input part 0 \(audio\) cannot be given by URL/,
    ],
    [
      "an unknown part type",
      { type: "video", data: PNG_1PX },
      /input part 0 has no valid type \(got "video"/,
    ],
    [
      "data that is not base64",
      { type: "image", data: "!!!not base64!!!", mimeType: "image/png" },
      /input part 0 \(image\) has "data" that is not base64/,
    ],
    [
      "a file URL with another scheme",
      { type: "file", url: "file:///etc/passwd", mimeType: "text/plain" },
      /neither http\(s\) nor a base64 data: URL/,
    ],
  ] as const) {
    it(`${label} is a UserError naming the part`, async () => {
      const { model, agent: a } = agent();
      await expect(Runner.run(a, [part] as never)).rejects.toThrow(message);
      expect(model.requests).toHaveLength(0);
    });
  }

  it("a malformed block inside a message is named by message and block", async () => {
    const { agent: a } = agent();
    await expect(
      Runner.run(a, { role: "user", content: [{ type: "text", text: "hi" }, { type: "image" }] } as never),
    ).rejects.toThrow(/bad content block: block 1 \(image\) needs exactly one of/);
  });

  it("an attachment over maxAttachmentBytes is refused before anything is stored or sent", async () => {
    const { model, agent: a } = agent();
    const store = new MemoryStore();
    const big = Buffer.alloc(3 * 1024 * 1024).toString("base64");
    const run = Runner.run(
      a,
      [{ type: "file", data: big, mimeType: "application/pdf", filename: "big.pdf" }],
      {
        store,
        maxAttachmentBytes: 2 * 1024 * 1024,
      },
    );
    await expect(run).rejects.toThrow(UserError);
    await expect(run).rejects.toThrow(
      "input part 0 (file: big.pdf, application/pdf) is 3.0 MB (3,145,728 bytes), over maxAttachmentBytes (2.0 MB (2,097,152 bytes))",
    );
    expect(model.requests).toHaveLength(0);
    expect(await store.listRuns()).toEqual([]);
    // The same file fits the default limit (20 MB).
    await expect(
      Runner.run(a, [{ type: "file", data: big, mimeType: "application/pdf" }]),
    ).resolves.toMatchObject({ output: "a red pixel" });
  });
});
