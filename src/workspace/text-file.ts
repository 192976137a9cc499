const BOM = "\uFEFF";

/** A text file's body with its byte-order mark and line endings taken out, to be put back on write. */
export type TextFile = {
  /** The text without BOM, with `\n` line endings when the file used `\r\n` throughout. */
  text: string;
  bom: boolean;
  /** `"\r\n"` when every line break of the file is CRLF; otherwise `"\n"` (the text is as on disk). */
  eol: "\n" | "\r\n";
};

/** Splits a file's text into its body, BOM and line-ending style. */
export function parseText(raw: string): TextFile {
  const bom = raw.startsWith(BOM);
  const body = bom ? raw.slice(1) : raw;
  const crlf = body.includes("\r\n") && !/(^|[^\r])\n/.test(body);
  return { text: crlf ? body.replaceAll("\r\n", "\n") : body, bom, eol: crlf ? "\r\n" : "\n" };
}

/** The bytes to write for `text` in the style of `like` (BOM and CRLF restored). */
export function formatText(text: string, like: Pick<TextFile, "bom" | "eol">): string {
  const body = like.eol === "\r\n" ? text.replaceAll("\r\n", "\n").replaceAll("\n", "\r\n") : text;
  return like.bom && !body.startsWith(BOM) ? BOM + body : body;
}

/** Normalises what the model sent to the style of the parsed text (a CRLF file is matched as LF). */
export function asParsed(text: string, file: TextFile): string {
  return file.eol === "\r\n" ? text.replaceAll("\r\n", "\n") : text;
}

/** 1-based line number of each offset, in one pass over the text (offsets ascending). */
export function lineNumbersAt(text: string, offsets: number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let from = 0;
  for (const offset of offsets) {
    for (let i = text.indexOf("\n", from); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
      line++;
      from = i + 1;
    }
    lines.push(line);
  }
  return lines;
}

/** True when the first bytes look binary (a NUL byte, as git and ripgrep decide). */
export function looksBinary(bytes: Uint8Array): boolean {
  // indexOf on a Buffer is memchr: far faster than a loop over 8,000 bytes per file.
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 8_000)).indexOf(0) !== -1;
}
