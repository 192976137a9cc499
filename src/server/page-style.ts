/**
 * The chat page's stylesheet: a chat list beside the conversation (a drawer below 48rem), readable
 * from 380 px up, the system's light or dark scheme, and a visible focus ring on everything.
 */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1b1b1f; --bg: #ffffff; --side: #f4f4f7; --muted: #5b5b66; --card: #fff;
  --soft: #f4f4f7; --line: #d9d9e0; --accent: #2451c7; --on-accent: #fff; --ok: #1f7a3a; --bad: #b3261e;
  --add: #e6f4ea; --del: #fce8e6; --code: #f6f8fa; --user: #eef2fc; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6ea; --bg: #17171c; --side: #111115; --muted: #a3a3ae;
  --card: #1f1f26; --soft: #24242c; --line: #363641; --accent: #8ab4ff; --on-accent: #0b1b3f; --ok: #7fd69a;
  --bad: #ff8a80; --add: #17351f; --del: #3d1a18; --code: #0f0f13; --user: #232a3d; } }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html, body { height: 100%; }
body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
.app { display: flex; height: 100vh; height: 100dvh; }
#sidebar { flex: 0 0 17rem; display: flex; flex-direction: column; background: var(--side); border-right: 1px solid var(--line);
  overflow: hidden; }
.side-head { display: flex; gap: .5rem; padding: .75rem; }
.side-head #new-chat { flex: 1; }
#sidebar nav { flex: 1; overflow-y: auto; padding: 0 .5rem .5rem; }
#chats { list-style: none; margin: 0; padding: 0; }
button.chat { display: flex; width: 100%; gap: .5rem; justify-content: space-between; align-items: baseline; text-align: left;
  border: 0; background: transparent; padding: .45rem .6rem; border-radius: .5rem; min-height: 2.5rem; }
