/**
 * Compaction's token estimate counts an image as the provider bills it — OpenAI by 512-pixel
 * tiles (85 + 170 per tile), Anthropic by area (width × height / 750, after fitting) — from the
 * dimensions in the image's header, never by the length of its base64.
 */
import { Agent, type ContentBlock, type RunEvent, Runner, ScriptedModel } from "quiver-agents";
import { describe, expect, it } from "vitest";

/** A PNG whose header says `width` × `height`, followed by `padding` bytes. */
function png(width: number, height: number, padding = 0): string {
  const header = Buffer.from("89504e470d0a1a0a0000000d49484452000000000000000008060000000000", "hex");
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  return Buffer.concat([header, Buffer.alloc(padding)]).toString("base64");
}

/** The input tokens the run's compaction_insufficient warning says it needs, if it warned. */
async function estimated(modelName: string, parts: ContentBlock[], maxInputTokens: number) {
  const model = new ScriptedModel([{ text: "ok" }], { name: modelName });
  const agent = new Agent({ name: "looker", model, compaction: { maxInputTokens } });
  const events: RunEvent[] = [];
  for await (const event of Runner.stream(agent, { role: "user", content: parts })) events.push(event);
  const warning = events.find((e) => e.type === "warning" && e.code === "compaction_insufficient");
  if (warning?.type !== "warning") return undefined;
  return Number(/needs about ([\d,]+) input tokens/.exec(warning.message)![1]!.replaceAll(",", ""));
}

/** A JPEG whose frame header (after 65 KB of EXIF-like data) says `width` × `height`. */
function jpeg(width: number, height: number): string {
  // APP1: its marker, then a length that counts itself and the data after it.
  const app1 = Buffer.alloc(2 + 65_000);
  app1.writeUInt16BE(0xffe1, 0);
  app1.writeUInt16BE(65_000, 2);
  const sof = Buffer.from("ffc0001108000000000301220002110103110100", "hex");
  sof.writeUInt16BE(height, 5);
  sof.writeUInt16BE(width, 7);
  return Buffer.concat([Buffer.from("ffd8", "hex"), app1, sof, Buffer.from("ffd9", "hex")]).toString(
    "base64",
  );
}

function gif(width: number, height: number): string {
  const bytes = Buffer.alloc(13);
  bytes.write("GIF89a", 0, "latin1");
  bytes.writeUInt16LE(width, 6);
  bytes.writeUInt16LE(height, 8);
  return bytes.toString("base64");
}

function webp(width: number, height: number): string {
  const bytes = Buffer.alloc(30);
  bytes.write("RIFF", 0, "latin1");
  bytes.writeUInt32LE(22, 4);
  bytes.write("WEBPVP8X", 8, "latin1");
  bytes.writeUInt32LE(10, 16);
  bytes.writeUIntLE(width - 1, 24, 3);
  bytes.writeUIntLE(height - 1, 27, 3);
  return bytes.toString("base64");
}

const threePhotos: ContentBlock[] = [
  { type: "text", text: "look" },
  ...[1, 2, 3].map(() => ({ type: "image" as const, data: png(4000, 3000), mimeType: "image/png" })),
];

describe("an image counts by the provider's rule", () => {
  it("OpenAI: a 4000×3000 photo is 1024×768 after scaling, 4 tiles, 765 tokens (three fit in 3,000)", async () => {
    expect(await estimated("openai:gpt-4.1-mini", threePhotos, 3_000)).toBeUndefined();
    // …and not in 2,200: 3 × 765 = 2,295.
    const tokens = await estimated("openai:gpt-4.1-mini", threePhotos, 2_200);
    expect(tokens).toBeGreaterThanOrEqual(3 * 765);
    expect(tokens).toBeLessThan(3 * 765 + 50);
  });

  it("Anthropic: the same photo is fitted to 1.15 megapixels, about 1,534 tokens", async () => {
    const tokens = await estimated("anthropic:claude-sonnet-4-5", threePhotos, 3_000);
    expect(tokens).toBeGreaterThanOrEqual(3 * 1_534);
    expect(tokens).toBeLessThan(3 * 1_534 + 50);
  });

  it("JPEG (its size after a large EXIF block), GIF and WebP headers are read too", async () => {
    // 1000×750 fits Anthropic's limits as it is: 750,000 / 750 = 1,000 tokens each.
    const parts: ContentBlock[] = [
      { type: "image", data: jpeg(1000, 750), mimeType: "image/jpeg" },
      { type: "image", data: gif(1000, 750), mimeType: "image/gif" },
      { type: "image", data: webp(1000, 750), mimeType: "image/webp" },
    ];
    const tokens = await estimated("anthropic:claude-sonnet-4-5", parts, 2_900);
    expect(tokens).toBeGreaterThanOrEqual(3_000);
    expect(tokens).toBeLessThan(3_050);
  });

  it("a 2 MB image of 64×64 pixels is one tile, not its base64 length", async () => {
    const parts: ContentBlock[] = [
      { type: "image", data: png(64, 64, 2 * 1024 * 1024), mimeType: "image/png" },
    ];
    expect(await estimated("openai:gpt-4.1-mini", parts, 300)).toBeUndefined();
    expect(await estimated("openai:gpt-4.1-mini", parts, 200)).toBeLessThan(300); // 85 + 170 = 255
  });
});
