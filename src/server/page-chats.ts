/**
 * The page's list of past chats (plain browser JavaScript, part of the page's one script): the
 * caller's own sessions from `GET /api/sessions`, newest first; a click reopens one, "New chat"
 * starts another, and the open chat can be renamed (`PATCH /api/sessions/:id`, kept by the
 * server, so every device shows the same title). Below 48rem wide the list is a drawer.
 */
export const PAGE_CHATS = `
  const chatList = $("chats"), sidebar = $("sidebar"), scrim = $("scrim"), openSidebarButton = $("open-sidebar");
  const titleHeading = $("chat-title"), renameButton = $("rename"), renameForm = $("rename-form"), renameInput = $("rename-input");
  let chats = [];

  async function loadChats() {
    try {
      const { sessions } = await api("GET", "/api/sessions");
      chats = sessions;
    } catch (err) {
      if (err.status !== 401) $("chats-note").textContent = "Could not load your chats: " + err.message;
      return;
    }
    $("chats-note").textContent = chats.length ? "" : "Your chats will be listed here.";
    chatList.replaceChildren(...chats.map((c) => el("li", {},
      el("button", { type: "button", class: "chat", "data-session-id": c.sessionId, onclick: () => { closeSidebar(false); openSession(c.sessionId); input.focus(); } },
        el("span", { class: "chat-title" }, c.title), el("span", { class: "chat-when" }, when(c.updatedAt))))));
    markOpenChat();
    const open = chats.find((c) => c.sessionId === state.sessionId);
    if (open && renameForm.hidden) showTitle(open);
  }
  function when(ms) {
    const d = new Date(ms), now = new Date();
    return d.toDateString() === now.toDateString()
      ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
      : d.toLocaleDateString([], { month: "short", day: "numeric", ...(d.getFullYear() !== now.getFullYear() && { year: "numeric" }) });
  }
  function markOpenChat() {
    for (const b of chatList.querySelectorAll("button.chat")) {
      if (b.dataset.sessionId === state.sessionId) b.setAttribute("aria-current", "page");
      else b.removeAttribute("aria-current");
    }
  }
  /** The open chat's title in the header (info from the server, or null for a chat not started yet). */
  function showTitle(info) {
    titleHeading.textContent = info ? info.title : "New chat";
    titleHeading.hidden = false;
    renameForm.hidden = true;
    renameButton.hidden = !info;
    document.title = (info ? info.title + " · " : "") + "Quiver chat";
  }

  renameButton.addEventListener("click", () => {
    renameInput.value = titleHeading.textContent;
    titleHeading.hidden = true;
    renameButton.hidden = true;
    renameForm.hidden = false;
    renameInput.focus();
    renameInput.select();
  });
  function endRename() {
    renameForm.hidden = true;
    titleHeading.hidden = false;
    renameButton.hidden = false;
    renameButton.focus();
  }
  renameForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const info = await api("PATCH", "/api/sessions/" + encodeURIComponent(state.sessionId), { title: renameInput.value.trim() });
      endRename();
      showTitle(info);
      loadChats();
    } catch (err) { setStatus(err.message, true); }
  });
  $("rename-cancel").addEventListener("click", endRename);

  function openSidebar() {
    sidebar.classList.add("open");
    scrim.hidden = false;
    openSidebarButton.setAttribute("aria-expanded", "true");
    (chatList.querySelector("[aria-current]") || $("new-chat")).focus();
  }
  function closeSidebar(returnFocus) {
    if (!sidebar.classList.contains("open")) return;
    sidebar.classList.remove("open");
    scrim.hidden = true;
    openSidebarButton.setAttribute("aria-expanded", "false");
    if (returnFocus) openSidebarButton.focus();
  }
  openSidebarButton.addEventListener("click", openSidebar);
  $("close-sidebar").addEventListener("click", () => closeSidebar(true));
  scrim.addEventListener("click", () => closeSidebar(true));
  $("new-chat").addEventListener("click", () => { closeSidebar(false); newChat(); });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    if (sidebar.classList.contains("open")) closeSidebar(true);
    else if (!renameForm.hidden) endRename();
  });
`;