button.chat:hover { background: var(--soft); }
button.chat[aria-current] { background: var(--card); box-shadow: inset 0 0 0 1px var(--line); font-weight: 600; }
.chat-title { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; flex: 1; }
.chat-when { font-size: .75rem; color: var(--muted); flex: none; font-weight: 400; }
.note { color: var(--muted); font-size: .85rem; padding: 0 1.1rem; }
.main { flex: 1; display: flex; flex-direction: column; min-width: 0; position: relative; }
header { display: flex; gap: .5rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid var(--line); min-height: 3.25rem; }
header h1 { font-size: 1rem; margin: 0; flex: 1; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.rename { display: flex; gap: .5rem; flex: 1; min-width: 0; }
.rename input { flex: 1; min-width: 0; }
#scroller { flex: 1; overflow-y: auto; outline: none; }
#log { max-width: 48rem; margin: 0 auto; padding: 1rem 1rem 2rem; }
.run { margin-bottom: 1.5rem; }
.user { background: var(--user); border-radius: 1rem; padding: .5rem .9rem; margin: 0 0 .75rem auto; max-width: 85%;
  width: fit-content; white-space: pre-wrap; overflow-wrap: anywhere; }
.text { margin: .25rem 0 .75rem; overflow-wrap: anywhere; }
.text.plain { white-space: pre-wrap; }
.md > div > :first-child { margin-top: 0; }
.md p, .md ul, .md ol, .md blockquote, .md .table-wrap, .md .code { margin: 0 0 .75rem; }
.md h1, .md h2, .md h3, .md h4, .md h5, .md h6 { margin: 1.1rem 0 .5rem; line-height: 1.3; }
.md h1 { font-size: 1.4rem; } .md h2 { font-size: 1.25rem; } .md h3 { font-size: 1.1rem; } .md h4, .md h5, .md h6 { font-size: 1rem; }
.md ul, .md ol { padding-left: 1.5rem; }
.md li + li { margin-top: .2rem; }
.md li.task { list-style: none; }
.md li > ul, .md li > ol { margin: .2rem 0 0; }
.md blockquote { border-left: 3px solid var(--line); padding-left: .9rem; color: var(--muted); }
.md a { color: var(--accent); }
.md .link-host { color: var(--muted); font-size: .85em; }
.md hr { border: 0; border-top: 1px solid var(--line); margin: 1rem 0; }
.md :not(pre) > code { background: var(--soft); border-radius: .3rem; padding: .1rem .3rem; font: .88em/1.4 ui-monospace, "SFMono-Regular", Menlo, monospace; }
.table-wrap { overflow-x: auto; }
.md table { border-collapse: collapse; font-size: .95rem; }
.md th, .md td { border: 1px solid var(--line); padding: .35rem .6rem; text-align: left; vertical-align: top; }
.md th[align="right"], .md td[align="right"] { text-align: right; }
.md th[align="center"], .md td[align="center"] { text-align: center; }
.md th { background: var(--soft); }
.code { border: 1px solid var(--line); border-radius: .5rem; overflow: hidden; background: var(--code); }
.code-bar { display: flex; justify-content: space-between; align-items: center; padding: .15rem .25rem .15rem .75rem;
  font-size: .78rem; color: var(--muted); border-bottom: 1px solid var(--line); }
.code-bar button { min-height: 2rem; padding: .15rem .6rem; font-size: .8rem; }
.code pre { margin: 0; border-radius: 0; background: transparent; white-space: pre; overflow-wrap: normal; max-height: none; }
.reasoning { color: var(--muted); font-style: italic; white-space: pre-wrap; border-left: 3px solid var(--line); padding-left: .75rem; margin: .25rem 0 .75rem; }
.tool { border: 1px solid var(--line); border-radius: .6rem; background: var(--card); margin: .5rem 0; }
.tool > summary { cursor: pointer; padding: .45rem .75rem; display: flex; gap: .5rem; flex-wrap: wrap; align-items: baseline; border-radius: .6rem; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
#scroller:focus-visible { outline: 3px solid var(--accent); outline-offset: -3px; }
.tool .body { padding: 0 .75rem .75rem; }
.tool-name { font-family: ui-monospace, monospace; font-weight: 600; }
.state { font-size: .85rem; color: var(--muted); }
.state.ok { color: var(--ok); } .state.bad { color: var(--bad); }
pre { margin: .25rem 0; padding: .5rem .75rem; background: var(--soft); border-radius: .4rem; overflow-x: auto;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, monospace; max-height: 24rem; }
.label { font-size: .8rem; color: var(--muted); margin-top: .5rem; }
.diff .add { background: var(--add); display: block; } .diff .del { background: var(--del); display: block; }
.ask { border-top: 1px dashed var(--line); margin-top: .5rem; padding-top: .5rem; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .5rem; }
.row input[type=text] { flex: 1 1 10rem; min-width: 0; }
button { font: inherit; padding: .45rem .9rem; border-radius: .5rem; border: 1px solid var(--line); background: var(--card);
  color: var(--fg); cursor: pointer; min-height: 2.5rem; }
button:hover { border-color: var(--muted); }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--on-accent); }
button.danger { border-color: var(--bad); color: var(--bad); }
button.icon { padding: .3rem .65rem; font-size: 1.1rem; line-height: 1; }
button:disabled { opacity: .5; cursor: default; }
input[type=text], input[type=password], textarea, select { font: inherit; color: var(--fg); background: var(--card);
  border: 1px solid var(--line); border-radius: .5rem; padding: .45rem .6rem; }
.jump { position: absolute; left: 50%; transform: translateX(-50%); bottom: calc(100% + .75rem); border-radius: 999px;
  box-shadow: 0 2px 10px rgba(0,0,0,.18); z-index: 2; white-space: nowrap; }
.composer { position: relative; border-top: 1px solid var(--line); padding: .5rem 1rem .75rem; background: var(--bg); }
.composer form { max-width: 46rem; margin: 0 auto; display: flex; gap: .5rem; align-items: flex-end; flex-wrap: wrap; }
.chips { flex-basis: 100%; display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; margin: 0; padding: 0; }
.chip { position: relative; display: flex; align-items: center; gap: .5rem; max-width: 16rem; min-height: 3.5rem;
  padding: .35rem 2.6rem .35rem .4rem; border: 1px solid var(--line); border-radius: .6rem; background: var(--card); }
