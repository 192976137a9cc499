/**
 * Attachments a client sends with a message (the AI SDK's file parts, AG-UI's media parts, the
 * native API's content parts) as Quiver content parts: a `data:` URL becomes base64 bytes, an
 * http(s) URL stays a URL for the provider to fetch, anything else is a 400 naming the part.
 */
import { type ContentBlock, UserError } from "../index.js";
import { mediaTypeOf, parseDataUrl } from "../model/media.js";
import { HttpError } from "./http.js";

/** What a client says an attachment is, when its protocol says (AG-UI's part types). */
export type AttachmentKind = "image" | "audio" | "document";

/**
 * One attachment as a part: an image, a recording or a document, by what the client calls it
 * or else by its media type (given, from the data URL, or guessed from the URL's extension).
 */
export function attachment(
  at: string,
  source: {
    url: string;
    mediaType?: string | undefined;
    filename?: string | undefined;
    kind?: AttachmentKind;
  },
): ContentBlock {
  const parsed = parseDataUrl(source.url);
  if (!parsed && !/^https?:\/\//i.test(source.url)) {
    throw new HttpError(
      400,
      "bad_request",
      `${at}: the url must be a base64 data: URL or an http(s) URL (got ${JSON.stringify(source.url.slice(0, 40))})`,
    );
  }
  const mimeType = (
    source.mediaType ||
    parsed?.mimeType ||
    mediaTypeOf(new URL(source.url).pathname)
  )?.toLowerCase();
  const kind =
    source.kind ??
    (mimeType?.startsWith("image/") ? "image" : mimeType?.startsWith("audio/") ? "audio" : "document");
  if (kind === "image") {
    return parsed
      ? { type: "image", data: parsed.data, mimeType: mimeType! }
      : { type: "image", url: source.url, ...(mimeType && { mimeType }) };
  }
  if (kind === "audio") {
    if (!parsed)
      throw new HttpError(
        400,
        "bad_request",
        `${at}: audio must be sent as its bytes (a data: URL), not a link`,
      );
    return { type: "audio", data: parsed.data, mimeType: mimeType! };
  }
  if (!mimeType) throw new HttpError(400, "bad_request", `${at}: a document needs its media type`);
  const filename = source.filename ? { filename: source.filename } : {};
  return parsed
    ? { type: "file", data: parsed.data, mimeType, ...filename }
    : { type: "file", url: source.url, mimeType, ...filename };
}

/** The content of a new user message: its text alone when it has no attachment. */
export function messageContent(blocks: ContentBlock[]): string | ContentBlock[] {
  if (blocks.every((block) => block.type === "text"))
    return blocks
      .map((block) => (block as { text: string }).text)
      .join("\n")
      .trim();
  return blocks;
}

/** True when a message's content says nothing: no text and no attachment. */
export function isEmptyContent(content: string | ContentBlock[]): boolean {
  return typeof content === "string" ? content === "" : content.length === 0;
}

/**
 * Starts a run, turning what the run refuses about its input (an attachment over
 * `maxAttachmentBytes`, a malformed part) into a 400 the client can read.
 */
export function refusingBadInput<T>(start: () => T): T {
  try {
    return start();
  } catch (error) {
    if (error instanceof UserError) throw new HttpError(400, "bad_request", error.message);
    throw error;
  }
}
