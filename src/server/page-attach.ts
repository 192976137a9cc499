import { DEFAULT_MAX_ATTACHMENT_BYTES } from "../run/config/run-input.js";
import { MAX_MESSAGE_BODY_BYTES } from "./http.js";

/**
 * The page's attachments (plain browser JavaScript, part of the page's one script, after the
 * main script): images (PNG, JPEG, GIF, WebP) and PDFs chosen with the attach button, pasted, or
 * dropped on the conversation or the composer. They wait as removable chips and go with the next
 * new message as content parts of `POST /api/runs` (`{ content: [text, image…, file…] }`), read
 * with FileReader. The page holds them to the server's limits before anything is sent: a file
 * to the run's default `maxAttachmentBytes`, a message to `MAX_MESSAGE_BODY_BYTES` as base64.
 *
 * Images in the conversation (the person's own, and those a tool returns on its
 * `tool_call_completed` event) are shown from `blob:` URLs made from their bytes: the page's CSP
 * allows `img-src 'self' blob:`, so nothing a model writes can make the browser fetch an image
 * from elsewhere. An image given only by a URL is a link a person may click, never loaded.
 */
export const PAGE_ATTACH = String.raw`
  const ATTACHABLE = { "image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "application/pdf": true };
  const BY_EXTENSION = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", pdf: "application/pdf" };
  const SHOWN_IMAGE = /^image\/(png|jpeg|gif|webp)$/;
  const MAX_FILE_BYTES = ${DEFAULT_MAX_ATTACHMENT_BYTES}, MAX_BODY_BYTES = ${MAX_MESSAGE_BODY_BYTES};
  const chipList = $("attachments"), attachNote = $("attach-note"), fileInput = $("file-input"), attachButton = $("attach");
  const dropZone = document.querySelector(".main");
  /** Files waiting for the next message: { file, name, mimeType, url (an image's object URL), data (its base64, promised) }. */
  let attached = [];
  /** Object URLs of the images in the open chat, released when another opens. */
  const shownUrls = new Set();

  function sizeText(bytes) {
    if (bytes < 1024) return bytes + " bytes";
    if (bytes < 1048576) return Math.round(bytes / 1024) + " KB";
    return (bytes / 1048576).toFixed(1).replace(/\.0$/, "") + " MB";
  }
  function typeOf(file) {
    const given = (file.type || "").toLowerCase();
    if (ATTACHABLE[given]) return given;
    // Some systems give no type (or a generic one) for a file they do not know: its name says.
    if (given && given !== "application/octet-stream") return "";
    const ext = /\.([a-z0-9]+)$/i.exec(file.name || "");
    return (ext && BY_EXTENSION[ext[1].toLowerCase()]) || "";
  }
  // A file travels as base64 inside the JSON body: a third larger, plus its part's fields.
  const wireBytes = (size) => Math.ceil(size / 3) * 4 + 256;
  function attachMessage(text) {
    attachNote.textContent = text;
    attachNote.hidden = !text;
  }
  function readBase64(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => { const url = String(reader.result); resolve(url.slice(url.indexOf(",") + 1)); };
      reader.onerror = () => reject(new Error("Could not read " + file.name + ": " + (reader.error ? reader.error.message : "unknown error")));
      reader.readAsDataURL(file);
    });
  }

  /** Adds what a person chose, pasted or dropped; says why any file was refused. */
  function addFiles(files) {
    const refused = [];
    let total = attached.reduce((sum, item) => sum + wireBytes(item.file.size), 1024 + input.value.length * 3);
    for (const file of files) {
      const name = file.name || "pasted file", mimeType = typeOf(file);
      if (!mimeType) refused.push(name + " cannot be attached: only images (PNG, JPEG, GIF, WebP) and PDFs can.");
      else if (file.size === 0) refused.push(name + " is empty.");
      else if (file.size > MAX_FILE_BYTES)
        refused.push(name + " is " + sizeText(file.size) + ": a file may be at most " + sizeText(MAX_FILE_BYTES) + ".");
      else if (total + wireBytes(file.size) > MAX_BODY_BYTES)
        refused.push(name + " (" + sizeText(file.size) + ") would take this message over the " + sizeText(MAX_BODY_BYTES) +
          " it may carry (files travel as base64, a third larger): send it with another message.");
      else {
        total += wireBytes(file.size);
        const item = { file, name, mimeType, url: mimeType.startsWith("image/") ? URL.createObjectURL(file) : null, data: readBase64(file) };
        // A file that cannot be read says so when the message is sent.
        item.data.catch(() => {});
        attached.push(item);
      }
    }
    attachMessage(refused.join(" "));
    renderChips();
  }
  function renderChips() {
    chipList.replaceChildren(...attached.map(chip));
    chipList.hidden = attached.length === 0;
    // A message may be files alone.
    input.required = attached.length === 0;
  }
  function chip(item) {
    const size = sizeText(item.file.size);
    const remove = el("button", { type: "button", class: "chip-remove", "aria-label": "Remove " + item.name, title: "Remove " + item.name,
      onclick: () => detach(item) }, "✕");
    if (item.url)
      return el("li", { class: "chip image", title: item.name + " · " + size },
        el("img", { class: "thumb", src: item.url, alt: item.name }), el("span", { class: "sr-only" }, size), remove);
    return el("li", { class: "chip", title: item.name + " · " + size },
      el("span", { class: "file-kind", "aria-hidden": "true" }, "PDF"),
      el("span", { class: "chip-text" }, el("span", { class: "chip-name" }, item.name), el("span", { class: "chip-size" }, size)), remove);
  }
  function detach(item) {
    const at = attached.indexOf(item);
    if (at < 0) return;
    attached.splice(at, 1);
    if (item.url) URL.revokeObjectURL(item.url);
    attachMessage("");
    renderChips();
    // Focus stays in the list (the next chip's remove button), else returns to the attach button.
    const buttons = chipList.querySelectorAll(".chip-remove");
    (buttons[Math.min(at, buttons.length - 1)] || attachButton).focus();
  }
  /** The files a message takes now (sending may take a while: later ones wait for the next). */
  const pendingFiles = () => attached.slice();
  /** Sent: the chips go, their images now belong to the conversation. */
  function filesSent(items) {
    attached = attached.filter((item) => !items.includes(item));
    for (const item of items) if (item.url) shownUrls.add(item.url);
    attachMessage("");
    renderChips();
  }
  /** The parts of a new message with files: its text, then each file as an image or a PDF part. */
  async function contentParts(message, items) {
    const parts = message ? [{ type: "text", text: message }] : [];
    for (const item of items) {
      const data = await item.data;
      parts.push(item.mimeType === "application/pdf"
        ? { type: "file", data, mimeType: item.mimeType, filename: item.name }
        : { type: "image", data, mimeType: item.mimeType });
    }
    return parts;
  }
  /** Refuses a body the server would refuse (413), before it is sent. */
  function checkBodySize(json) {
    const bytes = new Blob([json]).size;
    if (bytes > MAX_BODY_BYTES)
      throw new Error("This message and its files come to " + sizeText(bytes) + " as sent, over the " + sizeText(MAX_BODY_BYTES) +
        " the server takes: remove a file and send it with another message.");
  }

  attachButton.addEventListener("click", () => fileInput.click());
  fileInput.addEventListener("change", () => {
    addFiles([...fileInput.files]);
    fileInput.value = "";
    input.focus();
  });
  document.addEventListener("paste", (e) => {
    const data = e.clipboardData;
    // A one-line field (a title, a token, a reason) takes text only.
    if (!data || !data.files.length || e.target instanceof HTMLInputElement) return;
    // Office and rich-text editors put a picture of the selection beside its text: paste the text.
    if (data.types.includes("text/rtf")) return;
    e.preventDefault();
    addFiles([...data.files]);
  });
  // A file dropped anywhere must not replace the page; over the conversation or the composer it attaches.
  let dropTimer = 0;
  const carriesFiles = (e) => !!e.dataTransfer && [...e.dataTransfer.types].includes("Files");
  document.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    const over = dropZone.contains(e.target);
    e.dataTransfer.dropEffect = over ? "copy" : "none";
    dropZone.classList.toggle("dropping", over);
    clearTimeout(dropTimer);
    dropTimer = setTimeout(() => dropZone.classList.remove("dropping"), 200);
  });
  document.addEventListener("drop", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    dropZone.classList.remove("dropping");
    if (!dropZone.contains(e.target)) return;
    addFiles([...e.dataTransfer.files]);
    input.focus();
  });

  // ---- images and files in the conversation ------------------------------------------------
  function imageUrl(base64, mimeType) {
    try {
      const text = atob(base64);
      const bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      const url = URL.createObjectURL(new Blob([bytes], { type: mimeType }));
      shownUrls.add(url);
      return url;
    } catch { return null; }
  }
  /**
   * One part of a message as the conversation shows it: an image inline (from its bytes, or from
   * the object URL given for the page's own file), anything else as a chip naming it.
   */
  function mediaView(part, given, alt) {
    const type = String(part.mimeType || "").toLowerCase();
    if (part.type === "image") {
      const url = given || (typeof part.data === "string" && SHOWN_IMAGE.test(type) ? imageUrl(part.data, type) : null);
      if (url) return el("img", { class: "inline-image", src: url, alt });
      // By address only: a link to click, like an image in the model's text; never loaded by itself.
      if (typeof part.url === "string" && /^https?:\/\//i.test(part.url))
        return el("a", { class: "media-chip", href: part.url, title: part.url, target: "_blank", rel: "noopener noreferrer nofollow" }, "Image: " + part.url);
      return el("span", { class: "media-chip" }, "image (not kept in this view)");
    }
    if (part.type === "file") {
      const name = part.filename || (type === "application/pdf" ? "document.pdf" : "document");
      const bytes = typeof part.data === "string" ? Math.floor(part.data.replace(/=+$/, "").length * 3 / 4) : 0;
      return el("span", { class: "media-chip", title: name + " (" + (type || "unknown type") + ")" },
        el("span", { class: "file-kind", "aria-hidden": "true" }, type === "application/pdf" ? "PDF" : "FILE"),
        el("span", { class: "chip-name" }, name), bytes ? el("span", { class: "chip-size" }, sizeText(bytes)) : null);
    }
    if (part.type === "audio") return el("span", { class: "media-chip" }, "audio (" + (type || "unknown type") + ")");
    return null;
  }
  /** The images and files of a user message; sent: the page's own files, when it sent them. */
  function messageMedia(content, sent) {
    if (!Array.isArray(content)) return [];
    return content.filter((part) => part && part.type !== "text")
      .map((part, i) => mediaView(part, sent && sent[i] ? sent[i].url : null, sent && sent[i] ? sent[i].name : "image you attached"))
      .filter(Boolean);
  }
  function toolMedia(card, ev) {
    const media = messageMedia(ev.content, null).map((node) => {
      if (node.localName === "img") node.alt = "image from " + ev.call.name;
      return node;
    });
    if (media.length) card.output.append(el("div", { class: "label" }, "Attached to the result"), el("div", { class: "media" }, ...media));
  }
  function releaseImages() {
    for (const url of shownUrls) URL.revokeObjectURL(url);
    shownUrls.clear();
  }
`;
