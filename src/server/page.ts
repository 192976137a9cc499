import { PAGE_SCRIPT } from "./page-script.js";
import { PAGE_STYLE } from "./page-style.js";

/** The web chat page served at `GET /`: one self-contained document. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Quiver chat</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
  <h1>Quiver chat</h1>
  <div class="row">
    <span id="agent-field" hidden><label for="agent">Agent</label> <select id="agent"></select></span>
    <button type="button" id="new-chat">New chat</button>
  </div>
</header>
<div id="token-box" hidden>
  <form id="token-form" class="row" style="max-width:52rem;margin:1rem auto;padding:0 1rem">
    <label for="token">Access token</label>
    <input type="password" id="token" autocomplete="current-password" required>
    <button type="submit" class="primary">Use token</button>
  </form>
</div>
<main id="log" aria-live="polite" aria-relevant="additions text" aria-label="Conversation"></main>
<div class="composer">
  <p id="status" class="status" role="status"></p>
  <form id="composer">
    <label for="message" class="sr-only">Message</label>
    <textarea id="message" rows="2" placeholder="Message the agent (Enter sends, Shift+Enter for a new line)" required></textarea>
    <button type="submit" id="send" class="primary">Send</button>
    <button type="button" id="cancel" class="danger" hidden>Cancel run</button>
  </form>
</div>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
