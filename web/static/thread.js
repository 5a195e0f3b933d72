// The group chat: the thread paged by seq, live messages, who is working, and sending.
//
// Sending never writes a message twice: each message gets a client id before its first
// attempt, and every retry repeats that id, which the server answers with what the first
// attempt wrote instead of running anything again (docs/http.md#idempotency). A send
// whose answer was lost is retried only once the server is reachable again, and the
// message stays marked unconfirmed until the server's answer (or the live event carrying
// it) says it is in the thread.
//
// A send the server refused outright (an empty wallet, a text it will not take) stays in
// the thread marked "Not sent" with a Send again button that repeats the same client id,
// so however often it is pressed the thread holds the message once. After a top-up the
// messages the empty wallet stopped say so and their button becomes the main kind
// (docs/webapp.md#how-the-chat-keeps-its-promises).

import { api, emotionWord, el, Problem, Unreachable, when, withoutTags } from "./api.js";
import { clear, clearWhere, notice } from "./notices.js";

const PAGE = 50;
const CATCH_UP_PAGE = 200;
const ATTEMPTS_MAX = 8;
const RETRY_MS = 3000;
const HUMAN = "human";

function clientId() {
  // crypto.randomUUID needs a secure context; a server on the local network is not one.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `web-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export class Thread {
  constructor({ members, onWallet }) {
    this.list = document.getElementById("thread");
    this.working = document.getElementById("working");
    this.olderButton = document.getElementById("older");
    this.members = members; // () -> Map of handle -> member
    this.onWallet = onWallet;
    this.nodes = new Map(); // message id -> <li>
    this.pending = []; // sends not yet confirmed, oldest first
    this.runs = new Map(); // run id -> agent, while running
    this.oldest = null;
    this.newest = 0;
    this.retryTimer = null;
    this.walletRuns = new Set(); // notice keys of runs stopped by an empty wallet
    this.unsent = []; // sends the server refused, shown with Send again
  }

  nameOf(author) {
    if (author === HUMAN) return "You";
    return this.members().get(author)?.display_name ?? author.charAt(0).toUpperCase() + author.slice(1);
  }

  // --- reading -------------------------------------------------------------------------

  async loadLatest() {
    const page = await api("GET", `/v1/messages?limit=${PAGE}`);
    page.messages.forEach((m) => this.add(m));
    this.olderButton.hidden = !page.has_more;
    this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }

  async loadOlder() {
    if (this.oldest === null) return;
    const height = document.documentElement.scrollHeight;
    const page = await api("GET", `/v1/messages?before=${this.oldest}&limit=${PAGE}`);
    page.messages.forEach((m) => this.add(m));
    this.olderButton.hidden = !page.has_more;
    window.scrollBy(0, document.documentElement.scrollHeight - height); // the reader stays put
  }

  // After a lost connection: whatever the thread gained meanwhile, whether or not the
  // event stream could resume where it stopped.
  async catchUp() {
    for (;;) {
      const page = await api("GET", `/v1/messages?after=${this.newest}&limit=${CATCH_UP_PAGE}`);
      page.messages.forEach((m) => this.add(m));
      if (!page.has_more || page.messages.length === 0) return;
    }
  }

  add(message) {
    if (this.nodes.has(message.id)) return;
    let node = null;
    if (message.author === HUMAN) {
      // Our own send, seen before its answer: the unconfirmed bubble becomes the message.
      const mine = this.pending.find((p) => p.id === message.id || (p.id === null && p.text === message.text));
      if (mine) {
        mine.id = message.id;
        node = mine.node;
      }
    }
    node = this.render(message, node);
    this.nodes.set(message.id, node);
    this.place(node, message.seq);
    performance.mark("avagenc:shown", { detail: message.id }); // read by the speed figures
    this.oldest = this.oldest === null ? message.seq : Math.min(this.oldest, message.seq);
    this.newest = Math.max(this.newest, message.seq);
  }

  render(message, reuse) {
    const node = reuse ?? el("li");
    node.className = `msg${message.author === HUMAN ? " mine" : ""}`;
    node.dataset.id = message.id;
    node.dataset.seq = String(message.seq);
    node.dataset.author = message.author;
    const parts = [el("span", { class: "who", text: this.nameOf(message.author) })];
    for (const emotion of message.emotions ?? []) {
      parts.push(el("span", { class: "emotion", text: emotionWord(emotion) }));
    }
    parts.push(this.words(withoutTags(message.text)));
    const meta = `${when(message.created_at)}${message.channel === "voice" ? " · on a call" : ""}`;
    parts.push(el("span", { class: "meta", text: meta }));
    node.replaceChildren(...parts);
    return node;
  }

  words(text) {
    const span = el("span", { class: "text" });
    for (const piece of text.split(/(@[a-z][a-z0-9_]*)/gi)) {
      const known = piece.startsWith("@") && this.members().has(piece.slice(1).toLowerCase());
      span.append(known ? el("span", { class: "mention", text: piece }) : piece);
    }
    return span;
  }

  place(node, seq) {
    // In seq order; unconfirmed sends stay at the end.
    for (const other of this.list.children) {
      if (other === node) continue;
      const otherSeq = other.dataset.seq === undefined ? Infinity : Number(other.dataset.seq);
      if (otherSeq > seq) {
        this.list.insertBefore(node, other);
        return;
      }
    }
    this.list.append(node);
    if (this.list.lastElementChild === node) node.scrollIntoView({ block: "nearest" });
  }

  // After forget me: the thread starts afresh.
  clearAll() {
    this.list.replaceChildren();
    this.nodes.clear();
    this.oldest = null;
    this.newest = 0;
    this.olderButton.hidden = true;
  }

  // --- live ----------------------------------------------------------------------------

  event(type, data) {
    if (type === "message") this.add(data);
    else if (type === "run.started") this.started(data);
    else if (type === "run.finished") this.finished(data);
    else if (type === "wallet.changed") this.walletChanged(data.balance_micros);
  }

  // A top-up answers the runs an empty wallet stopped: their notices go with the wallet's
  // own. A run that failed for another reason keeps its notice.
  walletChanged(balanceMicros) {
    if (balanceMicros > 0) {
      clearWhere((key) => this.walletRuns.has(key));
      this.walletRuns.clear();
      for (const item of this.unsent.filter((u) => u.emptyWallet)) {
        item.node.querySelector(".meta").textContent = "Not sent: the wallet was empty. It has been topped up: send it again?";
        item.node.querySelector("button.again")?.classList.remove("quiet");
      }
    }
    this.onWallet(balanceMicros);
  }

  started(run) {
    this.runs.set(run.id, run.agent);
    this.showWorking();
  }

  finished(run) {
    this.runs.delete(run.id);
    this.showWorking();
    if (run.status === "failed") {
      const why = run.error?.detail ? ` ${run.error.detail}` : "";
      if (run.error?.type === "insufficient_balance") this.walletRuns.add(`run-${run.id}`);
      notice(`run-${run.id}`, `${this.nameOf(run.agent)} could not finish.${why} Your message is kept; you can ask again.`);
    }
  }

  showWorking() {
    const names = [...new Set(this.runs.values())].map((a) => this.nameOf(a));
    if (names.length === 0) this.working.textContent = "";
    else if (names.length === 1) this.working.textContent = `${names[0]} is working…`;
    else this.working.textContent = `${names.slice(0, -1).join(", ")} and ${names.at(-1)} are working…`;
  }

  // --- sending -------------------------------------------------------------------------

  async send(text) {
    const node = el("li", { class: "msg mine pending" });
    const item = { clientId: clientId(), text, node, id: null, attempts: 0 };
    node.dataset.clientId = item.clientId;
    node.append(el("span", { class: "who", text: "You" }), this.words(text), el("span", { class: "meta", text: "Sending…" }));
    this.list.append(node);
    node.scrollIntoView({ block: "nearest" });
    this.pending.push(item);
    await this.deliver(item);
  }

  async deliver(item) {
    item.attempts += 1;
    try {
      const turn = await api("POST", "/v1/messages", { text: item.text, client_id: item.clientId });
      this.confirmed(item, turn);
    } catch (error) {
      this.refused(item, error);
    }
  }

  confirmed(item, turn) {
    this.pending = this.pending.filter((p) => p !== item);
    const mine = turn.messages.find((m) => m.author === HUMAN);
    if (mine && !this.nodes.has(mine.id)) {
      item.id = mine.id;
      this.nodes.set(mine.id, this.render(mine, item.node));
      this.place(item.node, mine.seq);
      this.newest = Math.max(this.newest, mine.seq);
      this.oldest = this.oldest === null ? mine.seq : Math.min(this.oldest, mine.seq);
    } else if (!mine) {
      item.node.remove(); // cannot happen: a turn always starts with the person's words
    }
    item.node.classList.remove("pending");
    performance.mark("avagenc:confirmed", { detail: item.clientId });
    turn.messages.forEach((m) => this.add(m));
    turn.runs.filter((r) => r.status === "failed").forEach((r) => this.finished(r));
    clear("send");
  }

  refused(item, error) {
    const meta = item.node.querySelector(".meta");
    const uncertain = error instanceof Unreachable || (error instanceof Problem && error.status >= 500);
    if (uncertain && item.attempts < ATTEMPTS_MAX) {
      // The server may have it already; the same client id makes the retry harmless.
      meta.textContent = "Not confirmed yet: trying again with the same message id…";
      this.retryLater();
      return;
    }
    this.pending = this.pending.filter((p) => p !== item);
    item.node.classList.replace("pending", "failed");
    item.emptyWallet = error instanceof Problem && error.type === "insufficient_balance";
    if (item.emptyWallet) {
      meta.textContent = "Not sent: the wallet is empty.";
      this.onWallet(0);
    } else {
      meta.textContent = `Not sent: ${error.message}`;
      notice("send", `Your message was not sent: ${error.message}`);
    }
    this.offerAgain(item);
  }

  // The refused message keeps its client id: sending it again can never write it twice.
  offerAgain(item) {
    this.unsent.push(item);
    const again = el("button", { type: "button", class: "quiet again", text: "Send again" });
    again.setAttribute("aria-label", `Send again: ${item.text.length > 80 ? `${item.text.slice(0, 80)}…` : item.text}`);
    again.addEventListener("click", () => this.sendAgain(item));
    item.node.append(again);
  }

  async sendAgain(item) {
    const had = item.node.contains(document.activeElement);
    this.unsent = this.unsent.filter((u) => u !== item);
    item.node.querySelector("button.again")?.remove();
    item.node.classList.replace("failed", "pending");
    item.node.querySelector(".meta").textContent = "Sending…";
    item.attempts = 0;
    clear("send");
    // The button went away under the focus: the keyboard goes on from the message box.
    if (had) document.getElementById("text").focus();
    this.pending.push(item);
    await this.deliver(item);
  }

  retryLater() {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.retryNow(), RETRY_MS);
  }

  // Also called when the live stream comes back: the server is reachable again.
  async retryNow() {
    clearTimeout(this.retryTimer);
    for (const item of [...this.pending]) {
      if (item.node.querySelector(".meta")?.textContent.startsWith("Not confirmed")) await this.deliver(item);
    }
  }
}
