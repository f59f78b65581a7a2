// The run page's decision panel: a click on a victim (✕) or preemptor (▼) mark in the
// GPU timeline, or on an event row that a decision explains, opens the decision behind
// it — kube-scheduler's message, the candidate nodes with their victims, the rule that
// decided, the victims and the reprieved pods. Records come from the replication's
// decisions.json; nothing is computed here. A static file: the CSP allows no inline script.
(function () {
  "use strict";
  const panel = document.getElementById("decision-panel");
  if (!panel) return;
  const title = document.getElementById("decision-title");
  const body = document.getElementById("decision-body");

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function urlFor(replication) {
    return panel.dataset.url.replace("/replications/0/", "/replications/" + encodeURIComponent(replication) + "/");
  }

  function fetchDecisions(replication, params) {
    const query = new URLSearchParams(params).toString();
    return fetch(urlFor(replication) + "?" + query, {
      credentials: "same-origin", headers: { Accept: "application/json" },
    }).then(function (response) {
      if (!response.ok) throw new Error("decisions answered " + response.status);
      return response.json();
    });
  }

  function podLink(answer, name) {
    const a = el("a", name);
    a.href = answer.pod_url.replace("__pod__", encodeURIComponent(name));
    a.className = "pod-link";
    return a;
  }

  function names(answer, list) {
    const span = el("span");
    list.forEach(function (name, i) {
      if (i) span.append(", ");
      span.append(podLink(answer, name));
    });
    if (!list.length) span.textContent = "—";
    return span;
  }

  function row(label, value) {
    const p = el("p");
    p.append(el("strong", label + ": "));
    if (typeof value === "string") p.append(value); else p.append(value);
    return p;
  }

  function render(answer, decision) {
    title.textContent = "Decision #" + decision.id + " · " + decision.kind + " at " + decision.time + " s";
    const parts = [];
    const message = el("p"); message.append(el("code", decision.message)); parts.push(message);
    if (decision.pod) parts.push(row("Preemptor", podLink(answer, decision.pod)));
    if (decision.node) parts.push(row("Node", decision.node));
    if (decision.cause) parts.push(row("Cause", decision.cause));
    if (decision.rule) {
      const rule = row("Deciding rule", decision.rule); rule.id = "decision-rule"; parts.push(rule);
    }
    if (decision.victims.length) {
      const victims = row("Victims", names(answer, decision.victims)); victims.id = "decision-victims";
      parts.push(victims);
    }
    if (decision.candidates.length) {
      const table = el("table", null, "table small");
      table.id = "decision-candidates";
      const head = el("tr");
      ["Candidate node", "Victims", "PDB violations", "Expected cost"].forEach(function (h) { head.append(el("th", h)); });
      table.append(el("thead")); table.tHead.append(head);
      const tbody = el("tbody");
      decision.candidates.forEach(function (c) {
        const tr = el("tr", null, c.node === decision.node ? "chosen" : "");
        tr.append(el("td", c.node + (c.node === decision.node ? " (chosen)" : "")));
        const victims = el("td"); victims.append(names(answer, c.victims)); tr.append(victims);
        tr.append(el("td", String(c.pdb_violations), "num"),
                  el("td", c.cost === null || c.cost === undefined ? "—" : c.cost.toFixed(1), "num"));
        tbody.append(tr);
      });
      table.append(tbody); parts.push(table);
    }
    if (decision.reprieved.length) {
      const list = el("ul", null, "small"); list.id = "decision-reprieved";
      decision.reprieved.forEach(function (r) {
        const li = el("li"); li.append("reprieved ", podLink(answer, r.pod), ": " + r.why); list.append(li);
      });
      parts.push(el("h3", "Reprieved")); parts.push(list);
    }
    if (decision.units.length) {
      const list = el("ul", null, "small");
      decision.units.forEach(function (u) {
        const terms = u.cost_terms.map(function (t) { return t[0] + " " + t[1].toFixed(1); }).join(", ");
        list.append(el("li", (u.whole_group ? "All-group " : "unit ") + u.workload + " [" + u.pods.join(" ") +
          "] priority " + u.priority + ": " + (u.evicted ? "evicted" : "kept") + (terms ? " (" + terms + ")" : "")));
      });
      parts.push(el("h3", "Units considered")); parts.push(list);
    }
    if (decision.targets.length) {
      const list = el("ul", null, "small");
      decision.targets.forEach(function (t) {
        list.append(el("li", t.workload + " in " + t.queue + ": " + (t.taken ? "taken (" + t.reason + ")" : "not taken: " + t.why)));
      });
      parts.push(el("h3", "Queue candidates")); parts.push(list);
    }
    body.replaceChildren.apply(body, parts);
    panel.hidden = false;
    panel.dataset.decision = String(decision.id);
    panel.scrollIntoView({ block: "nearest" });
  }

  function show(replication, params, pick) {
    return fetchDecisions(replication, params).then(function (answer) {
      const decision = pick ? answer.decisions.find(pick) : answer.decisions[0];
      if (!decision) {
        title.textContent = "No decision";
        body.replaceChildren(el("p", "No decision record explains this.", "muted"));
        panel.hidden = false;
        return;
      }
      render(answer, decision);
    }).catch(function (error) { console.error(error); });
  }

  // ------------------------------------------------------------ timeline marks
  function near(a, b) { return Math.abs(Number(a) - Number(b)) < 1e-6; }

  function onMark(event) {
    const point = event.points && event.points[0];
    if (!point || !point.data || !point.customdata) return;
    const replication = document.getElementById("timeline-variant").value;
    const name = point.data.name;
    const time = point.x;
    if (name === "victim") {
      const victim = point.customdata[0];
      show(replication, { pod: victim }, function (d) {
        return d.kind !== "FailedScheduling" && d.victims.indexOf(victim) >= 0 && near(d.time, time);
      });
    } else if (name === "preemptor") {
      const preemptor = point.customdata[0];
      show(replication, { pod: preemptor }, function (d) {
        return d.kind !== "FailedScheduling" && d.pod === preemptor && near(d.time, time);
      });
    }
  }

  function listen() {
    const gantt = document.getElementById("chart-gantt");
    if (!gantt || typeof gantt.on !== "function") return false;
    gantt.on("plotly_click", onMark);
    return true;
  }

  function whenChartsReady() {
    if (document.documentElement.dataset.chartsReady === "true") {
      // No Gantt (a large cluster draws the occupancy heatmap only): rows still work.
      panel.dataset.listening = listen() ? "true" : "false";
      return;
    }
    window.setTimeout(whenChartsReady, 200);
  }

  // ------------------------------------------------------------ event rows
  const events = document.getElementById("events-table");
  if (events) {
    events.addEventListener("click", function (event) {
      const tr = event.target.closest("tr[data-decision]");
      if (!tr) return;
      const replication = document.getElementById("events-replication").value;
      show(replication, { id: tr.dataset.decision });
    });
  }
  document.getElementById("decision-close").addEventListener("click", function () { panel.hidden = true; });
  whenChartsReady();
})();
