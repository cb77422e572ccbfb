// The review lists' keys and selection. The buttons they press work without this file.
//   j/k move, a approve, r reject, e edit (focus in its text), p pin, x select, u undo,
//   ? shows the keys, Escape cancels an edit or closes the keys.
(function () {
  "use strict";
  let current = -1;

  function rows() {
    return Array.from(document.querySelectorAll("tr[data-memory], tr[data-pair]"));
  }

  function announce(row) {
    const live = document.getElementById("current-row");
    if (!live || !row) return;
    const text = row.querySelector("td.content a, td.content");
    const state = row.querySelector(".status");
    live.textContent = `Memory ${row.dataset.memory || row.dataset.pair}` +
      `${state ? ", " + state.textContent.trim() : ""}: ` +
      `${text ? text.textContent.trim().slice(0, 160) : ""}`;
  }

  function focusRow(index) {
    const all = rows();
    all.forEach((row) => row.classList.remove("current"));
    if (!all.length) { current = -1; return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all[current].classList.add("current");
    all[current].scrollIntoView({ block: "nearest" });
    announce(all[current]);
  }

  function help() { return document.getElementById("shortcut-help"); }

  function selectionChanged() {
    const boxes = Array.from(document.querySelectorAll('input[name="ids"]'));
    const chosen = boxes.filter((box) => box.checked);
    boxes.forEach((box) => {
      const row = box.closest("tr");
      if (row) row.classList.toggle("selected", box.checked);
    });
    document.querySelectorAll("[data-selected-count]").forEach((count) => {
      count.textContent = String(chosen.length);
    });
    const all = document.querySelector("[data-select-all]");
    if (all) all.checked = boxes.length > 0 && chosen.length === boxes.length;
    // An error about an empty selection is out of date once something is selected.
    if (chosen.length) document.querySelectorAll(".message.selection").forEach((m) => m.remove());
  }

  document.addEventListener("keydown", (event) => {
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.key === "Escape") {
      const open = help();
      if (open && !open.hidden) { open.hidden = true; event.preventDefault(); return; }
      const cancel = document.querySelector("tr.editing a.button");
      if (cancel) { event.preventDefault(); cancel.click(); }
      return;
    }
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
    if (event.key === "?") {
      const open = help();
      if (open) { open.hidden = !open.hidden; event.preventDefault(); }
      return;
    }
    if (event.key === "u") {
      const undo = document.querySelector('#messages [data-key="u"]');
      if (undo) { event.preventDefault(); undo.click(); }
      return;
    }
    const all = rows();
    // A page of one item (a pair side by side): its keys act on the page.
    const page = document.querySelector("[data-page-keys]");
    if (!all.length && page) {
      const target = document.querySelector(`[data-key="${event.key}"]`);
      if (!target) return;
      event.preventDefault();
      if (target.matches("textarea, input")) target.focus(); else target.click();
      return;
    }
    if (!all.length) return;
    if (event.key === "j") { focusRow(current + 1); event.preventDefault(); return; }
    if (event.key === "k") { focusRow(current - 1); event.preventDefault(); return; }
    const row = all[current];
    if (!row) return;
    if (event.key === "x") {
      const box = row.querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; selectionChanged(); event.preventDefault(); }
      return;
    }
    const button = row.querySelector(`[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });

  // An edit row put in place takes the focus in its text; a row that left the list hands
  // the focus to the one that took its place; a refilled page starts with nothing selected.
  document.addEventListener("htmx:afterSettle", (event) => {
    const text = event.target && event.target.querySelector &&
      event.target.querySelector("tr.editing textarea, tr.editing input[type=text]");
    const editing = document.querySelector("tr.editing textarea");
    if (text) text.focus(); else if (editing && event.target.matches("tr.editing")) editing.focus();
    if (current >= 0 && !editing) focusRow(current);
    selectionChanged();
  });

  document.addEventListener("change", (event) => {
    if (event.target.matches("[data-select-all]")) {
      document.querySelectorAll('input[name="ids"]').forEach((box) => {
        box.checked = event.target.checked;
      });
    }
    if (event.target.matches('[data-select-all], input[name="ids"]')) selectionChanged();
  });

  // "Select all matching": the filter as htmx last left it in the address bar.
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-bulk-all]");
    if (!link) return;
    const query = new URLSearchParams(window.location.search);
    query.delete("page");
    const url = new URL(link.href, window.location.href);
    url.search = query.toString();
    link.href = url.toString();
  });
})();
