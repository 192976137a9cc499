/**
 * What every provider checks about an image or file in a user message before sending it: the
 * image types the APIs decode (PNG, JPEG, GIF, WebP: an SVG or BMP is a `UserError`, as it always
 * was for Anthropic), Anthropic's 5 MB limit measured on the base64 text, and a part with no bytes.
 * An image whose bytes are a PNG, JPEG, GIF or WebP goes with the type its bytes say, whatever its
 * label. Against local servers replaying each API's wire format and rules.
 */
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { Agent, type ContentBlock, type Model, Runner, UserError } from "quiver-agents";
import { anthropic, fromAiSdk, openai, openaiResponses } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { PNG_1PX } from "./media.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { validateResponsesRequest } from "./openai-responses-api.js";
import { closedAfterEach, fixture, startReplayServer, streamFixture, typedFrame } from "./replay-server.js";

const servers = closedAfterEach();

const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString("base64");
const BMP = Buffer.from("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00", "latin1").toString("base64");

type Kind = "anthropic" | "openai" | "responses";

async function providerOn(kind: Kind): Promise<{ model: Model; requests: () => any[] }> {
  const replies = {
    anthropic: () => streamFixture(fixture("anthropic/text.jsonl"), { frame: typedFrame }),
    openai: () => streamFixture(fixture("openai-chat/text.jsonl")),
    responses: () => streamFixture(fixture("openai-responses/text.jsonl"), { frame: typedFrame }),
  }[kind];
  const server = await startReplayServer({
    replies: [replies(), replies()],
    validate:
      kind === "anthropic"
        ? validateMessagesRequest
        : kind === "openai"
          ? (req) => validateChatRequest(req)
          : validateResponsesRequest,
    reject: kind === "anthropic" ? rejectLikeAnthropic : rejectLikeOpenAI,
  });
  servers.push(server);
  const common = { apiKey: "test-key", maxRetries: 0, onWarning: () => {} };
  const model =
    kind === "anthropic"
      ? anthropic({ ...common, model: "claude-sonnet-4-5", baseURL: server.url, promptCaching: false })
      : kind === "openai"
        ? openai({ ...common, model: "gpt-4.1-mini", baseURL: `${server.url}/v1` })
        : openaiResponses({ ...common, model: "gpt-4.1-mini", baseURL: `${server.url}/v1` });
  return { model, requests: () => server.requests.map((r) => r.body) };
}

const ask = (model: Model, parts: ContentBlock[]) =>
  Runner.run(new Agent({ name: "looker", model }), [{ type: "text", text: "Look." }, ...parts]);

describe("image types the OpenAI APIs decode", () => {
  it.each([
    [
      "openai",
      "openai cannot take an image (image/svg+xml) in a user message: Chat Completions takes PNG, JPEG, GIF and WebP images",
    ],
    [
      "responses",
      "openai-responses cannot take an image (image/svg+xml) in a user message: the Responses API takes PNG, JPEG, GIF and WebP images",
    ],
  ] as const)("%s refuses an SVG and a BMP before sending anything", async (kind, message) => {
    const { model, requests } = await providerOn(kind);
    const svg = ask(model, [{ type: "image", data: SVG, mimeType: "image/svg+xml" }]);
    await expect(svg).rejects.toThrow(UserError);
    await expect(svg).rejects.toThrow(message);
    await expect(ask(model, [{ type: "image", data: BMP, mimeType: "image/bmp" }])).rejects.toThrow(
      "cannot take an image (image/bmp) in a user message",
    );
    expect(requests()).toHaveLength(0);
  });
});

