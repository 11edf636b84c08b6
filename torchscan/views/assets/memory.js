(function () {
  "use strict";
  // The memory page's one script (views-3.md 5): zoom on each timeline's event axis (buttons, or a
  // drag across the plot) and a readout of every category's live bytes at the hovered (or
  // arrow-key) point. It reads the page's inert JSON block; report text reaches the DOM only as
  // text nodes. Without it the page is complete, only static.
  var data = JSON.parse(document.getElementById("memory-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var BINARY = [[1125899906842624, "PiB"], [1099511627776, "TiB"], [1073741824, "GiB"], [1048576, "MiB"], [1024, "KiB"]];

  // number_style.py quantity(value, "bytes"): four significant digits once scaled, separators.
  function digits(value) {
    var rounded = Number(value.toPrecision(4));
    var magnitude = rounded === 0 ? 0 : Math.floor(Math.log10(Math.abs(rounded)));
    var decimals = Math.max(0, 3 - magnitude);
    return rounded.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  }
  function bytes(value) {
    for (var i = 0; i < BINARY.length; i += 1) {
      var scaled = value / BINARY[i][0];
      if (Math.abs(Number(scaled.toPrecision(4))) >= 1) { return digits(scaled) + " " + BINARY[i][1]; }
    }
    return value.toLocaleString("en-US") + " B";
  }

  function setup(figure) {
    var key = figure.getAttribute("data-timeline");
    var line = data[key];
    var svg = figure.querySelector("svg.memory-timeline");
    var zoomable = svg && svg.querySelector("g.zoomable");
    if (!line || !zoomable || !line.events.length) { return; }
    var first = Number(zoomable.getAttribute("data-first"));
    var last = Number(zoomable.getAttribute("data-last"));
    var x0 = Number(zoomable.getAttribute("data-x0"));
    var x1 = Number(zoomable.getAttribute("data-x1"));
    var span = Math.max(last - first, 1);
    var readout = figure.querySelector(".memory-readout");
    var state = { lo: first, hi: last, point: null };
    var cursor = document.createElementNS(SVG, "line");
    cursor.setAttribute("class", "memory-cursor");
    cursor.setAttribute("y1", "88");
    cursor.setAttribute("y2", "352");
    cursor.setAttribute("stroke", "#d00000");
    cursor.setAttribute("stroke-width", "1.5");
    cursor.setAttribute("visibility", "hidden");
    svg.appendChild(cursor);

    function plotX(event) { return x0 + (x1 - x0) * (event - first) / span; }  // unzoomed
    function shownX(event) { return x0 + (x1 - x0) * (event - state.lo) / Math.max(state.hi - state.lo, 1e-9); }
    function eventAt(x) { return state.lo + (state.hi - state.lo) * (x - x0) / (x1 - x0); }
    function nearest(event) {
      var events = line.events;
      var low = 0;
      var high = events.length - 1;
      while (high - low > 1) {
        var middle = (low + high) >> 1;
        if (events[middle] <= event) { low = middle; } else { high = middle; }
      }
      return Math.abs(events[high] - event) < Math.abs(events[low] - event) ? high : low;
    }
    function apply() {
      var zoomed = state.lo > first || state.hi < last;
      var k = span / Math.max(state.hi - state.lo, 1e-9);
      zoomable.setAttribute("transform", zoomed ? "translate(" + (x0 - k * plotX(state.lo)).toFixed(3) + " 0) scale(" + k.toFixed(6) + " 1)" : "");
      svg.querySelectorAll(".phase-names, .peak-label").forEach(function (node) { node.setAttribute("visibility", zoomed ? "hidden" : "visible"); });
      svg.querySelectorAll("text[data-event-tick]").forEach(function (tick) {
        var k2 = Number(tick.getAttribute("data-event-tick"));
        tick.textContent = Math.round(state.lo + (state.hi - state.lo) * k2 / 4).toLocaleString("en-US");
      });
      figure.querySelectorAll("button[data-zoom]").forEach(function (button) {
        button.disabled = button.getAttribute("data-zoom") !== "in" && !zoomed;
      });
      figure.setAttribute("data-zoom", zoomed ? Math.round(state.lo) + "-" + Math.round(state.hi) : "");
      if (state.point !== null) { show(state.point); }
    }
    function zoomTo(lo, hi) {
      var width = Math.max(hi - lo, Math.min(span, 2));
      lo = Math.max(first, Math.min(lo, last - width));
      state.lo = lo;
      state.hi = Math.min(last, lo + width);
      apply();
    }
    function show(index) {
      state.point = index;
      var event = line.events[index];
      var x = shownX(event);
      var inside = x >= x0 - 0.5 && x <= x1 + 0.5;
      cursor.setAttribute("x1", x.toFixed(2));
      cursor.setAttribute("x2", x.toFixed(2));
      cursor.setAttribute("visibility", inside ? "visible" : "hidden");
      var total = 0;
      var parts = [];
      line.drawn.forEach(function (name) {
        var value = line.categories[name][index];
        total += value;
        if (value) { parts.push(data.labels[name] + " " + bytes(value)); }
      });
      readout.textContent = "Ledger event " + event.toLocaleString("en-US") + " · phase " + (line.phases[index] || "outside any phase") +
        " · live " + bytes(total) + (parts.length ? ": " + parts.join(" · ") : "");
    }
    function fromPointer(event) {
      var box = svg.getBoundingClientRect();
      var scale = Number(svg.getAttribute("width")) / box.width;
      return (event.clientX - box.left) * scale;
    }
    var drag = null;
    svg.addEventListener("mousemove", function (event) {
      var x = fromPointer(event);
      if (x < x0 || x > x1) { return; }
      show(nearest(eventAt(x)));
      if (drag !== null) { drag.end = x; }
    });
    svg.addEventListener("mousedown", function (event) {
      var x = fromPointer(event);
      if (x >= x0 && x <= x1) { drag = { start: x, end: x }; event.preventDefault(); }
    });
    document.addEventListener("mouseup", function () {
      if (drag === null) { return; }
      var a = Math.min(drag.start, drag.end);
      var b = Math.max(drag.start, drag.end);
      drag = null;
      if (b - a >= 4) { zoomTo(eventAt(a), eventAt(b)); }
    });
    svg.setAttribute("tabindex", "0");
    svg.addEventListener("keydown", function (event) {
      var index = state.point === null ? nearest((state.lo + state.hi) / 2) : state.point;
      if (event.key === "ArrowRight") { index = Math.min(index + 1, line.events.length - 1); }
      else if (event.key === "ArrowLeft") { index = Math.max(index - 1, 0); }
      else { return; }
      event.preventDefault();
      show(index);
    });
    figure.querySelectorAll("button[data-zoom]").forEach(function (button) {
      button.addEventListener("click", function () {
        var action = button.getAttribute("data-zoom");
        var centre = state.point !== null ? line.events[state.point] : line.events[line.peak];
        var width = state.hi - state.lo;
        if (action === "in") { zoomTo(centre - width / 4, centre + width / 4); }
        else if (action === "out") { zoomTo(centre - width, centre + width); }
        else { state.lo = first; state.hi = last; apply(); }
      });
    });
    apply();
  }
  document.querySelectorAll("figure[data-timeline]").forEach(setup);
})();
