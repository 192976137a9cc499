/**
 * `quiver run … --file path` (repeatable): the files go with the prompt as content parts, by
 * their extension — checked in the request the real binary sends to a local server replaying
 * Chat Completions; an unknown kind or a missing file is a usage error before anything runs.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rejectLikeOpenAI, validateChatRequest } from "../providers/openai-chat-api.js";
import { closedAfterEach, fixture, startReplayServer, streamFixture } from "../providers/replay-server.js";
import { cliProjects, quiver } from "./binary.js";

const cli = cliProjects(["chatty-agent.mjs"]);

const servers = closedAfterEach();

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF");

function projectWithFiles(): string {
  const dir = cli.project(["chatty-agent.mjs"]);
  writeFileSync(join(dir, "pixel.png"), Buffer.from(PNG_1PX, "base64"));
  writeFileSync(join(dir, "q3.pdf"), PDF);
  writeFileSync(join(dir, "notes.md"), "# Notes\nship on Friday");
  writeFileSync(join(dir, "data.xyz"), "?");
  return dir;
}

async function openAiServer(turns = 1) {
  const server = await startReplayServer({
    replies: Array.from({ length: turns }, () => streamFixture(fixture("openai-chat/text.jsonl"))),
    validate: (req) => validateChatRequest(req),
    reject: rejectLikeOpenAI,
  });
  servers.push(server);
  return { server, env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "test-key" } };
}

describe("quiver run --file", () => {
  it("sends an image, a PDF and a text file with the prompt", async () => {
    const cwd = projectWithFiles();
    const { server, env } = await openAiServer();
    const ran = await quiver(
      cli.bin,
      [
        "run",
        "chatty-agent.mjs#chatty",
        "describe these",
        "--file",
        "pixel.png",
        "--file",
        "q3.pdf",
        "--file",
        "notes.md",
        "--model",
        "openai:gpt-4.1-mini",
      ],
      { cwd, env },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "describe these" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
        {
          type: "file",
          file: { filename: "q3.pdf", file_data: `data:application/pdf;base64,${PDF.toString("base64")}` },
        },
        { type: "text", text: "[file: notes.md (text/markdown)]\n# Notes\nship on Friday" },
      ],
    });
  });

  it("an unknown kind of file or a missing one is a usage error before anything runs", async () => {
    const cwd = projectWithFiles();
    const { server, env } = await openAiServer();
    const unknown = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hi", "--file", "data.xyz"], {
      cwd,
      env,
    });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--file data.xyz: cannot tell what kind of file it is (known: png, jpg");
    const missing = await quiver(
      cli.bin,
      ["run", "chatty-agent.mjs#chatty", "hi", "--file", "nope.png", "--model", "openai:gpt-4.1-mini"],
      { cwd, env },
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--file nope.png: no such file");
    expect(server.requests).toHaveLength(0);
  });
});

describe("quiver chat --file and /file", () => {
  it("--file goes with the first message, /file PATH with the next one; later turns keep them", async () => {
    const cwd = projectWithFiles();
    const { server, env } = await openAiServer(3);
    const ran = await quiver(
      cli.bin,
      [
        "chat",
        "chatty-agent.mjs#chatty",
        "--store",
        "memory",
        "--model",
        "openai:gpt-4.1-mini",
        "--file",
        "q3.pdf",
      ],
      { cwd, env, input: "read this\n/file pixel.png\n/file nope.png\nand this\nthanks\n/exit\n" },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("attached pixel.png (image/png, 1 KB): it goes with your next message");
    expect(ran.stdout).toContain("--file nope.png: no such file");
    expect(server.rejected).toEqual([]);
    const users = (i: number) =>
      server.requests[i]!.body.messages.filter((m: { role: string }) => m.role === "user").map(
        (m: { content: unknown }) => m.content,
      );
    const pdfPart = {
      type: "file",
      file: { filename: "q3.pdf", file_data: `data:application/pdf;base64,${PDF.toString("base64")}` },
    };
    const imagePart = { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } };
    expect(users(0)).toEqual([[{ type: "text", text: "read this" }, pdfPart]]);
    expect(users(1).at(-1)).toEqual([{ type: "text", text: "and this" }, imagePart]);
    expect(users(2)).toEqual([
      [{ type: "text", text: "read this" }, pdfPart],
      [{ type: "text", text: "and this" }, imagePart],
      "thanks",
    ]);
  });
});
