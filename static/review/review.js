// Keyboard shortcuts of the review lists: j/k move, a approve, r reject, e edit, p pin,
// x select. The buttons they press work without this file.
(function () {
  "use strict";
  let current = -1;

  function rows() {
    return Array.from(document.querySelectorAll("tr[data-memory], tr[data-pair]"));
  }

  function focusRow(index) {
    const all = rows();
    all.forEach((row) => row.classList.remove("current"));
    if (!all.length) { current = -1; return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all[current].classList.add("current");
    all[current].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", (event) => {
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
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
      if (box) { box.checked = !box.checked; event.preventDefault(); }
      return;
    }
    const button = row.querySelector(`[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });

  // A row that left the list hands the focus to the one that took its place.
  document.addEventListener("htmx:afterSettle", () => {
    if (current >= 0) focusRow(current);
  });

  document.addEventListener("change", (event) => {
    if (!event.target.matches("[data-select-all]")) return;
    document.querySelectorAll('input[name="ids"]').forEach((box) => {
      box.checked = event.target.checked;
    });
  });
})();
