// Live progress on the run page: poll the small status endpoint until the run ends,
// then reload once to show its results (or its error). Plain JS, no library.
(function () {
  "use strict";
  const section = document.getElementById("progress");
  if (!section || section.dataset.terminal === "true") return;
  const url = section.dataset.statusUrl;
  const percent = (x) => Math.round(x * 100) + "%";

  function render(status) {
    document.getElementById("run-status").textContent = status.status;
    document.getElementById("run-status").className = "badge " + status.status;
    document.getElementById("progress-overall").value = status.progress;
    document.getElementById("progress-overall-text").textContent = percent(status.progress);
    status.variants.forEach(function (variant, index) {
      const row = section.querySelector('[data-variant="' + index + '"]');
      if (!row) return;
      row.querySelector("progress").value = variant.progress;
      row.querySelector(".bar-value").textContent =
        variant.succeeded + "/" + variant.total + " · " + variant.status;
    });
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) {
        if (!status) { window.setTimeout(poll, 3000); return; }
        render(status);
        if (status.is_terminal) { window.location.reload(); return; }
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 500);
})();
