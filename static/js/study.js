// The placement study's charts: each figure arrives as Plotly JSON built on the server
// (experiments/charts/study.py, from the core's numbers); this only draws them with the
// plotly.js the app serves. <html data-charts-ready="true"> is set once drawn (the
// browser test waits for it); data-charts-error says what failed.
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false,
                   toImageButtonOptions: { format: "png", scale: 2 },
                   modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  function done(error) {
    if (error) document.documentElement.dataset.chartsError = String(error);
    document.documentElement.dataset.chartsReady = "true";
  }

  function start() {
    const script = document.getElementById("study-data");
    if (!script) { done(); return; }
    if (typeof Plotly === "undefined") { done("plotly.js did not load"); return; }
    const figures = JSON.parse(script.textContent);
    const drawn = [];
    document.querySelectorAll("[data-chart]").forEach(function (element) {
      const figure = figures[element.dataset.chart];
      if (figure) drawn.push(Plotly.react(element, figure.data, figure.layout, CONFIG));
    });
    Promise.all(drawn).then(function () { done(); }, done);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
