// Forget me: one confirmed action erasing the thread, what Ava learned and pending notes
// (docs/data.md#forgetting); the wallet's money history stays.

import { api } from "./api.js";
import { notice } from "./notices.js";

const $ = (id) => document.getElementById(id);

export function show() {}

export function setup(state) {
  const dialog = $("forget-dialog");
  $("forget").addEventListener("click", () => dialog.showModal());
  dialog.addEventListener("close", async () => {
    if (dialog.returnValue !== "forget") return;
    try {
      await api("DELETE", "/v1/knowledge");
      state.thread.clearAll();
      notice("forget", "Everything Ava knew about you has been forgotten. Your wallet is unchanged.", "ok");
    } catch (error) {
      notice("forget", `Nothing was forgotten: ${error.message}`);
    }
  });
}