.chip.image { padding: 0; width: 3.5rem; height: 3.5rem; overflow: hidden; }
.chip .thumb { width: 100%; height: 100%; object-fit: cover; display: block; }
.file-kind { flex: none; font: 700 .7rem/1 system-ui, sans-serif; color: #fff; background: #c5221f; border-radius: .3rem; padding: .35rem .3rem; }
.chip-text { display: flex; flex-direction: column; min-width: 0; line-height: 1.25; }
.chip-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: .9rem; }
.chip-size { font-size: .75rem; color: var(--muted); }
.chip-remove { position: absolute; top: .2rem; right: .2rem; min-height: 0; width: 1.6rem; height: 1.6rem; padding: 0; line-height: 1;
  font-size: .8rem; border-radius: 999px; background: var(--card); }
.chip:not(.image) .chip-remove { top: 50%; transform: translateY(-50%); }
.chip.image .chip-remove { top: .15rem; right: .15rem; width: 1.4rem; height: 1.4rem; opacity: .92; }
.attach-note { flex-basis: 100%; margin: 0; color: var(--bad); font-size: .9rem; }
button.attach { align-self: flex-end; min-height: 2.75rem; min-width: 2.75rem; display: inline-flex; align-items: center; justify-content: center; }
.main.dropping::after { content: "Drop an image or PDF to attach it"; position: absolute; inset: .5rem; z-index: 5; display: flex;
  align-items: center; justify-content: center; font-weight: 600; border: 3px dashed var(--accent); border-radius: .75rem;
  background: color-mix(in srgb, var(--bg) 85%, transparent); pointer-events: none; }
.media { display: flex; flex-wrap: wrap; gap: .5rem; margin: .25rem 0 .35rem; white-space: normal; }
.inline-image { display: block; max-width: min(100%, 22rem); max-height: 18rem; border-radius: .5rem; border: 1px solid var(--line); background: var(--card); }
.media-chip { display: inline-flex; align-items: center; gap: .4rem; max-width: 100%; padding: .3rem .55rem; border: 1px solid var(--line);
  border-radius: .5rem; background: var(--card); font-size: .85rem; overflow-wrap: anywhere; }
a.media-chip { color: var(--accent); }
.composer textarea { flex: 1 1 14rem; min-width: 0; min-height: 2.75rem; max-height: 40vh; resize: vertical; }
.status { font-size: .9rem; color: var(--muted); min-height: 1.4em; max-width: 46rem; margin: 0 auto .35rem; }
.error { color: var(--bad); }
.token-form { max-width: 48rem; margin: 1rem auto; padding: 0 1rem; }
.token-note { flex-basis: 100%; margin: 0; color: var(--bad); }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); border: 0; }
.options { display: flex; flex-wrap: wrap; gap: .4rem; }
.child { border-left: 3px solid var(--line); padding-left: .75rem; margin: .5rem 0; }
.narrow-only { display: none; }
@media (max-width: 48rem) {
  .narrow-only { display: inline-block; }
  #scrim.narrow-only { display: block; }
  #sidebar { position: fixed; inset: 0 auto 0 0; width: min(20rem, 85vw); z-index: 10; transform: translateX(-100%);
    visibility: hidden; transition: transform .15s ease, visibility 0s linear .15s; box-shadow: 2px 0 16px rgba(0,0,0,.25); }
  #sidebar.open { transform: none; visibility: visible; transition: transform .15s ease; }
  #scrim { position: fixed; inset: 0; background: rgba(0,0,0,.35); z-index: 9; }
  header { padding: .5rem .75rem; }
  #log { padding: .75rem .75rem 1.5rem; }
  .composer { padding: .5rem .75rem .75rem; }
  /* Attach, the box, Send and Stop stay on one row down to 320 px while a run goes on. */
  .composer textarea { flex-basis: 6rem; }
  .composer #send, .composer #cancel { padding-left: .6rem; padding-right: .6rem; }
  .user { max-width: 92%; }
}
@media (prefers-reduced-motion: reduce) { #sidebar, #sidebar.open { transition: none; } }
`;
