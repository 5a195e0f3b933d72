// The wallet: the balance, today's usage by agent (added up from today's charges, whose
// receipts name the agent and the tokens), the entries newest first, and, when it is empty, how to top
// up (docs/money.md).

import { api, el, rupiah, when } from "./api.js";

const $ = (id) => document.getElementById(id);
// Today's usage is added up from the first page, which holds a day's charges unless a
// person makes more than 200 model calls in a day.
const PAGE = 200;
let current = null;
let nextBefore = null;

function isToday(iso) {
  const day = new Date(iso);
  const now = new Date();
  return day.getFullYear() === now.getFullYear() && day.getMonth() === now.getMonth() && day.getDate() === now.getDate();
}

function entryRow(entry, agentName) {
  const receipt = entry.receipt ?? {};
  const what = receipt.agent ? `${agentName(receipt.agent)}: a model call` : entry.type.replaceAll("_", " ");
  const amount = el("span", {
    class: entry.amount_micros >= 0 ? "amount-in" : "amount-out",
    text: `${entry.amount_micros >= 0 ? "+" : "−"}${rupiah(Math.abs(entry.amount_micros))}`,
  });
  return el("li", {}, el("div", {}, el("div", { text: what }), el("div", { class: "detail", text: when(entry.created_at) })), amount);
}

function usageRows(entries, agentName) {
  const byAgent = new Map();
  for (const entry of entries) {
    const agent = entry.receipt?.agent;
    if (!agent || !isToday(entry.created_at) || entry.amount_micros >= 0) continue;
    const sum = byAgent.get(agent) ?? { runs: new Set(), tokens: 0, micros: 0 };
    if (entry.receipt.run_id) sum.runs.add(entry.receipt.run_id);
    for (const [kind, count] of Object.entries(entry.receipt.tokens ?? {})) {
      if (!kind.startsWith("cached")) sum.tokens += Number(count); // cached input is part of input
    }
    sum.micros += -entry.amount_micros;
    byAgent.set(agent, sum);
  }
  if (byAgent.size === 0) return [el("tr", {}, el("td", { colSpan: 4, text: "Nothing used today." }))];
  return [...byAgent].map(([agent, sum]) =>
    el("tr", { "data-agent": agent },
      el("td", { text: agentName(agent) }),
      el("td", { text: String(sum.runs.size) }),
      el("td", { text: sum.tokens.toLocaleString() }),
      el("td", { text: rupiah(sum.micros) })),
  );
}

export async function show(state) {
  current = state;
  const name = (agent) => state.team.get(agent)?.display_name ?? agent;
  const [wallet, page] = await Promise.all([api("GET", "/v1/wallet"), api("GET", `/v1/wallet/entries?limit=${PAGE}`)]);
  $("balance").textContent = rupiah(wallet.balance_micros);
  $("wallet-empty").hidden = wallet.balance_micros > 0;
  $("usage").tBodies[0].replaceChildren(...usageRows(page.entries, name));
  $("entries").replaceChildren(...page.entries.map((e) => entryRow(e, name)));
  nextBefore = page.next_before;
  $("entries-more").hidden = nextBefore === null;
}

async function more() {
  const name = (agent) => current.team.get(agent)?.display_name ?? agent;
  const page = await api("GET", `/v1/wallet/entries?before=${nextBefore}&limit=${PAGE}`);
  $("entries").append(...page.entries.map((e) => entryRow(e, name)));
  nextBefore = page.next_before;
  $("entries-more").hidden = nextBefore === null;
}

export function setup() {
  $("entries-more").addEventListener("click", () => more());
  document.addEventListener("wallet-changed", () => {
    if (current && !$("view-wallet").hidden) show(current);
  });
}
