/* TorchScan module cost explorer: drawing a panel lazily, from the embedded data (issue 15).
 * Mirrors torchscan/views/analysis/explorer.py and map_svg.py; the browser tests compare both renderings.
 * Only function declarations: html.py places this after explorer.js inside one strict function,
 * which shares its helpers (el, svgEl, neutral, badge, index, originals, data). */
  // ---- Lazy drawing of a panel (mirrors torchscan/views/analysis/explorer.py and map_svg.py) ----
  function describe(group, node) {
    var calls = Math.max(node.calls.length, node.before_calls.length);
    var parts = [pathLabel(node.path) + ", " + neutral(node.type || "structural")];
    parts.push(node.not_called ? "not called (the module never ran as a module call)." : calls + " call" + (calls !== 1 ? "s" : "") + ".");
    if (group.scale === "structure") { parts.push("structural · unscaled: width shows shape only, not cost."); }
    parts.push("Derived subtree subtotal: " + node.display + ".");
    if (node.covered) { parts.push("Own calls are covered by an ancestor's inclusive estimate."); }
    else if (!node.direct) { parts.push("Own value: no direct estimate."); }
    else { parts.push("Own value: " + node.direct_display + "."); }
    parts.push("Method: " + neutral(group.method) + ". Scope: " + neutral(group.scope) + ".");
    if (group.comparison) {
      parts.push("Before: " + node.before_display + ".");
      if (node.delta !== null) { parts.push("Complete comparable delta: " + node.delta_display.replace(/^complete · /, "") + "."); }
      else if (node.delta_reason === "no comparable recorded contribution") { parts.push("No delta: no recorded value in this group on either side."); }
      else { parts.push("Delta unknown: " + node.delta_reason + "."); }
      if (node.change !== "matched") { parts.push("This module was " + node.change + "."); }
    }
    return parts.join(" ");
  }
  function isNeutral(group, node) { return group.scale === "structure" || !(node.known || node.before_known); }
  function f3(value) { return value.toFixed(3); }
  function drawMap(group) {
    var row = group.comparison ? 76 : 58;
    var height = 4 + (group.max_depth + 1) * row;
    var gid = group.id;
    var svg = svgEl("svg", { "class": "module-map", xmlns: SVG, role: "group", "data-group-id": gid,
      "aria-label": group.label + " module map", viewBox: "0 0 900 " + height, width: "900", height: String(height) });
    var pattern = svgEl("pattern", { id: "hatch-" + gid, width: "8", height: "8", patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
    pattern.appendChild(svgEl("rect", { width: "8", height: "8", fill: "#ffffff", "fill-opacity": "0.25" }));
    pattern.appendChild(svgEl("line", { x1: "0", y1: "0", x2: "0", y2: "8", stroke: "#1a1a1a", "stroke-width": "3", "stroke-opacity": "0.55" }));
    var defs = svgEl("defs", {});
    defs.appendChild(pattern);
    svg.appendChild(defs);
    group.nodes.forEach(function (node) {
      var tile = node.tile;
      if (!tile) { return; }
      var attrs = { "data-map-node": "", "data-node-id": node.id, "data-group-id": gid, "data-parent": node.parent || "",
        "data-depth": String(node.depth), "data-neutral": isNeutral(group, node) ? "true" : "false", tabindex: "0",
        id: gid + "-" + node.id, href: "#module-" + node.id, "aria-label": describe(group, node) };
      if (node.id === group["default"]) { attrs["aria-current"] = "true"; }
      if (node.children.length) { attrs["aria-expanded"] = "true"; }
      var a = svgEl("a", attrs);
      a.appendChild(svgEl("title", {}, pathLabel(node.path) + ": " + node.display));
      fillTile(a, group, tile, tile);
      svg.appendChild(a);
      if (tile.own) {
        var g = svgEl("g", { "data-own-node": node.id, "data-group-id": gid, "class": "own-slot" });
        fillOwn(g, tile, tile.own);
        svg.appendChild(g);
      }
    });
    return svg;
  }
  // A tile's drawing from `d` (its stored drawing, or the zoomed re-layout of it): rect, hatch, texts, bars.
  function fillTile(a, group, tile, d) {
    var box = d.box;
    var gid = group.id;
    var row = group.comparison ? 76 : 58;
    a.appendChild(svgEl("rect", { "data-tile": "", x: box[0], y: box[1], width: box[2], height: box[3], fill: tile.fill, "class": "tile" }));
    if (tile.hatched) {
      a.appendChild(svgEl("rect", { "data-overlay": "partial", x: box[0], y: box[1], width: box[2], height: box[3], fill: "url(#hatch-" + gid + ")" }));
    }
    var left = f3(parseFloat(box[0]) + 4);
    var y = parseFloat(box[1]);
    if (d.label) { a.appendChild(svgEl("text", { x: left, y: f3(y + 16), fill: tile.ink }, d.label)); }
    if (d.value) { a.appendChild(svgEl("text", { x: left, y: f3(y + 32), fill: tile.ink, "class": "v" }, d.value)); }
    if (d.bars) {
      ["before", "after"].forEach(function (bar, i) {
        a.appendChild(svgEl("rect", { "data-bar": bar, x: f3(parseFloat(box[0])), y: f3(y + 38 + i * 9), width: d.bars[i], height: "7", "class": "bar-" + bar }));
      });
      if (d.delta) { a.appendChild(svgEl("text", { x: left, y: f3(y + row - 10), fill: tile.ink }, d.delta)); }
    }
  }
  function fillOwn(g, tile, own) {
    g.appendChild(svgEl("rect", { x: own[0], y: own[1], width: own[2], height: own[3], fill: tile.fill, "fill-opacity": "0.45", stroke: "#555", "stroke-dasharray": "3 2" }));
    if (parseFloat(own[2]) > 30) { g.appendChild(svgEl("text", { x: f3(parseFloat(own[0]) + 4), y: f3(parseFloat(own[1]) + 16) }, "own")); }
  }
  function drawRail(group) {
    if (!group.rails.length) { return null; }
    var nodes = index[currentBuild][group.id].nodes;
    var cards = group.rails.map(function (card) {
      var node = nodes[card.node];
      var parts = [
        el("span", { "class": "rail-path" }, [pathLabel(node.path)]),
        el("span", { "class": "rail-kind" }, [RAIL_WORDS[card.kind]]),
        el("span", { "class": "rail-value" }, [card.text])];
      if (card.note) { parts.push(el("span", { "class": "rail-note" }, [card.note])); }
      return el("a", { "class": "rail-card " + node.rail.join(" "), "data-node-id": node.id, "data-group-id": group.id, href: "#module-" + node.id }, parts);
    });
    var counts = ["unknown", "small", "zero"].map(function (kind) {
      var n = group.rails.filter(function (c) { return c.kind === kind; }).length;
      return n ? n + " " + RAIL_WORDS[kind] : "";
    }).filter(Boolean).join(", ");
    var details = el("details", { "class": "rail-list" }, [
      el("summary", {}, [group.label + ": " + cards.length + " module" + (cards.length !== 1 ? "s" : "") + " the map cannot size (" + counts + "; cards are deliberately unscaled, not sized by cost)"]),
      el("div", { "class": "rail-cards" }, cards)]);
    if (cards.length <= 12) { details.open = true; }
    return el("div", { "class": "rail-group", "data-group-id": group.id }, [details]);
  }
  function drawTop(group) {
    if (!group.top.length) { return null; }
    var headers = [["rank", "Rank"], ["order", "Module call"], ["type", "Type"], ["value", "Value"]].map(function (pair) {
      var th = el("th", pair[0] === "rank" ? { "aria-sort": "ascending" } : {}, [el("button", { type: "button", "data-sort": pair[0] }, [pair[1]])]);
      return th;
    });
    headers.push(el("th", {}, ["% of model total"]));
    if (group.comparison) { headers.push(el("th", {}, ["Before"])); headers.push(el("th", {}, ["Δ (after minus before)"])); }
    var rows = group.top.map(function (row) {
      var cells = [
        el("td", {}, [String(row.rank)]), el("td", {}, [el("a", { href: "#call-" + row.index }, [row.call])]),
        el("td", {}, [row.type]), el("td", {}, [row.text]), el("td", {}, [row.share])];
      if (group.comparison) { cells.push(el("td", {}, [row.before])); cells.push(el("td", {}, [row.delta])); }
      return el("tr", { "data-rank": String(row.rank), "data-order": String(row.order), "data-type": row.type }, cells);
    });
    return el("table", { "class": "top-layers", "data-group-id": group.id }, [
      el("caption", {}, ["Top " + group.top.length + " of " + group.complete_calls + " complete calls in " + group.label +
        " by own value, with the share of the authoritative model total (sortable; incomplete calls are listed under Rankings)"]),
      el("thead", {}, [el("tr", {}, headers)]), el("tbody", {}, rows)]);
  }
  function drawByType(group) {
    if (!group.by_type.length) { return null; }
    var rows = group.by_type.map(function (row) {
      var cells = [el("td", {}, [row.type || "structural"]), el("td", {}, [String(row.calls)]),
        el("td", {}, [row.text]), el("td", {}, [row.share])];
      if (group.comparison) { cells.push(el("td", {}, [row.before])); cells.push(el("td", {}, [row.delta])); }
      return el("tr", {}, cells);
    });
    var heads = ["Module type", "Calls", "Own value, all calls", "% of model total"];
    if (group.comparison) { heads = heads.concat(["Before", "Δ (after minus before)"]); }
    return el("table", { "class": "by-type", "data-group-id": group.id }, [
      el("caption", {}, ["By module type in " + group.label + ": own values of every call of a type added up, largest first (a type with an incomplete call is a lower bound)"]),
      el("thead", {}, [el("tr", {}, heads.map(function (h) { return el("th", {}, [h]); }))]),
      el("tbody", {}, rows)]);
  }
  function drawRanking(view, group, total) {
    var calls = {};
    var unranked = [];
    group.nodes.forEach(function (node) {
      node.calls.forEach(function (c) {
        if (!c.in_group) { return; }
        calls[c.index] = c;
        if (c.result.status !== "complete") { unranked.push(c); }
      });
    });
    var compute = ["module_flops", "operator_flops", "macs", "dmas"].indexOf(view) >= 0;
    var rows = group.ranking.map(function (row, i) {
      var c = calls[row.index];
      var cell = [el("a", { href: "#call-" + c.index }, [c.label])];
      if (!compute && c.shared) { cell.push(el("br")); cell.push(el("small", {}, ["shared tensors are accounted to an earlier call"])); }
      return el("tr", {}, [el("td", {}, [String(i + 1)]), el("td", {}, cell),
        el("td", {}, [badge(c.result), " ", el("progress", { max: "1", value: row.fraction }, [row.percent + " of the largest complete call"])]),
        el("td", {}, [c.result.method])]);
    });
    if (!rows.length) { rows = [el("tr", {}, [el("td", { colspan: "4" }, ["No complete calls in this group."])])]; }
    return el("div", { "class": "ranking-group" }, [
      el("p", {}, ["Authoritative model total: ", badgeParts(data.maps[currentBuild].total_parts)]),
      el("table", {}, [el("caption", {}, ["Top complete calls in " + group.label + " (ranks restart in each method group; bars compare with the largest complete call, not a share of the total)"]),
        el("thead", {}, [el("tr", {}, ["Rank", "Call", "Value", "Method"].map(function (h) { return el("th", {}, [h]); }))]),
        el("tbody", {}, rows)]),
      el("details", {}, [el("summary", {}, ["Unranked incomplete or absent measurements (" + unranked.length + ")"]),
        el("ul", {}, unranked.map(function (c) { return el("li", {}, [el("a", { href: "#call-" + c.index }, [c.label]), ": " + c.display]); }))])]);
  }
  function buildPanel(panel) {
    var view = panel.getAttribute("data-view");
    var map = data.maps[view];
    currentBuild = view;
    var total = [el("p", {}, ["Authoritative model total: ", badgeParts(map.total_parts)])];
    if (data.before && map.comparison_delta) { total[0].appendChild(document.createTextNode(" · change " + map.change_text)); }
    var toolbar = el("div", { "class": "toolbar", role: "toolbar", "aria-label": "Map controls" }, [
      ["collapse", "Collapse branch"], ["zoom", "Zoom into branch"], ["up", "Parent module"], ["reset", "Reset map"]].map(function (pair) {
      return el("button", { type: "button", "data-action": pair[0], disabled: "" }, [pair[1]]);
    }));
    var column = el("div", { "class": "map-column" }, [
      el("h3", { "class": "panel-title" }, [map.label + " by module"]),
      el("p", { "class": "note" }, ["This is the module hierarchy of executed calls, not a computational graph. Tile width is the known recorded value of a module and its descendants within one method group; hatched tiles are lower bounds and grey tiles are unknown or unscaled."]),
      total[0], toolbar]);
    if (data.before) {
      column.appendChild(el("p", { "class": "bar-legend" }, [el("span", { "class": "swatch bar-before" }), " before (baseline) ",
        el("span", { "class": "swatch bar-after" }), " after · both bars of every tile share one scale per map; Δ is the branch subtotal after minus before (a removed branch is -before, an added one +after)"]));
    }
    var rails = [];
    var tops = [];
    var rankings = [];
    map.groups.forEach(function (group) {
      column.appendChild(el("section", { "class": "map-group", "aria-labelledby": "title-" + group.id }, [
        el("h4", { id: "title-" + group.id }, [group.heading]),
        el("div", { "class": "map-scroll" }, [drawMap(group)])]));
      var rail = drawRail(group);
      if (rail) { rails.push(rail); }
      var types = drawByType(group);
      if (types) { tops.push(types); }
      var top = drawTop(group);
      if (top) { tops.push(top); }
      rankings.push(drawRanking(view, group, map.total));
    });
    if (!rails.length) { rails.push(el("p", {}, ["Every module with a value is drawn at its size."])); }
    column.appendChild(el("div", { "class": "rail", "aria-label": "Modules the map cannot size" }, [el("h4", {}, ["Rail: unknown, tiny and zero modules"])].concat(rails)));
    column.appendChild(el("section", { "class": "top", "aria-label": "Largest calls" }, tops));
    column.appendChild(el("details", { "class": "ranking" }, [el("summary", {}, ["Rankings of complete calls"])].concat(rankings)));
    var aside = el("aside", { "data-inspector": "", "aria-live": "polite", "aria-label": "Inspector" }, []);
    panel.replaceChildren(column, aside);
    panel.removeAttribute("data-lazy");
    panel.querySelectorAll("svg.module-map").forEach(function (svg) {
      originals.set(svg, { viewBox: svg.getAttribute("viewBox"), height: Number(svg.getAttribute("height")) });
    });
  }
  function sortTop(button) {
    var table = button.closest("table");
    var key = button.getAttribute("data-sort");
    var th = button.closest("th");
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    function value(row) {
      if (key === "type") { return row.getAttribute("data-type"); }
      if (key === "value") { return -Number(row.getAttribute("data-rank")); }
      return Number(row.getAttribute("data-" + key));
    }
    rows.sort(function (a, b) {
      var x = value(a);
      var y = value(b);
      var order = x < y ? -1 : (x > y ? 1 : Number(a.getAttribute("data-rank")) - Number(b.getAttribute("data-rank")));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }