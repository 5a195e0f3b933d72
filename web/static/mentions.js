// `@` autocomplete of the team over the message box: an ARIA combobox whose list holds the
// members whose handle starts with what follows the @. Arrow keys move, Enter or Tab
// chooses, Escape closes; the mouse works too.

export function attachMentions(box, list, members) {
  let options = [];
  let active = -1;

  function query() {
    const before = box.value.slice(0, box.selectionStart);
    const match = /(^|\s)@([a-z0-9_]*)$/i.exec(before);
    return match ? match[2].toLowerCase() : null;
  }

  function close() {
    list.hidden = true;
    list.replaceChildren();
    options = [];
    active = -1;
    box.setAttribute("aria-expanded", "false");
    box.removeAttribute("aria-activedescendant");
  }

  function highlight(index) {
    active = index;
    [...list.children].forEach((item, i) => item.setAttribute("aria-selected", String(i === index)));
    if (index >= 0) box.setAttribute("aria-activedescendant", list.children[index].id);
  }

  function choose(member) {
    const at = box.selectionStart;
    const before = box.value.slice(0, at).replace(/@([a-z0-9_]*)$/i, `@${member.name} `);
    box.value = before + box.value.slice(at);
    box.selectionStart = box.selectionEnd = before.length;
    close();
    box.focus();
  }

  function update() {
    const typed = query();
    if (typed === null) return close();
    options = members().filter((m) => m.name.startsWith(typed));
    if (options.length === 0) return close();
    list.replaceChildren(
      ...options.map((member, i) => {
        const item = document.createElement("li");
        item.id = `mention-${member.name}`;
        item.setAttribute("role", "option");
        item.dataset.name = member.name;
        const handle = document.createElement("span");
        handle.textContent = `@${member.name}`;
        const domain = document.createElement("span");
        domain.className = "domain";
        domain.textContent = member.domain;
        item.append(handle, domain);
        item.addEventListener("mousedown", (event) => {
          event.preventDefault(); // keeps the focus in the box
          choose(options[i]);
        });
        return item;
      }),
    );
    list.hidden = false;
    box.setAttribute("aria-expanded", "true");
    highlight(0);
  }

  box.addEventListener("input", update);
  box.addEventListener("blur", () => setTimeout(close, 0));
  box.addEventListener("keydown", (event) => {
    if (list.hidden) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      highlight((active + step + options.length) % options.length);
    } else if ((event.key === "Enter" || event.key === "Tab") && active >= 0) {
      event.preventDefault();
      event.stopImmediatePropagation(); // Enter picks a name here; it does not send
      choose(options[active]);
    } else if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  });
}
