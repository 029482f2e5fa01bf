/* Draws the dashboard's charts from the JSON each card carries (porto_console/console/charts.py).
   Amounts arrive as integer minor units; only the axis and tooltips scale them to the asset's unit. */
(function () {
  "use strict";

  function cssColour(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  // Distinguishable in light and dark themes, and for the common colour-vision deficiencies.
  var PALETTE = ["#417690", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#999999", "#0072b2", "#f0e442"];

  function inUnit(value, chart) {
    if (!chart.unit) return String(value);
    var scaled = value / Math.pow(10, chart.places);
    return scaled.toLocaleString("en-GB", {maximumFractionDigits: chart.places}) + " " + chart.unit;
  }

  function draw(chart) {
    var canvas = document.getElementById(chart.chart_id);
    if (!canvas || typeof Chart === "undefined") return;
    var text = cssColour("--body-fg", "#333");
    var grid = cssColour("--hairline-color", "#e8e8e8");
    var doughnut = chart.kind === "doughnut";
    var datasets = chart.series.map(function (series, index) {
      return {
        label: series.label,
        data: series.values,
        backgroundColor: doughnut ? PALETTE.slice(0, series.values.length) : PALETTE[index % PALETTE.length],
        borderWidth: doughnut ? 1 : 0
      };
    });
    new Chart(canvas, {
      type: chart.kind,
      data: {labels: chart.labels, datasets: datasets},
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: {display: doughnut || chart.series.length > 1, position: "bottom", labels: {color: text, boxWidth: 12}},
          tooltip: {callbacks: {label: function (item) {
            return (item.dataset.label ? item.dataset.label + ": " : "") + inUnit(item.raw, chart);
          }}}
        },
        scales: doughnut ? {} : {
          x: {ticks: {color: text, autoSkip: true, maxRotation: 0}, grid: {display: false}},
          y: {beginAtZero: true, ticks: {color: text, precision: 0, callback: function (value) {
            return inUnit(value, chart);
          }}, grid: {color: grid}}
        }
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("script[type='application/json'][id$='-data']").forEach(function (node) {
      draw(JSON.parse(node.textContent));
    });
  });
})();
