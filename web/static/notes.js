// Notes: wake notes still to come (soonest first, each with a Cancel button) and recent past
// ones with what became of them (docs/http.md: GET /v1/reminders, DELETE /v1/reminders/{id}).

import { api, el, Problem, when } from "./api.js";
import { notice } from "./notices.js";

const $ = (id) => document.getElementById(id);
const PAST_LIMIT = 50;

function row(note, agentName, { cancellable }) {
  const due = `${note.due_local.replace("T", " ")} (${note.time_zone})`;
  const words = el("div", {}, el("div", { text: note.text }), el("div", { class: "detail", text: `${agentName(note.agent)} · ${due}` }));
  const item = el("li", { "data-note": note.id }, words);
  if (cancellable) {
    const cancel = el("button", { type: "button", class: "quiet", text: "Cancel" });
    cancel.setAttribute("aria-label", `Cancel the note: ${note.text}`);
    cancel.addEventListener("click", () => cancelNote(note, cancel));
    item.append(cancel);
  } else {
    const outcome = note.outcome ?? note.status;
    const delivered = note.delivered_at ? ` · ${when(note.delivered_at)}` : "";
    item.append(el("span", { class: "detail", text: `${outcome}${delivered}` }));
  }
  return item;
}

async function cancelNote(note, button) {
  button.disabled = true;
  try {
    await api("DELETE", `/v1/reminders/${note.id}`);
    notice("notes", `Cancelled: ${note.text}`, "ok", { timeoutMs: 5000 });
  } catch (error) {
    const why = error instanceof Problem && error.type === "reminder_not_pending" ? "it is no longer pending" : error.message;
    notice("notes", `Could not cancel the note: ${why}`);
  }
  await show(current);
  // The keyboard's place is kept: the next row's button, else the view's heading.
  const next = $("notes-upcoming").querySelector("button");
  if (next) next.focus();
  else $("notes-title").focus();
}

let current = null;

export async function show(state) {
  current = state;
  const name = (agent) => state.team.get(agent)?.display_name ?? agent;
  let notes;
  try {
    notes = await api("GET", `/v1/reminders?past_limit=${PAST_LIMIT}`);
  } catch (error) {
    if (error instanceof Problem && error.status === 404) {
      $("notes-upcoming").replaceChildren(el("li", { text: "This server does not deliver notes." }));
      return;
    }
    throw error;
  }
  const upcoming = notes.upcoming.map((n) => row(n, name, { cancellable: true }));
  const past = notes.past.map((n) => row(n, name, { cancellable: false }));
  $("notes-upcoming").replaceChildren(...(upcoming.length ? upcoming : [el("li", { text: "No notes to come. Ask Ava to remind you of something." })]));
  $("notes-past").replaceChildren(...(past.length ? past : [el("li", { text: "Nothing yet." })]));
}

export function setup() {
  $("notes-title").tabIndex = -1;
  const ask = $("notify");
  ask.hidden = !("Notification" in window) || Notification.permission !== "default";
  ask.addEventListener("click", async () => {
    const answer = await Notification.requestPermission();
    ask.hidden = true;
    if (answer !== "granted") notice("notify", "Notifications are off; notes still appear in the chat.", "warning", { timeoutMs: 6000 });
  });
  document.addEventListener("live", (event) => {
    if (event.detail.type === "reminder.delivered" && current && !$("view-notes").hidden) show(current);
  });
}
