// Live events over Server-Sent Events (docs/http.md#live-events). The browser's EventSource
// reconnects by itself after a network error, sending Last-Event-ID; when the server
// refuses the stream instead (a restart answering 503, too many tabs), EventSource gives
// up, so we open a new one ourselves, resuming after the last id we saw (`after=`).

import { freshToken } from "./api.js";

const TYPES = ["message", "run.started", "run.finished", "wallet.changed", "reminder.delivered"];
const REOPEN_MIN_MS = 2000;
const REOPEN_MAX_MS = 30000;

export class Live {
  constructor({ onEvent, onLost, onRecovered }) {
    this.onEvent = onEvent;
    this.onLost = onLost;
    this.onRecovered = onRecovered;
    this.lastId = null;
    this.source = null;
    this.lost = false;
    this.timer = null;
    this.delayMs = REOPEN_MIN_MS;
    this.stopped = false;
    this.ready = new Promise((resolve) => (this.opened = resolve));
  }

  // Each opening asks for the token afresh: a Firebase ID token lasts an hour.
  async start() {
    const token = await freshToken();
    if (this.stopped) return;
    const params = new URLSearchParams({ access_token: token });
    if (this.lastId !== null) params.set("after", String(this.lastId));
    const source = new EventSource(`/v1/events?${params}`);
    this.source = source;
    source.onopen = () => {
      this.delayMs = REOPEN_MIN_MS;
      document.body.dataset.live = "open";
      this.opened();
      if (this.lost) {
        this.lost = false;
        this.onRecovered();
      }
    };
    source.onerror = () => {
      document.body.dataset.live = "lost";
      if (!this.lost) {
        this.lost = true;
        this.onLost();
      }
      if (source.readyState === EventSource.CLOSED && this.source === source) this.reopenLater();
    };
    for (const type of TYPES) {
      source.addEventListener(type, (event) => {
        if (this.source !== source) return;
        this.lastId = Number(event.lastEventId);
        this.onEvent(type, JSON.parse(event.data));
      });
    }
  }

  reopenLater() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.start(), this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, REOPEN_MAX_MS);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.source?.close();
    this.source = null;
  }
}
