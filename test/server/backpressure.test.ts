import { connect } from "node:net";
import { createServer, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { chattyAgent, events, post, readSse } from "./helpers.js";

describe("slow and stalled clients", () => {
  it("a client that stops reading holds up neither the run nor other clients, and loses nothing when it reads again", async () => {
    const count = 5_000;
    const server = createServer({ agent: chattyAgent(count, 1_000) });
    const serving = await serve(server, { port: 0 });
    try {
      const { runId } = (await (await server.fetch(post("/api/runs", { message: "talk" }))).json()) as {
        runId: string;
      };
      // A raw client that sends its request and then reads nothing.
      const socket = connect(serving.port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      socket.pause();
      socket.write(`GET /api/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1:${serving.port}\r\n\r\n`);

      // Another client reads the whole run meanwhile.
      const all = events(
        await readSse(await fetch(`${serving.url}/api/runs/${runId}/events`), undefined, 15_000),
      );
      expect(all.filter((e) => e.type === "text_delta")).toHaveLength(count);
      expect(all.at(-1)!.type).toBe("run_completed");

      // The stalled one resumes reading and gets every event, in order.
      let text = "";
      socket.setEncoding("utf8");
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("stalled client never got the end")), 15_000);
        socket.on("data", (chunk: string) => {
          text += chunk;
          if (text.includes('"type":"run_completed"')) {
            clearTimeout(timer);
            resolve();
          }
        });
        socket.resume();
      });
      socket.destroy();
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids).toEqual(all.map((e) => e.seq));
    } finally {
      await serving.close();
    }
  }, 30_000);
});