describe("an image labelled with another type than its bytes", () => {
  const mislabelled: ContentBlock = { type: "image", data: PNG_1PX, mimeType: "image/jpeg" };

  it("goes to Anthropic as the PNG it is (the API compares the label with the bytes)", async () => {
    const { model, requests } = await providerOn("anthropic");
    await ask(model, [mislabelled]);
    expect(requests()[0].messages[0].content[1]).toEqual({
      type: "image",
      source: { type: "base64", media_type: "image/png", data: PNG_1PX },
    });
  });

  it("goes to Chat Completions and the Responses API in a PNG data URL; a PNG labelled BMP is sent too", async () => {
    const chat = await providerOn("openai");
    await ask(chat.model, [mislabelled, { type: "image", data: PNG_1PX, mimeType: "image/bmp" }]);
    expect(chat.requests()[0].messages[0].content.slice(1)).toEqual([
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
    ]);
    const responses = await providerOn("responses");
    await ask(responses.model, [mislabelled]);
    expect(responses.requests()[0].input[0].content[1]).toEqual({
      type: "input_image",
      image_url: `data:image/png;base64,${PNG_1PX}`,
      detail: "auto",
    });
  });

  it("goes to an AI SDK model with the media type its bytes say", async () => {
    const mock = new MockLanguageModelV3({
      doStream: async () => ({
        stream: convertArrayToReadableStream(fixture("ai-sdk/v3-text.jsonl").map((line) => JSON.parse(line))),
      }),
    });
    await ask(fromAiSdk(mock, { maxRetries: 0, onWarning: () => {} }), [mislabelled]);
    expect(mock.doStreamCalls[0]!.prompt[0]!.content[1]).toEqual({
      type: "file",
      data: PNG_1PX,
      mediaType: "image/png",
    });
  });
});

describe("a part with no bytes", () => {
  it.each(["anthropic", "openai", "responses"] as const)(
    "%s refuses an empty image or file in a user message before sending anything",
    async (kind) => {
      const { model, requests } = await providerOn(kind);
      const image = ask(model, [{ type: "image", data: "", mimeType: "image/png" }]);
      await expect(image).rejects.toThrow(UserError);
      await expect(image).rejects.toThrow(
        /cannot take an image \(image\/png\) in a user message: it is empty \(0 bytes\)/,
      );
      await expect(
        ask(model, [{ type: "file", data: "", mimeType: "application/pdf", filename: "q3.pdf" }]),
      ).rejects.toThrow(/cannot take a file \(application\/pdf, q3\.pdf\) in a user message: it is empty/);
      expect(requests()).toHaveLength(0);
    },
  );

  it("fromAiSdk refuses it too, without calling the model", async () => {
    const mock = new MockLanguageModelV3({});
    const run = ask(fromAiSdk(mock, { maxRetries: 0 }), [{ type: "image", data: "", mimeType: "image/png" }]);
    await expect(run).rejects.toThrow(
      "mock-provider cannot take an image (image/png) in a user message: it is empty",
    );
    expect(mock.doStreamCalls).toHaveLength(0);
  });
});

describe("Anthropic's 5 MB image limit, measured on the base64 text", () => {
  it("refuses a 4 MB image (5.3 MB as base64) in a user message, naming the limit, before sending", async () => {
    const { model, requests } = await providerOn("anthropic");
    const bytes = Buffer.alloc(4_000_000, 7);
    bytes.set(Buffer.from(PNG_1PX, "base64").subarray(0, 8));
    const run = ask(model, [{ type: "image", data: bytes.toString("base64"), mimeType: "image/png" }]);
    await expect(run).rejects.toThrow(UserError);
    await expect(run).rejects.toThrow(
      "anthropic cannot take an image (image/png) in a user message: Anthropic's limit is 5 MB of base64 (5,242,880 characters; about 3.75 MB of image) and this one is 5,333,336",
    );
    expect(requests()).toHaveLength(0);
    // Just under the limit is sent.
    const under = Buffer.alloc(3_932_160, 7);
    under.set(Buffer.from(PNG_1PX, "base64").subarray(0, 8));
    await ask(model, [{ type: "image", data: under.toString("base64"), mimeType: "image/png" }]);
    expect(requests()).toHaveLength(1);
  });
});
