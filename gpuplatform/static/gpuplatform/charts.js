// Charts drawn from data the page embeds with json_script: a <canvas data-chart="ID"> reads the JSON
// in the element ID. Kept in a file (not inline) so the Content-Security-Policy can forbid inline scripts.
// Data: {labels, datasets: [{label, data, color, dash, point, outline, type}], type, stacked,
// horizontal, unit}, or the capacity shorthand {labels, allocated, free}. Series stay apart without
// colour: each may carry a dash pattern (dash), a point shape (point) and be drawn hollow (outline);
// the tooltip gives every figure with its unit, and the value axis is titled with it (the data's
// unit, or the canvas's data-unit / data-axis where the page knows it better); the other axis is titled
// with what its labels are (the data's category, or the canvas's data-category: "Hour (UTC)").
// Drawn on load and again for charts htmx swaps in (a form answered in place lands on a chart page).
(function () {
  "use strict";
  function datasetsOf(data) {
    if (data.datasets) {
      return data.datasets.map(function (set) {
        var hollow = set.outline === true;
        var out = {
          label: set.label,
          data: set.data,
          backgroundColor: hollow ? "rgba(0,0,0,0)" : set.color,
          borderColor: set.color,
        };
        if (set.type) { out.type = set.type; }
        if (set.dash) { out.borderDash = set.dash; }
        if (set.point) { out.pointStyle = set.point; out.pointRadius = 3; }
        if (hollow || data.type === "line") { out.borderWidth = 2; }
        if (data.type === "line") { out.fill = false; out.spanGaps = false; }
        return out;
      });
    }
    return [
      {label: "allocated GE", data: data.allocated, backgroundColor: "#d55e00"},
      {label: "free GE", data: data.free, backgroundColor: "#009e73"},
    ];
  }
  function draw(canvas) {
    var source = document.getElementById(canvas.dataset.chart);
    if (!source || typeof Chart === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    var stacked = data.stacked !== false;
    var unitName = data.unit || canvas.dataset.unit || (data.datasets ? "" : "GE");
    var unit = unitName ? " " + unitName : "";
    var axisTitle = canvas.dataset.axis || unitName;
    var scales = {x: {stacked: stacked}, y: {stacked: stacked}};
    var valueAxis = data.horizontal === false ? "y" : "x";
    var categoryAxis = valueAxis === "y" ? "x" : "y";
    var categoryTitle = data.category || canvas.dataset.category;
    if (axisTitle) { scales[valueAxis].title = {display: true, text: axisTitle}; }
    if (categoryTitle) { scales[categoryAxis].title = {display: true, text: categoryTitle}; }
    new Chart(canvas, {
      type: data.type || "bar",
      data: {labels: data.labels, datasets: datasetsOf(data)},
      options: {
        indexAxis: data.horizontal === false ? "x" : "y",
        scales: scales,
        interaction: {mode: "index", intersect: false},
        plugins: {
          legend: {labels: {usePointStyle: true}},
          tooltip: {
            callbacks: {
              label: function (item) {
                var value = data.horizontal === false ? item.parsed.y : item.parsed.x;
                if (value === null || value === undefined || isNaN(value)) { return item.dataset.label + ": no data"; }
                return item.dataset.label + ": " + value + unit;
              },
            },
          },
        },
      },
    });
  }
  function drawAll(root, tries) {
    if (typeof Chart === "undefined") {
      // Swapped in by htmx, the library's script may run after this one: wait for it a little.
      if (tries < 50) { setTimeout(function () { drawAll(root, tries + 1); }, 100); }
      return;
    }
    root.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      if (canvas.dataset.drawn) { return; }
      canvas.dataset.drawn = "1";
      draw(canvas);
    });
  }
  if (window.gppChartsLoaded) { drawAll(document, 0); return; }  // run again by a swap
  window.gppChartsLoaded = true;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { drawAll(document, 0); });
  } else {
    drawAll(document, 0);
  }
  document.addEventListener("htmx:load", function (event) { drawAll(event.detail.elt, 0); });
})();
