// Pages whose figures arrive whole as Plotly JSON built on the server (the placement
// study: experiments/charts/study.py; the checkpoint planner: experiments/charts/
// planner.py) from the core's numbers: this only draws them with the plotly.js the app
// serves. The script tag names its JSON (data-figures="<id>"): an object of figures by
// the name each chart's element carries in data-chart. One small file for both pages,
// so a fix to how they draw or report lands once; the run page's many charts have their
// own loader (charts.js). <html data-charts-ready="true"> is set once drawn (the browser
// tests wait for it); data-charts-error says what failed.
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false,
                   toImageButtonOptions: { format: "png", scale: 2 },
                   modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  const source = document.currentScript && document.currentScript.dataset.figures;

  function done(error) {
    if (error) document.documentElement.dataset.chartsError = String(error);
    document.documentElement.dataset.chartsReady = "true";
  }

  function start() {
    const script = source && document.getElementById(source);
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
