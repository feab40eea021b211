// chainrag view: shows one view at a time (#overview, #questions, #q-N), filters the list of
// questions, and points from a node of a walk's picture to its sentence. No network.
(function () {
  "use strict";
  document.body.classList.add("js");
  const views = Array.from(document.querySelectorAll("section.view"));
  const rows = Array.from(document.querySelectorAll("#question-list tr.qrow"));
  const field = (id) => document.getElementById(id);

  function show() {
    const id = decodeURIComponent(location.hash.slice(1)) || "overview";
    const target = document.getElementById(id);
    const view = target && target.closest("section.view") ? target.closest("section.view") : field("overview");
    views.forEach((v) => v.classList.toggle("shown", v === view));
    if (view && view !== target && target) target.scrollIntoView();
    else window.scrollTo(0, 0);
  }

  function results(row) {
    if (!row._results) row._results = JSON.parse(row.dataset.results || "{}");
    return row._results;
  }

  function rightOf(score) { return score !== undefined && score[0] === 1; }

  function keep(row, f) {
    if (f.dataset && row.dataset.dataset !== f.dataset) return false;
    const res = results(row);
    if (f.method && !(f.method in res)) return false;
    if (f.outcome) {
      const scores = f.method ? [res[f.method]] : Object.values(res);
      const want = f.outcome === "right";
      if (!scores.some((s) => rightOf(s) === want)) return false;
    }
    if (f.method && f.versus) {
      if (!(f.versus in res)) return false;
      if (rightOf(res[f.method]) === rightOf(res[f.versus])) return false;
    }
    if (f.text && row.dataset.text.indexOf(f.text) < 0) return false;
    return true;
  }

  function filter() {
    const f = {
      dataset: field("f-dataset").value,
      method: field("f-method").value,
      outcome: field("f-outcome").value,
      versus: field("f-versus").value,
      text: field("f-text").value.trim().toLowerCase(),
    };
    let shown = 0;
    rows.forEach((row) => {
      const on = keep(row, f);
      row.hidden = !on;
      if (on) shown += 1;
      row.querySelectorAll(".chip").forEach((chip) => {
        const m = chip.dataset.method;
        const focus = m === f.method || m === f.versus;
        chip.classList.toggle("focus", Boolean(f.method) && focus);
        chip.classList.toggle("dim", Boolean(f.method) && !focus);
      });
    });
    let note = shown + " of " + rows.length + " questions";
    if (f.versus && !f.method) note += " (choose a method to compare with)";
    field("f-count").textContent = note;
  }

  function pointAt(node) {
    const unit = node.getAttribute("data-unit");
    const box = node.closest("details.method");
    if (!box || unit === null) return;
    const line = box.querySelector('li.unit[data-unit="' + unit + '"]');
    if (!line) return;
    const fold = line.closest("details.more");
    if (fold) fold.open = true;
    line.classList.add("flash");
    line.scrollIntoView({ block: "center" });
    setTimeout(() => line.classList.remove("flash"), 1600);
  }

  ["f-dataset", "f-method", "f-outcome", "f-versus"].forEach((id) => field(id).addEventListener("change", filter));
  field("f-text").addEventListener("input", filter);
  field("filters").addEventListener("submit", (e) => e.preventDefault());
  rows.forEach((row) => row.addEventListener("click", (e) => {
    if (e.target.tagName !== "A") location.hash = row.dataset.target;
  }));
  document.querySelectorAll("svg.walk g.node").forEach((node) => node.addEventListener("click", () => pointAt(node)));
  window.addEventListener("hashchange", show);
  filter();
  show();
})();
