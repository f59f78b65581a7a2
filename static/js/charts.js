// Charts of the run and compare pages. Figures arrive as Plotly JSON built on the
// server (experiments/charts); this script only draws them with the plotly.js the app
// serves, and drives the timeline, workload table and event log from small JSON
// endpoints. Charts are drawn one per task, those in the viewport first and the rest
// when the main thread is idle (or when they scroll into view), as Grafana lazy-loads
// its panels: a page of a dozen large charts answers at once instead of after seconds
// of drawing. Two marks on <html>, in milliseconds since navigation began:
// data-charts-viewport-ms once every chart in the first viewport is drawn and the main
// thread is next idle, and data-charts-ready-ms with data-charts-ready="true" once every
// chart is drawn (the browser tests and the benchmark wait for these; data-charts-error
// says what failed).
(function () {
  "use strict";
  // Every chart's toolbar downloads it: PNG (Plotly's own camera) and SVG (ours, with
  // its own icon, a page with a folded corner marked "SVG": two cameras looked alike).
  const SVG_ICON = {
    width: 1000, height: 1000,
    path: "M150 50h500l200 200v700h-700zM600 100v200h200zM230 520h540v330h-540z" +
          "M270 560v250h460v-250zM300 610h80v30h-80zM300 730h80v30h-80zM460 610h80v150h-80zM580 610h90v150h-90z",
  };
  const SVG_BUTTON = {
    name: "Download plot as SVG", title: "Download plot as SVG",
    icon: SVG_ICON,
    click: function (gd) { window.Plotly.downloadImage(gd, { format: "svg", filename: gd.id || "chart" }); },
  };
  const CONFIG = { responsive: true, displaylogo: false, displayModeBar: true,
                   toImageButtonOptions: { format: "png", scale: 2 },
                   modeBarButtonsToAdd: [SVG_BUTTON],
                   modeBarButtonsToRemove: ["select2d", "lasso2d", "sendDataToCloud", "sendChartToCloud"] };
  function draw(element, figure) {
    if (!figure) { element.hidden = true; Plotly.purge(element); return Promise.resolve(); }
    element.hidden = false;
    element.style.minHeight = "";  // the space reserved for it (reserve): Plotly sizes it now
    const started = performance.now();
    const drawn = Plotly.react(element, figure.data, figure.layout, CONFIG).then(function (el) {
      titleTip(el);
      return el;
    });
    // How long each chart held the main thread: the benchmark names the slowest.
    (window.chartTimings = window.chartTimings || {})[element.id] = Math.round(performance.now() - started);
    return drawn;
  }

  // A metric chart's title carries the registry's definition, unit and direction on
  // hover (the template's data-tip), as an SVG <title> on the title text alone.
  function titleTip(element) {
    const tip = element.dataset.tip;
    if (!tip) return;
    const add = function () {
      const title = element.querySelector(".gtitle");
      if (!title || title.querySelector("title")) return;
      const node = document.createElementNS("http://www.w3.org/2000/svg", "title");
      node.textContent = tip;
      title.appendChild(node);
      title.style.pointerEvents = "all";
      title.style.cursor = "help";
    };
    if (!element.dataset.tipBound) {  // Plotly redraws the title on a resize
      element.dataset.tipBound = "1";
      element.on("plotly_afterplot", add);
    }
    add();
  }

  // ------------------------------------------------------------- the draw queue
  // First-time draws wait here: one chart per task, so input and paint run between
  // charts. A chart in (or about to enter) the viewport goes first, on the next task;
  // the others wait for an idle moment, in page order.
  const idle = window.requestIdleCallback || function (callback) { return window.setTimeout(callback, 1); };
  const queue = [];
  const queued = new Map();  // element -> the promise of its first draw
  const near = new Set();
  // The first viewport's charts keep their place even when one drawn above pushes
  // another out of view: the page waits for them before drawing anything off-screen.
  const pinned = new Set();
  function wanted(element) { return near.has(element) || pinned.has(element); }
  let scheduled = false;
  let viewportDone = false;  // off-screen charts wait until the first viewport is done
  const observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) near.add(entry.target); else near.delete(entry.target);
    });
    schedule();
  }, { rootMargin: "200px 0px" }) : null;

  function inViewport(element) {
    const box = element.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight && box.right > 0 && box.left < window.innerWidth;
  }

  function later(element, figure) {
    if (!figure) return draw(element, figure);
    const drawn = new Promise(function (resolve, reject) {
      queue.push({ element: element, figure: figure, resolve: resolve, reject: reject });
      if (observer) observer.observe(element);
      schedule();
    });
    queued.set(element, drawn);
    return drawn;
  }

  function reserve(root, figures) {
    // Each chart's box takes its figure's height before it is drawn: the page does not
    // jump as charts arrive, and the first viewport is known before any is drawn.
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      const figure = figures[el.dataset.chart];
      if (figure && figure.layout && figure.layout.height) el.style.minHeight = figure.layout.height + "px";
    });
  }

  function whenDrawn(elements) {
    return Promise.all(elements.map(function (el) { return queued.get(el) || Promise.resolve(); }));
  }

  function schedule() {
    if (scheduled || !queue.length) return;
    const urgent = queue.some(function (job) { return wanted(job.element); });
    if (!urgent && !viewportDone) return;
    scheduled = true;
    if (urgent) window.setTimeout(drawNext, 0); else idle(drawNext);
  }

  function drawNext() {
    scheduled = false;
    let index = queue.findIndex(function (job) { return wanted(job.element); });
    if (index < 0) index = 0;
    const job = queue.splice(index, 1)[0];
    if (!job) return;
    if (observer) observer.unobserve(job.element);
    near.delete(job.element);
    pinned.delete(job.element);
    let drawn;
    try { drawn = draw(job.element, job.figure); } catch (error) { drawn = Promise.reject(error); }
    drawn.then(job.resolve, job.reject).then(schedule, schedule);
  }

  function drawAll(root, figures, group, lazily) {
    // Charts of a group (the timeline) are drawn by their own controller.
    const selector = group ? '[data-chart][data-group="' + group + '"]' : "[data-chart]:not([data-group])";
    return Promise.all(Array.prototype.map.call(root.querySelectorAll(selector), function (el) {
      return (lazily ? later : draw)(el, figures[el.dataset.chart]);
    }));
  }

  function getJSON(url, params) {
    const query = new URLSearchParams(params).toString();
    return fetch(url + (query ? "?" + query : ""), {
      credentials: "same-origin", headers: { Accept: "application/json" },
    }).then(function (response) {
      if (!response.ok) throw new Error(url + " answered " + response.status);
      return response.json();
    });
  }

  function option(value, label, selected) {
    const el = document.createElement("option");
    el.value = value; el.textContent = label; el.selected = !!selected;
    return el;
  }

  function fill(select, options, selected) {
    select.replaceChildren.apply(select, options.map(function (o) {
      return option(o.value, o.label, String(o.value) === String(selected));
    }));
  }

  function formatNumber(value) {
    if (value === null || value === undefined || value === "") return "—";
    if (typeof value !== "number") return String(value);
    return Number.isInteger(value) ? value.toLocaleString("en-US")
      : value.toLocaleString("en-US", { maximumFractionDigits: Math.abs(value) < 10 ? 3 : 1 });
  }

  function cell(tag, text, className) {
    const el = document.createElement(tag);
    el.textContent = text;
    if (className) el.className = className;
    return el;
  }

  function pager(container, state, go) {
    container.replaceChildren();
    if (state.pages <= 1) return;
    const previous = cell("button", "‹ Previous", "small");
    previous.type = "button"; previous.disabled = state.page <= 1;
    previous.addEventListener("click", function () { go(state.page - 1); });
    const next = cell("button", "Next ›", "small");
    next.type = "button"; next.disabled = state.page >= state.pages;
    next.addEventListener("click", function () { go(state.page + 1); });
    container.append(previous, cell("span", " page " + state.page + " of " + state.pages + " ", "muted small"), next);
  }

  function failed(error) {
    document.documentElement.dataset.chartsError = String(error);
    console.error(error);
  }

  // ------------------------------------------------------------- the GPU timeline
  function timeline(root, data) {
    const variant = document.getElementById("timeline-variant");
    const group = document.getElementById("timeline-group");
    const status = document.getElementById("timeline-status");
    let current = data.timeline;
    // Every replication of every variant; the URL keeps the choice (?replication=id),
    // so a reload or a shared link opens on it (the server draws that one first).
    fill(variant, data.replications.map(function (r) { return { value: r.id, label: r.label }; }),
         current.replication);

    function showGroups() {
      document.getElementById("timeline-group-label").hidden = !current.groups.length;
      fill(group, current.groups.map(function (name, i) { return { value: i, label: name }; }), current.group);
    }
    function load(params) {
      status.textContent = "loading…";
      return getJSON(data.urls.timeline, params).then(function (answer) {
        current = answer; showGroups(); status.textContent = "";
        return drawAll(root, answer.figures, "timeline");
      }).catch(function (error) { status.textContent = "could not load the timeline"; failed(error); });
    }
    variant.addEventListener("change", function () {
      const url = new URL(window.location.href);
      url.searchParams.set("replication", variant.value);
      window.history.replaceState(null, "", url);
      load({ replication: variant.value });
    });
    group.addEventListener("change", function () {
      load({ replication: variant.value, group: group.value });
    });
    const heatmap = document.getElementById("chart-occupancy");
    function listen() {
      if (!heatmap.on) return;
      heatmap.on("plotly_click", function (event) {
        const index = current.groups.indexOf(event.points[0].y);
        if (index >= 0) load({ replication: variant.value, group: index });
      });
    }
    showGroups();
    return drawAll(root, current.figures, "timeline", true).then(listen);
  }

  // ------------------------------------------------------------- the workload table
  function workloads(data) {
    const table = document.getElementById("workloads-table");
    const variant = document.getElementById("workloads-variant");
    const filter = document.getElementById("workloads-filter");
    let state = data.workloads;
    fill(variant, data.replications.map(function (r) { return { value: r.id, label: r.label }; }),
         state.replication);

    // Columns the user switched off (remembered in this browser), and a hint that the
    // table scrolls sideways when it is wider than its box.
    const HIDDEN_KEY = "disruption-lab:workloads-hidden-columns";
    let hidden = [];
    try { hidden = JSON.parse(window.localStorage.getItem(HIDDEN_KEY) || "[]"); } catch (e) { hidden = []; }
    const shown = function () {
      return state.columns.filter(function (c) { return c.name === "workload" || hidden.indexOf(c.name) < 0; });
    };
    const scroller = document.getElementById("workloads-scroll");
    const hint = document.getElementById("workloads-scroll-hint");
    function scrollState() {
      const wider = scroller.scrollWidth > scroller.clientWidth + 1;
      scroller.classList.toggle("scrolls", wider);
      scroller.classList.toggle("at-end", scroller.scrollLeft + scroller.clientWidth >= scroller.scrollWidth - 1);
      hint.hidden = !wider;
    }
    scroller.addEventListener("scroll", scrollState);
    window.addEventListener("resize", scrollState);
    function chooser() {
      const list = document.querySelector("#workloads-columns .column-list");
      list.replaceChildren.apply(list, state.columns.filter(function (c) { return c.name !== "workload"; })
        .map(function (column) {
          const box = document.createElement("input");
          box.type = "checkbox"; box.value = column.name; box.checked = hidden.indexOf(column.name) < 0;
          box.addEventListener("change", function () {
            hidden = box.checked ? hidden.filter(function (n) { return n !== column.name; }) : hidden.concat([column.name]);
            try { window.localStorage.setItem(HIDDEN_KEY, JSON.stringify(hidden)); } catch (e) { /* private mode */ }
            header(); body();
          });
          const label = document.createElement("label");
          label.append(box, " " + column.label);
          return label;
        }));
    }

    function header() {
      const row = document.createElement("tr");
      shown().forEach(function (column) {
        const active = state.sort.replace("-", "") === column.name;
        const th = cell("th", column.label + (active ? (state.sort[0] === "-" ? " ▼" : " ▲") : ""),
                        column.kind === "number" ? "num" : "");
        th.dataset.sort = column.name;
        if (column.tip) th.title = column.tip;  // the registry's definition, unit, direction
        th.setAttribute("aria-sort", active ? (state.sort[0] === "-" ? "descending" : "ascending") : "none");
        th.addEventListener("click", function () {
          const descending = !(active && state.sort[0] === "-");
          load({ sort: (descending ? "-" : "") + column.name, page: 1 });
        });
        row.append(th);
      });
      table.tHead.replaceChildren(row);
    }
    function body() {
      table.tBodies[0].replaceChildren.apply(table.tBodies[0], state.rows.map(function (record) {
        const row = document.createElement("tr");
        shown().forEach(function (column) {
          const td = cell("td", formatNumber(record[column.name]), column.kind === "number" ? "num" : "");
          if (column.name === "workload" && record.urgent) td.append(" ", cell("span", "urgent", "tag"));
          row.append(td);
        });
        return row;
      }));
      document.getElementById("workloads-count").textContent =
        state.total + " of " + state.all + " workloads";
      pager(document.getElementById("workloads-pager"), state, function (page) { load({ page: page }); });
      scrollState();
    }
    function load(change) {
      const params = Object.assign({ replication: variant.value, q: filter.value, sort: state.sort, page: state.page }, change);
      return getJSON(data.urls.workloads, params).then(function (answer) {
        state = answer; header(); body();
      }).catch(failed);
    }
    let timer = null;
    filter.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () { load({ page: 1 }); }, 250);
    });
    variant.addEventListener("change", function () { load({ page: 1 }); });
    chooser(); header(); body();
  }

  // ------------------------------------------------------------- the event log
  function events(data) {
    const form = document.getElementById("events-form");
    const table = document.getElementById("events-table");
    const replication = document.getElementById("events-replication");
    const reason = document.getElementById("events-reason");
    let state = data.events;
    let showSetup = false;
    fill(replication, data.replications.map(function (r) { return { value: r.id, label: r.label }; }), state.replication);

    function render() {
      fill(reason, [{ value: "", label: "any" }].concat(state.reasons.map(function (r) { return { value: r, label: r }; })),
           state.filters.reason || "");
      table.tBodies[0].replaceChildren.apply(table.tBodies[0], state.rows.map(function (e) {
        const row = document.createElement("tr");
        row.className = e.type === "Warning" ? "warning" : "";
        // A decision explains this event: decisions.js opens it when the row is clicked.
        if (e.decision !== null && e.decision !== undefined) row.dataset.decision = e.decision;
        row.append(cell("td", e.type), cell("td", e.reason), cell("td", e.at, "num"), cell("td", e.object),
                   cell("td", e.node || "—"), cell("td", e.from),
                   cell("td", e.message + (e.count > 1 ? " (x" + e.count + ")" : "")));
        return row;
      }));
      if (!state.rows.length) {
        const empty = cell("td", "No events match.", "empty"); empty.colSpan = 7;
        const row = document.createElement("tr"); row.append(empty);
        table.tBodies[0].replaceChildren(row);
      }
      if (state.setup_hidden) {
        // The initial placement (t <= 0) is folded so the preemption shows first.
        const note = cell("td", state.setup_hidden + " setup event" + (state.setup_hidden > 1 ? "s" : "") +
                          " at t ≤ 0 (the initial placement) folded away. ", "muted setup-folded");
        note.colSpan = 7;
        const show = document.createElement("a");
        show.href = "#"; show.textContent = "Show them"; show.id = "events-show-setup";
        show.addEventListener("click", function (event) { event.preventDefault(); showSetup = true; load(1); });
        note.append(show);
        const row = document.createElement("tr"); row.append(note);
        table.tBodies[0].prepend(row);
      }
      const log = data.replications.find(function (r) { return String(r.id) === String(state.replication); });
      document.getElementById("events-full").href = log ? log.log : "#";
      pager(document.getElementById("events-pager"), state, function (page) { load(page); });
    }
    function load(page) {
      const params = {};
      new FormData(form).forEach(function (value, key) { if (value) params[key] = value; });
      params.page = page;
      if (showSetup) params.setup = "1";
      return getJSON(data.urls.events, params).then(function (answer) { state = answer; render(); }).catch(failed);
    }
    form.addEventListener("submit", function (event) { event.preventDefault(); load(1); });
    replication.addEventListener("change", function () { reason.value = ""; load(1); });
    reason.addEventListener("change", function () { load(1); });
    render();
  }

  // ------------------------------------------------------------- the compare page
  function compare() {
    const form = document.getElementById("compare-form");
    if (!form) return;
    form.querySelectorAll("[data-autosubmit]").forEach(function (input) {
      input.addEventListener("change", function () { form.requestSubmit(); });
    });
    // Keep the chosen variants in the order they were chosen (the first is the default
    // baseline, the order of the columns): those already in the URL first, new ones after.
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const params = new URLSearchParams(new FormData(form));
      const checked = params.getAll("v");
      const before = new URLSearchParams(window.location.search).getAll("v")
        .filter(function (key) { return checked.indexOf(key) >= 0; });
      params.delete("v");
      before.concat(checked.filter(function (key) { return before.indexOf(key) < 0; }))
        .forEach(function (key) { params.append("v", key); });
      window.location.search = params.toString();
    });
    const copy = document.getElementById("compare-copy");
    if (copy) {
      copy.addEventListener("click", function () {
        const done = function () { copy.textContent = "Link copied"; };
        if (navigator.clipboard) navigator.clipboard.writeText(window.location.href).then(done, function () {});
      });
    }
  }

  function start() {
    const script = document.getElementById("run-charts-data") || document.getElementById("compare-charts-data");
    compare();
    if (!script || typeof Plotly === "undefined") {
      if (script) failed("plotly.js did not load");
      document.documentElement.dataset.chartsReady = "true";
      return;
    }
    document.documentElement.dataset.chartsStartMs = String(Math.round(performance.now()));
    const data = JSON.parse(script.textContent);
    const root = script.closest("[data-charts-root]") || document;
    reserve(root, data.figures);
    if (data.timeline) reserve(root, data.timeline.figures);
    // A link to a section (#charts-timeline) opens there: scroll now, as the browser
    // would a moment later, so that section's charts are the ones drawn first.
    const target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    if (target && !window.scrollY) target.scrollIntoView();
    // The charts the first viewport shows, before anything is drawn: their marks tell
    // the benchmark when the page looks finished to someone who has not scrolled.
    const first = Array.prototype.filter.call(root.querySelectorAll("[data-chart]"), inViewport);
    first.forEach(function (el) { pinned.add(el); });
    document.documentElement.dataset.chartsViewport = String(first.length);
    const drawn = [drawAll(root, data.figures, null, true)];
    if (data.timeline) drawn.push(timeline(root, data));
    if (data.workloads) workloads(data);
    if (data.events) events(data);
    whenDrawn(first).catch(failed).then(function () {
      idle(function () {
        document.documentElement.dataset.chartsViewportMs = String(Math.round(performance.now()));
        viewportDone = true;
        schedule();
      });
    });
    Promise.all(drawn).then(function () {
      // Milliseconds since navigation began: what the benchmark reports.
      document.documentElement.dataset.chartsReadyMs = String(Math.round(performance.now()));
      document.documentElement.dataset.chartsReady = "true";
    }).catch(failed);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
