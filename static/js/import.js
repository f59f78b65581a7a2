// The import page works without JavaScript (every format's QoS mapping is shown, each
// labelled); this only shows the mapping and the expected files of the chosen format.
(function () {
  "use strict";
  const select = document.querySelector("#import-form select[name='format']");
  if (!select) return;
  function show() {
    document.querySelectorAll("#import-form [data-format]").forEach(function (element) {
      // .grid sets display, which would win over the hidden attribute alone
      element.style.display = element.dataset.format === select.value ? "" : "none";
    });
    const anyMapping = document.querySelector(`.qos-map[data-format='${select.value}']`);
    document.getElementById("qos-map").style.display = anyMapping ? "" : "none";
  }
  select.addEventListener("change", show);
  show();
})();
