// report.js draws the charts of a runner HTML report (reports/html.go)
// with uPlot, both inlined in the page. The data is the JSON array in
// <script id="runner-charts">, one object per chart (reports/chart.go,
// type chart); each is drawn into the element whose data-chart attribute
// is its id. A chart that cannot be drawn shows why, with class
// chart-error; when all are done, <body data-charts-drawn="N"> counts the
// charts drawn. Nothing is fetched.
(function () {
  "use strict";

  var HEIGHT = 230;
  var BUDGET = "#c62828";
  var MARK = "#7f7f7f";

  // fmt shows a value with 4 significant digits, or a dash for a gap.
  function fmt(v) {
    return v == null ? "—" : String(+v.toPrecision(4));
  }

  // percentile is the percentile p of x = 1/(1−p), as a label.
  function percentile(x) {
    if (x == null) return "—";
    var p = 100 * (1 - 1 / x);
    return "p" + (p >= 99.99 ? p.toFixed(4) : p >= 99 ? p.toFixed(2) : p.toFixed(1));
  }

  // overlay draws the chart's budgets (dashed red horizontal lines with
  // their rule) and its mark (a dashed grey vertical line) over the plot.
  function overlay(c) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox, px = window.devicePixelRatio || 1;
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      ctx.lineWidth = 1.5 * px;
      ctx.setLineDash([6 * px, 4 * px]);
      ctx.font = 11 * px + "px system-ui, sans-serif";
      ctx.textAlign = "left"; // uPlot leaves the last axis's alignment set
      ctx.textBaseline = "alphabetic";
      (c.budgets || []).forEach(function (bl) {
        var y = Math.round(u.valToPos(bl.y, "y", true));
        ctx.strokeStyle = BUDGET;
        ctx.beginPath();
        ctx.moveTo(b.left, y);
        ctx.lineTo(b.left + b.width, y);
        ctx.stroke();
        ctx.fillStyle = BUDGET;
        // Above the line, or below it when it runs along the top.
        ctx.fillText("limit " + bl.label, b.left + 4 * px, y - b.top < 16 * px ? y + 13 * px : y - 4 * px);
      });
      if (c.mark) {
        var x = Math.round(u.valToPos(c.mark, "x", true));
        ctx.strokeStyle = MARK;
        ctx.lineWidth = 1 * px;
        ctx.setLineDash([3 * px, 3 * px]);
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
      }
      ctx.restore();
    };
  }

  // options are the uPlot options of chart c at a width in CSS pixels.
  function options(c, width) {
    var series = [{ label: c.log ? "percentile" : "second", value: c.log ? function (u, v) { return percentile(v); } : function (u, v) { return fmt(v); } }];
    c.series.forEach(function (s) {
      var o = { label: s.label, stroke: s.color, width: 1.5, points: { show: false }, value: function (u, v) { return fmt(v); } };
      if (s.dash) o.dash = [6, 4];
      if (c.steps) o.paths = uPlot.paths.stepped({ align: 1 });
      series.push(o);
    });
    var x = { label: c.xlabel, size: 36, labelSize: 18 };
    if (c.log) {
      x.splits = function (u, i, lo, hi) {
        return c.ticks.map(function (t) { return t.v; }).filter(function (v) { return v >= lo * 0.9999 && v <= hi * 1.0001; });
      };
      // Every tick labelled (a log axis labels only some by default).
      x.filter = function (u, splits) { return splits; };
      x.values = function (u, vals) {
        return vals.map(function (v) {
          // uPlot may hand back a split a rounding away from ours.
          for (var i = 0; i < c.ticks.length; i++) if (Math.abs(c.ticks[i].v - v) <= 1e-6 * c.ticks[i].v) return c.ticks[i].l;
          return "";
        });
      };
    }
    return {
      width: width,
      height: HEIGHT,
      series: series,
      scales: {
        x: c.log ? { time: false, distr: 3, log: 10 } : { time: false },
        y: { range: function () { return [0, c.ymax]; } }
      },
      axes: [x, { label: c.ylabel, size: 52, labelSize: 18 }],
      cursor: { drag: { x: true, y: false } },
      hooks: { draw: [overlay(c)] }
    };
  }

  function draw() {
    var block = document.getElementById("runner-charts");
    if (!block) return;
    var charts = [], plots = [], drawn = 0;
    try {
      charts = JSON.parse(block.textContent) || [];
    } catch (e) {
      charts = [];
    }
    charts.forEach(function (c) {
      var el = document.querySelector('[data-chart="' + c.id + '"]');
      if (!el) return;
      try {
        if (typeof uPlot === "undefined") throw new Error("uPlot did not load");
        var data = [c.x].concat(c.series.map(function (s) { return s.y; }));
        el.textContent = "";
        plots.push({ el: el, u: new uPlot(options(c, el.clientWidth || 400), data, el) });
        drawn++;
      } catch (e) {
        el.textContent = "chart not drawn: " + e.message;
        el.className += " chart-error";
      }
    });
    document.body.setAttribute("data-charts-drawn", String(drawn));
    var pending = 0;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        plots.forEach(function (p) { p.u.setSize({ width: p.el.clientWidth || 400, height: HEIGHT }); });
      }, 100);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
