// Devices: the speakers paired to this person, each with a Remove button, and pairing a new
// one by the code it shows (docs/http.md#devices: POST /v1/devices/pair, GET /v1/devices,
// DELETE /v1/devices/{id}). A removed speaker's live call ends at once.

import { api, el, Problem, when } from "./api.js";
import { notice } from "./notices.js";

const $ = (id) => document.getElementById(id);

// The app's own words for a refused code: the server's detail is written for developers,
// and a wrong, used and expired code are one answer on purpose (docs/http.md#devices), so
// the sentence names every likely cause and what to do about it.
const PAIRING_REFUSED = {
  pairing_code_invalid:
    "no speaker is waiting with that code. Check it against the code the speaker shows now; a code lasts only a few minutes, so if it has changed or gone, start pairing again on the speaker.",
  pairing_code_burnt:
    "that speaker's code was typed wrongly too many times, so it no longer works, even typed right. Start pairing again on the speaker and type the new code it shows.",
  rate_limited: "too many wrong codes were typed. Wait a few minutes, then try again with the code the speaker shows.",
  too_many_devices: "you have as many speakers as you may pair. Remove one below, then try the same code again.",
};

export function pairingRefused(error) {
  return (error instanceof Problem && PAIRING_REFUSED[error.type]) || error.message;
}

function row(device) {
  const seen = device.last_seen_at ? `last used ${when(device.last_seen_at)}` : "not used yet";
  const state = device.paired ? seen : "waiting for the speaker to collect its key";
  const words = el("div", {}, el("div", { text: device.name }), el("div", { class: "detail", text: `Paired ${when(device.created_at)} · ${state}` }));
  const remove = el("button", { type: "button", class: "quiet", text: "Remove" });
  remove.setAttribute("aria-label", `Remove the device: ${device.name}`);
  remove.addEventListener("click", () => removeDevice(device, remove));
  return el("li", { "data-device": device.id }, words, remove);
}

async function removeDevice(device, button) {
  button.disabled = true;
  try {
    await api("DELETE", `/v1/devices/${device.id}`);
    notice("devices", `Removed ${device.name}: it can no longer call.`, "ok", { timeoutMs: 5000 });
  } catch (error) {
    notice("devices", `Could not remove ${device.name}: ${error.message}`);
  }
  await show();
  // The keyboard's place is kept: the next row's button, else the view's heading.
  const next = $("devices-list").querySelector("button");
  if (next) next.focus();
  else $("devices-title").focus();
}

async function pair(event) {
  event.preventDefault();
  const input = $("pair-code");
  const code = input.value.trim();
  if (!code) return;
  try {
    const device = await api("POST", "/v1/devices/pair", { code });
    input.value = "";
    notice("devices", `Paired ${device.name}.`, "ok", { timeoutMs: 5000 });
  } catch (error) {
    notice("devices", `Could not pair: ${pairingRefused(error)}`);
  }
  await show();
}

export async function show() {
  const { devices } = await api("GET", "/v1/devices");
  $("devices-list").replaceChildren(...(devices.length ? devices.map(row) : [el("li", { text: "No speakers paired yet." })]));
}

export function setup() {
  $("devices-title").tabIndex = -1;
  $("pair-form").addEventListener("submit", pair);
}
