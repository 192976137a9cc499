/** The chat page's stylesheet: readable from phone width up, visible focus, respects dark mode. */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1b1b1f; --bg: #fafafa; --muted: #5b5b66; --card: #fff; --line: #d6d6de;
  --accent: #2451c7; --ok: #1f7a3a; --bad: #b3261e; --add: #e6f4ea; --del: #fce8e6; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6ea; --bg: #141418; --muted: #a0a0ab; --card: #1e1e24;
  --line: #34343e; --accent: #8ab4ff; --ok: #7fd69a; --bad: #ff8a80; --add: #17351f; --del: #3d1a18; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; justify-content: space-between;
  padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1rem; margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem 1rem 12rem; }
.run { margin-bottom: 1.5rem; }
.user { background: var(--card); border: 1px solid var(--line); border-radius: .75rem; padding: .5rem .75rem;
  margin: 0 0 .75rem auto; max-width: 85%; width: fit-content; white-space: pre-wrap; overflow-wrap: anywhere; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0 .75rem; }
.reasoning { color: var(--muted); font-style: italic; white-space: pre-wrap; }
.tool { border: 1px solid var(--line); border-radius: .5rem; background: var(--card); margin: .5rem 0; }
.tool > summary { cursor: pointer; padding: .4rem .75rem; display: flex; gap: .5rem; flex-wrap: wrap; align-items: baseline; }
.tool > summary:focus-visible, button:focus-visible, textarea:focus-visible, input:focus-visible, select:focus-visible {
  outline: 3px solid var(--accent); outline-offset: 2px; }
.tool .body { padding: 0 .75rem .75rem; }
.tool-name { font-family: ui-monospace, monospace; font-weight: 600; }
.state { font-size: .85rem; color: var(--muted); }
.state.ok { color: var(--ok); } .state.bad { color: var(--bad); }
pre { margin: .25rem 0; padding: .5rem; background: var(--bg); border-radius: .375rem; overflow-x: auto;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, monospace; max-height: 24rem; }
.label { font-size: .8rem; color: var(--muted); margin-top: .5rem; }
.diff .add { background: var(--add); display: block; } .diff .del { background: var(--del); display: block; }
.ask { border-top: 1px dashed var(--line); margin-top: .5rem; padding-top: .5rem; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .5rem; }
.row input[type=text] { flex: 1 1 12rem; }
button { font: inherit; padding: .45rem .9rem; border-radius: .5rem; border: 1px solid var(--line); background: var(--card);
  color: var(--fg); cursor: pointer; min-height: 2.5rem; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
@media (prefers-color-scheme: dark) { button.primary { color: #0b1b3f; } }
button.danger { border-color: var(--bad); color: var(--bad); }
button:disabled { opacity: .5; cursor: default; }
input[type=text], input[type=password], textarea, select { font: inherit; color: var(--fg); background: var(--card);
  border: 1px solid var(--line); border-radius: .5rem; padding: .45rem .6rem; }
.composer { position: fixed; left: 0; right: 0; bottom: 0; background: var(--bg); border-top: 1px solid var(--line); padding: .75rem 1rem; }
.composer form { max-width: 52rem; margin: 0 auto; display: flex; gap: .5rem; align-items: flex-end; flex-wrap: wrap; }
.composer textarea { flex: 1 1 16rem; min-height: 2.75rem; max-height: 40vh; resize: vertical; }
.status { font-size: .9rem; color: var(--muted); min-height: 1.4em; max-width: 52rem; margin: 0 auto .25rem; }
.error { color: var(--bad); }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); border: 0; }
.options { display: flex; flex-wrap: wrap; gap: .4rem; }
.child { border-left: 3px solid var(--line); padding-left: .75rem; margin: .5rem 0; }
`;
