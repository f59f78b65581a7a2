// The checkpoint planner's chart: the figure arrives as Plotly JSON built on the server
// (experiments/charts/planner.py); this only draws it with the plotly.js the app serves.
// <html data-charts-ready="true"> is set once drawn (the browser test waits for it);
// data-charts-error says what failed.
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
    const script = document.getElementById("planner-data");
    const element = document.getElementById("chart-planner");
    if (!script || !element) { done(); return; }
    if (typeof Plotly === "undefined") { done("plotly.js did not load"); return; }
    const figure = JSON.parse(script.textContent);
    Plotly.react(element, figure.data, figure.layout, CONFIG).then(function () { done(); }, done);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
