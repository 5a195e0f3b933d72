// Linked accounts: each integration in its sandbox or live, linked through the provider's
// consent page (the browser comes back to /link/{name}/callback, where the app finishes)
// or, for vendors that link by account id, with that id; and unlinked.

import { api, el, Problem, when } from "./api.js";
import { notice } from "./notices.js";

const $ = (id) => document.getElementById(id);
const STATUS_WORDS = { live: "Live: your real account", sandbox: "Sandbox: pretend devices and data", unavailable: "Linked, but this server cannot reach it now" };
let current = null;

async function link(integration) {
  if (integration.links_by === "account_id") return; // the form beside it does this
  try {
    const { url } = await api("GET", `/v1/integrations/${integration.name}/auth-url`);
    location.assign(url);
  } catch (error) {
    notice("link", `Could not link ${integration.display_name}: ${error.message}`);
  }
}

async function linkByAccount(integration, input) {
  try {
    await api("POST", `/v1/integrations/${integration.name}/connection`, { account_id: input.value.trim() });
    notice("link", `Linked ${integration.display_name}.`, "ok", { timeoutMs: 5000 });
  } catch (error) {
    notice("link", `Could not link ${integration.display_name}: ${error.message}`);
  }
  await show(current);
}

async function unlink(integration) {
  try {
    await api("DELETE", `/v1/integrations/${integration.name}/connection`);
    notice("link", `Unlinked ${integration.display_name}; ${integration.display_name} is back in its sandbox.`, "ok", { timeoutMs: 5000 });
  } catch (error) {
    notice("link", `Could not unlink ${integration.display_name}: ${error.message}`);
  }
  await show(current);
}

function row(integration, agentName) {
  const since = integration.linked_at ? ` · linked ${when(integration.linked_at)}` : "";
  const words = el("div", {},
    el("div", { text: `${integration.display_name} (${agentName(integration.agent)})` }),
    el("div", { class: "detail", text: `${STATUS_WORDS[integration.status] ?? integration.status}${since}` }));
  const item = el("li", { "data-integration": integration.name, "data-status": integration.status }, words);
  if (integration.linked) {
    const button = el("button", { type: "button", class: "quiet", text: "Unlink" });
    button.setAttribute("aria-label", `Unlink ${integration.display_name}`);
    button.addEventListener("click", () => unlink(integration));
    item.append(button);
  } else if (integration.can_link && integration.links_by === "account_id") {
    const id = `account-${integration.name}`;
    const input = el("input", { id, maxLength: 64, required: true });
    const form = el("form", {}, el("label", { htmlFor: id, text: "Account id " }), input, el("button", { type: "submit", text: "Link" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      linkByAccount(integration, input);
    });
    item.append(form);
  } else if (integration.can_link) {
    const button = el("button", { type: "button", text: "Link" });
    button.setAttribute("aria-label", `Link ${integration.display_name}`);
    button.addEventListener("click", () => link(integration));
    item.append(button);
  } else {
    item.append(el("span", { class: "detail", text: "Not configured on this server" }));
  }
  return item;
}

export async function show(state) {
  current = state;
  const name = (agent) => state.team.get(agent)?.display_name ?? agent;
  try {
    const { integrations } = await api("GET", "/v1/integrations");
    $("integrations").replaceChildren(...integrations.map((i) => row(i, name)));
  } catch (error) {
    if (!(error instanceof Problem && error.status === 404)) throw error;
    $("integrations").replaceChildren(el("li", { text: "This server has no integrations." }));
  }
}
