// Charts drawn from data the page embeds with json_script: a <canvas data-chart="ID"> reads the JSON
// in the element ID. Kept in a file (not inline) so the Content-Security-Policy can forbid inline scripts.
// Data: {labels, datasets: [{label, data, color}], stacked, horizontal}, or the capacity shorthand
// {labels, allocated, free}.
(function () {
  "use strict";
  function datasetsOf(data) {
    if (data.datasets) {
      return data.datasets.map(function (set) {
        return {label: set.label, data: set.data, backgroundColor: set.color};
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
    new Chart(canvas, {
      type: data.type || "bar",
      data: {labels: data.labels, datasets: datasetsOf(data)},
      options: {
        indexAxis: data.horizontal === false ? "x" : "y",
        scales: {x: {stacked: stacked}, y: {stacked: stacked}},
      },
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("canvas[data-chart]").forEach(draw);
  });
})();
