// The editor works without JavaScript (every button posts the whole form and the server
// re-renders it); this only adds conveniences:
// - "+ Add ..." happens in place: the same POST is sent in the background and only the
//   section it changed is swapped in, so the page does not jump to the top;
// - "Remove this ..." hides the row at once (unticking it brings the row back);
// - picking another workload kind offers to re-apply that kind's defaults;
// - clicking "line N" beside a YAML error puts the cursor on that line.
(function () {
  "use strict";
  const form = document.getElementById("editor");
  if (!form) return;

  function readJSON(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : {};
  }

  // ------------------------------------------------------------------ add in place
  form.addEventListener("submit", function (event) {
    const button = event.submitter;
    if (form.dataset.plain || !button || !button.value || !button.value.startsWith("add:")) {
      return;
    }
    const section = button.closest("fieldset.section");
    if (!section || !window.fetch || !window.DOMParser) return;
    event.preventDefault();
    const body = new FormData(form, button);
    button.disabled = true;
    // Not form.action: the buttons are named "action", which shadows that property.
    fetch(form.getAttribute("action") || window.location.href, {
      method: "POST", body: body, credentials: "same-origin",
      headers: {"X-Requested-With": "fetch"},
    }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.text();
    }).then(function (html) {
      const page = new DOMParser().parseFromString(html, "text/html");
      const fresh = page.getElementById(section.id);
      if (!fresh) throw new Error("section missing");
      section.replaceWith(fresh);
      const rows = fresh.querySelectorAll(".row-card");
      const added = rows[rows.length - 1];
      if (added) {
        added.classList.add("just-added");
        added.scrollIntoView({block: "center"});
        const first = added.querySelector("input:not([type=hidden]), select");
        if (first) first.focus({preventScroll: true});
      }
    }).catch(function () {
      button.disabled = false;
      form.dataset.plain = "1";  // fall back to the plain POST the page always had
      form.requestSubmit(button);
    });
  });

  // -------------------------------------------------------------- remove in place
  function markRemoved(checkbox) {
    const row = checkbox.closest(".row-card");
    if (row) row.classList.toggle("removing", checkbox.checked);
  }
  form.addEventListener("change", function (event) {
    const target = event.target;
    if (target.matches(".row-card .remove input[type=checkbox]")) markRemoved(target);
  });
  form.querySelectorAll(".row-card .remove input[type=checkbox]").forEach(markRemoved);

  // ------------------------------------------------------ a kind's defaults, asked
  const defaults = readJSON("kind-defaults");
  const labels = readJSON("kind-labels");
  form.addEventListener("change", function (event) {
    const select = event.target;
    if (!select.matches("select[name^='workloads-'][name$='-kind']")) return;
    const values = defaults[select.value];
    if (!values) return;
    const label = labels[select.value] || select.value;
    if (!window.confirm("Apply the defaults of “" + label + "” to this workload? " +
                        "Its members, GPUs, times, checkpoint, recovery, controller " +
                        "and pod group are replaced; its name and class are kept.")) {
      return;
    }
    const prefix = select.name.slice(0, -"kind".length);
    Object.keys(values).forEach(function (field) {
      const input = form.elements.namedItem(prefix + field);
      if (!input || input === select) return;
      if (input.type === "checkbox") input.checked = values[field] === "True";
      else input.value = values[field];
    });
  });

  // ------------------------------------------------------------ YAML error lines
  const textarea = document.querySelector(".yaml-text textarea");
  if (!textarea) return;
  document.querySelectorAll(".yaml-errors a.line").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      const line = parseInt(link.dataset.line, 10);
      const lines = textarea.value.split("\n");
      let start = 0;
      for (let i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
      const end = start + (lines[line - 1] || "").length;
      textarea.focus();
      textarea.setSelectionRange(start, end);
      const lineHeight = textarea.scrollHeight / Math.max(lines.length, 1);
      textarea.scrollTop = Math.max(0, (line - 5) * lineHeight);
    });
  });
})();
