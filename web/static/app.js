// The app: sign-in, the views (one per #/path), the live event stream and the notices that
// say what went wrong. No build step: these ES modules are served as written
// (docs/webapp.md). Views other than the chat load on first visit.

import { api, Problem, session } from "./api.js";
import { Live } from "./live.js";
import { attachMentions } from "./mentions.js";
import { clear, clearAll, notice } from "./notices.js";
import { prepareSignIn, signOut as endSession } from "./signin.js";
import { Thread } from "./thread.js";

const $ = (id) => document.getElementById(id);
const VIEWS = ["chat", "call", "notes", "wallet", "memory", "links", "devices", "forget"];
const LOADERS = {
  call: () => import("./call.js"),
  notes: () => import("./notes.js"),
  wallet: () => import("./wallet.js"),
  memory: () => import("./memory.js"),
  links: () => import("./links.js"),
  devices: () => import("./devices.js"),
  forget: () => import("./forget.js"),
};

const state = { me: null, team: new Map(), thread: null, live: null, views: new Map() };

export function walletChanged(balanceMicros) {
  if (balanceMicros <= 0) {
    notice("wallet", "Your wallet is empty: Ava and the team cannot answer until it is topped up. See Wallet for how.", "warning");
  } else {
    clear("wallet");
  }
  document.dispatchEvent(new CustomEvent("wallet-changed", { detail: balanceMicros }));
}

// Ava writing first (a wake note) while the app is in a background tab: a system
// notification, if the person allowed them (the Notes view asks).
function notifyIfAway(note) {
  if (document.visibilityState !== "hidden" || !("Notification" in window)) return;
  if (Notification.permission !== "granted") return;
  new Notification("Ava", { body: note.preview || note.text, tag: `note-${note.id}` });
}

async function signOut() {
  state.live?.stop();
  await endSession();
  location.hash = "";
  location.reload();
}

async function start(me) {
  state.me = me;
  clear("signin");
  $("signin-view").hidden = true;
  $("shell").hidden = false;
  $("me").textContent = `Signed in as ${me.name}`;
  const { agents } = await api("GET", "/v1/agents");
  state.team = new Map(agents.map((a) => [a.name, a]));
  const thread = new Thread({ members: () => state.team, onWallet: walletChanged });
  state.thread = thread;
  state.live = new Live({
    onEvent: (type, data) => {
      thread.event(type, data);
      if (type === "reminder.delivered") notifyIfAway(data);
      document.dispatchEvent(new CustomEvent("live", { detail: { type, data } }));
    },
    onLost: () => notice("connection", "The connection to the server was lost. Reconnecting…", "warning"),
    onRecovered: async () => {
      notice("connection", "Connected again.", "ok", { timeoutMs: 4000 });
      await thread.catchUp().catch(() => {});
      await thread.retryNow();
    },
  });
  state.live.start();
  await state.live.ready; // listening before reading, so nothing falls between the two
  await thread.loadLatest();
  const wallet = await api("GET", "/v1/wallet");
  if (wallet.balance_micros <= 0) walletChanged(wallet.balance_micros);
  document.body.dataset.ready = "true";
  await route();
}

async function route() {
  if (state.me === null) return;
  const name = location.hash.replace(/^#\/?/, "") || "chat";
  const view = VIEWS.includes(name) ? name : "chat";
  for (const section of document.querySelectorAll("[data-view]")) section.hidden = section.dataset.view !== view;
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (view === "chat") return;
  try {
    if (!state.views.has(view)) {
      const module = await LOADERS[view]();
      state.views.set(view, module);
      module.setup?.(state);
    }
    await state.views.get(view).show(state);
  } catch (error) {
    notice(`view-${view}`, `${error instanceof Problem ? "" : "Could not open this view: "}${error.message}`);
  }
}

async function finishLinking() {
  // The OAuth provider sent the browser back here: finish linking, then show the links.
  const match = /^\/link\/([a-z_]+)\/callback$/.exec(location.pathname);
  if (!match) return;
  const params = new URLSearchParams(location.search);
  history.replaceState(null, "", "/#/links");
  const code = params.get("code");
  const stateParam = params.get("state");
  if (!code || !stateParam) {
    notice("link", `Linking ${match[1]} was cancelled${params.get("error") ? `: ${params.get("error")}` : "."}`);
    return;
  }
  const { integrations } = await api("GET", "/v1/integrations").catch(() => ({ integrations: [] }));
  const named = integrations.find((i) => i.name === match[1])?.display_name ?? match[1];
  try {
    await api("POST", `/v1/integrations/${match[1]}/connection`, { code, state: stateParam });
    notice("link", `Linked ${named}; its specialist now uses your real account.`, "ok", { timeoutMs: 6000 });
  } catch (error) {
    notice("link", `Could not link ${named}: ${error.message}`);
  }
}

function compose() {
  const box = $("text");
  attachMentions(box, $("mentions"), () => [...state.team.values()]);
  const send = () => {
    const text = box.value.trim();
    if (!text) return;
    box.value = "";
    state.thread.send(text);
  };
  $("compose").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $("older").addEventListener("click", () => state.thread.loadOlder().catch((e) => notice("older", e.message)));
}

document.addEventListener("signed-out", () => {
  state.live?.stop();
  session.token = null;
  clearAll();
  $("shell").hidden = true;
  $("signin-view").hidden = false;
  notice("signin", "Your session has ended; please sign in again.", "warning");
});

document.addEventListener("DOMContentLoaded", async () => {
  $("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  compose();
  await prepareSignIn(start);
  if (session.token && state.me === null) {
    try {
      await finishLinking();
      await start(await api("GET", "/v1/me"));
    } catch (error) {
      if (!(error instanceof Problem && error.status === 401)) notice("start", `Could not start: ${error.message}`);
    }
  }
});
