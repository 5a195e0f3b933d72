// Notices above every view: one per kind (a lost connection replaces itself with its
// recovery), read out by screen readers, dismissible with a button.
//
// The live regions are the two lists in the page from the start (index.html), never the
// notices themselves: a region added together with its words is often not read out, and
// a role on an <li> takes it out of its list (docs/webapp.md#accessibility). Problems go
// in the assertive list, news that all is well in the polite one.

const shown = new Map(); // key -> <li>

function listFor(kind) {
  return document.getElementById(kind === "ok" ? "notices-polite" : "notices-urgent");
}

export function notice(key, text, kind = "error", { timeoutMs = 0 } = {}) {
  clear(key);
  const item = document.createElement("li");
  item.className = kind;
  item.dataset.notice = key;
  const words = document.createElement("span");
  words.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "quiet";
  close.textContent = "Dismiss";
  close.setAttribute("aria-label", `Dismiss: ${text}`);
  close.addEventListener("click", () => clear(key, { refocus: true }));
  item.append(words, close);
  listFor(kind).append(item);
  shown.set(key, item);
  if (timeoutMs) setTimeout(() => shown.get(key) === item && clear(key), timeoutMs);
}

// `refocus`: the notice is dismissed from its own button, whose focus must not fall to
// the page's start: it moves to the next notice's button, else to the main content.
export function clear(key, { refocus = false } = {}) {
  const item = shown.get(key);
  shown.delete(key);
  if (!item) return;
  const hadFocus = refocus || item.contains(document.activeElement);
  item.remove();
  if (hadFocus) {
    const next = document.querySelector("#notices li button");
    if (next) next.focus();
    else document.getElementById("main").focus();
  }
}

export function clearAll() {
  for (const key of [...shown.keys()]) clear(key);
}

export function clearWhere(test) {
  for (const key of [...shown.keys()]) if (test(key)) clear(key);
}
