// Notices above every view: one per kind (a lost connection replaces itself with its
// recovery), read out by screen readers, dismissible with a button.

const shown = new Map(); // key -> <li>

export function notice(key, text, kind = "error", { timeoutMs = 0 } = {}) {
  clear(key);
  const item = document.createElement("li");
  item.className = kind;
  item.dataset.notice = key;
  item.setAttribute("role", kind === "ok" ? "status" : "alert");
  const words = document.createElement("span");
  words.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "quiet";
  close.textContent = "Dismiss";
  close.setAttribute("aria-label", `Dismiss: ${text}`);
  close.addEventListener("click", () => clear(key));
  item.append(words, close);
  document.getElementById("notices").append(item);
  shown.set(key, item);
  if (timeoutMs) setTimeout(() => shown.get(key) === item && clear(key), timeoutMs);
}

export function clear(key) {
  shown.get(key)?.remove();
  shown.delete(key);
}

export function clearAll() {
  for (const key of [...shown.keys()]) clear(key);
}
