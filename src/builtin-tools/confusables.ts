/**
 * The folded view fence() matches framing on: what a reader (or a model) would take the text
 * to say, whatever look-alike characters spell it. The output always keeps the original
 * characters; only the matching sees the fold.
 *
 * One code point folds by, in order: a look-alike table (small capitals, Cyrillic, Greek,
 * Armenian, Cherokee and IPA letters that pass for Latin ones), then NFKD (full-width,
 * mathematical, circled, superscript and ligature forms) without combining marks, lower case,
 * the table again, dashes to "-", and blanks that are not white space (braille blank…) to " ".
 * Backslashes vanish, so that Markdown escaping (`\<start\_of\_turn>`) changes nothing.
 */

/** Look-alikes of each Latin letter, the capitals included (Greek Ν is an N, its lower case ν a v). */
const LOOKALIKES_BY_LETTER: Record<string, string> = {
  a: "аАαΑɑ⍺ᴀᎪꭺ",
  b: "ьЬвВΒβʙᏴᏼᏏꮟƅ",
  c: "сСϲϹᴄᏟꮯꞓ",
  d: "ԁԀᴅᎠꭰɗ",
  e: "еЕёЁεΕᴇҽ℮ᎬꭼєЄɛ",
  f: "ꜰϝϜ",
  g: "ɡɢցԍԌᏀꮐ",
  h: "һҺнНʜΗᎻꮋ",
  i: "іІιΙɪıӏӀᎥꭵǀɩ",
  j: "јЈʝᴊᎫꭻϳ",
  k: "кКκΚᴋᏦꮶĸ",
  l: "ʟᏞꮮ",
  m: "мМΜᴍᎷꮇϻ",
  n: "ոɴΝηռп",
  o: "оОοΟᴏօՕσഠ",
  p: "рРρΡᴘᏢꮲϱ",
  q: "ԛԚꞯ",
  r: "гʀᎡꭱᏒꮢᴦ",
  s: "ѕЅꜱᏚꮪʂ",
  t: "тТτΤᴛᎢꭲ",
  u: "υᴜսՍʋ",
  v: "νᴠѵѴᏙꮩ",
  w: "ᴡԝԜѡᎳꮃᏔꮤɯ",
  x: "хХχΧ×",
  y: "уУʏγүҮᎩꭹΥϒ",
  z: "ᴢᏃꮓΖ",
};

const LOOKALIKES = new Map<string, string>();
for (const [letter, chars] of Object.entries(LOOKALIKES_BY_LETTER)) {
  for (const char of chars) LOOKALIKES.set(char, letter);
}

/** Dashes and box-drawing lines that read as "-". */
const DASHES = /[\p{Pd}\u2212\u2500\u2501\u23af\u2e3a\u2e3b]/u;
/**
 * Characters that render as blank space but are not white space to a regex: the braille
 * blank and the musical null notehead. (Hangul fillers and other invisible characters are
 * removed from the text itself before matching.)
 */
const BLANKS = /[\u2800\u{1d159}]/u;
const COMBINING = /\p{M}/gu;
/** Text without anything to fold: ASCII other than upper case and the backslash. */
const NOTHING_TO_FOLD = /^[\x00-\x40\x5b\x5d-\x7f]*$/;
const ASCII_WITHOUT_BACKSLASH = /^[\x00-\x5b\x5d-\x7f]*$/;

const foldCache = new Map<number, string>();
const FOLD_CACHE_SIZE = 8192;

function foldChar(char: string): string {
  const direct = LOOKALIKES.get(char);
  if (direct !== undefined) return direct;
  if (DASHES.test(char)) return "-";
  if (BLANKS.test(char)) return " ";
  const lower = char.toLowerCase();
  return LOOKALIKES.get(lower) ?? lower;
}

/**
 * One code point of the folded view.
 *
 * @example
 * fold("ᴇ") // → "e"; fold("Ｅ") // → "e"; fold("\u2800") // → " "; fold("\\") // → ""
 */
export function fold(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code === 0x5c) return "";
  if (code < 0x80) return code >= 65 && code <= 90 ? String.fromCharCode(code + 32) : char;
  let folded = foldCache.get(code);
  if (folded === undefined) {
    const direct = LOOKALIKES.get(char);
    if (direct !== undefined) folded = direct;
    else {
      folded = "";
      for (const c of char.normalize("NFKD").replace(COMBINING, "")) folded += foldChar(c);
    }
    if (foldCache.size < FOLD_CACHE_SIZE) foldCache.set(code, folded);
  }
  return folded;
}

/** The folded view of a text, with each view position's span in the original. */
export interface FoldedView {
  view: string;
  /** Where the original character behind view position `i` starts. */
  start(i: number): number;
  /** Where the original character behind view position `i` ends (exclusive). */
  end(i: number): number;
}

/**
 * The folded view of `text`, built in one pass over it.
 *
 * @example
 * foldedView("ᴇɴᴅ").view // → "end"
 */
export function foldedView(text: string): FoldedView {
  // Plain ASCII text (most pages) folds to its lower case, position for position.
  if (NOTHING_TO_FOLD.test(text)) return { view: text, start: (i) => i, end: (i) => i + 1 };
  if (ASCII_WITHOUT_BACKSLASH.test(text)) {
    return { view: text.toLowerCase(), start: (i) => i, end: (i) => i + 1 };
  }
  const n = text.length;
  // Most folds are one unit to one unit; expansions (ligatures, "㈱" → "(株)") grow the arrays.
  let units = new Uint16Array(n + 16);
  let starts = new Int32Array(n + 16);
  let ends = new Int32Array(n + 16);
  let length = 0;
  const reserve = (extra: number) => {
    if (length + extra <= units.length) return;
    const size = units.length * 2 + extra;
    const grownUnits = new Uint16Array(size);
    grownUnits.set(units);
    units = grownUnits;
    const grownStarts = new Int32Array(size);
    grownStarts.set(starts);
    starts = grownStarts;
    const grownEnds = new Int32Array(size);
    grownEnds.set(ends);
    ends = grownEnds;
  };
  for (let i = 0; i < n; ) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      if (code !== 0x5c) {
        reserve(1);
        units[length] = code >= 65 && code <= 90 ? code + 32 : code;
        starts[length] = i;
        ends[length] = i + 1;
        length++;
      }
      i++;
      continue;
    }
    const low = code >= 0xd800 && code <= 0xdbff && i + 1 < n ? text.charCodeAt(i + 1) : 0;
    const width = low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
    const folded = fold(width === 2 ? text.slice(i, i + 2) : text[i]!);
    reserve(folded.length);
    for (let k = 0; k < folded.length; k++, length++) {
      units[length] = folded.charCodeAt(k);
      starts[length] = i;
      ends[length] = i + width;
    }
    i += width;
  }
  let view = "";
  for (let at = 0; at < length; at += 8192) {
    view += String.fromCharCode(...units.subarray(at, Math.min(length, at + 8192)));
  }
  return { view, start: (i) => starts[i]!, end: (i) => ends[i]! };
}
