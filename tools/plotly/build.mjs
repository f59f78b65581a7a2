// Builds static/vendor/plotly/plotly-lab.min.js from the pinned plotly.js sources
// (package.json): `make plotly-bundle`. The full plotly.min.js is 4.8 MB, and a
// first visit spent about a second compiling it; this one holds what we draw.
import { build } from "esbuild";
import { readFile, writeFile } from "node:fs/promises";

const here = new URL(".", import.meta.url);
const out = new URL("../../static/vendor/plotly/plotly-lab.min.js", here);
const version = JSON.parse(
  await readFile(new URL("node_modules/plotly.js/package.json", here), "utf8"),
).version;
// Every chart is cartesian and draws these; scatter comes with the core (the axes,
// hover, the toolbar and its image export). Keep it equal to BUNDLED_TRACES in
// experiments/charts/style.py (a test compares this file's header with it).
const traces = ["scatter", "bar", "heatmap"];
const entry =
  'var Plotly = require("plotly.js/lib/core");\n' +
  `Plotly.register([${traces
    .filter((t) => t !== "scatter")
    .map((t) => `require("plotly.js/lib/${t}")`)
    .join(", ")}]);\n` +
  "module.exports = Plotly;\n";

const result = await build({
  stdin: { contents: entry, resolveDir: here.pathname, sourcefile: "plotly-lab.js" },
  bundle: true,
  minify: true,
  write: false,
  format: "iife",
  globalName: "Plotly",
  target: "es2016",
  legalComments: "none",
  // As plotly.js's own build (its esbuild-config.js): browser globals, no AMD.
  define: { global: "window", "define.amd": "false", "process.env.NODE_DEBUG": "false" },
  // The only stylesheet required is maplibre's, for map traces we do not bundle.
  loader: { ".css": "empty" },
  logLevel: "warning",
});
const header =
  `/**\n* plotly.js v${version} (Disruption Lab bundle: ${traces.join(", ")})\n` +
  "* Copyright 2012-2026, Plotly, Inc. All rights reserved.\n" +
  "* Licensed under the MIT license\n*/\n";
await writeFile(out, header + result.outputFiles[0].text);
console.log(`${out.pathname}: ${(header.length + result.outputFiles[0].contents.length).toLocaleString()} bytes`);
