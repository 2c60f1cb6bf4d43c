// Memory Forest browse site: document filter (index page) and graph view (graph page).
// Plain DOM APIs only; memory text is only ever set with textContent or setAttribute,
// never parsed as HTML. The graph data comes from a JSON island, not from script.
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";

  function terms(query) {
    return (query || "").toLowerCase().split(/\s+/).filter(Boolean);
  }

  function matches(key, words) {
    for (var i = 0; i < words.length; i++) {
      if (key.indexOf(words[i]) === -1) return false;
    }
    return true;
  }

  function initialQuery() {
    try {
      return new URLSearchParams(window.location.search).get("q") || "";
    } catch (e) {
      return "";
    }
  }

  // --- index: filter documents by title and path ---------------------------------------------

  function setupFilter() {
    var input = document.getElementById("filter");
    var table = document.getElementById("docs");
    if (!input || !table) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var keys = rows.map(function (row) { return row.getAttribute("data-key") || ""; });
    var counter = document.getElementById("filter-count");

    function apply() {
      var words = terms(input.value);
      var shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var ok = matches(keys[i], words);
        rows[i].hidden = !ok;
        if (ok) shown++;
      }
      if (counter) counter.textContent = shown + " of " + rows.length + " shown";
    }

    input.addEventListener("input", apply);
    input.value = initialQuery();
    apply();
  }

  // --- graph: SVG drawn from precomputed positions ----------------------------------------------

  function svgEl(name, attrs) {
    var el = document.createElementNS(SVG_NS, name);
    for (var key in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, key)) el.setAttribute(key, attrs[key]);
    }
    return el;
  }

  function isRelative(url) {
    return typeof url === "string" && !/^[a-z][a-z0-9+.\-]*:/i.test(url) && url.indexOf("//") !== 0;
  }

  function edgePath(nodes, pairs) {
    var parts = [];
    for (var i = 0; i < pairs.length; i++) {
      var a = nodes[pairs[i][0]], b = nodes[pairs[i][1]];
      if (a && b) parts.push("M" + a[0] + " " + a[1] + "L" + b[0] + " " + b[1]);
    }
    return parts.join("");
  }

  function setupGraph() {
    var island = document.getElementById("graph-data");
    var svg = document.getElementById("graph");
    if (!island || !svg) return;
    var data = JSON.parse(island.textContent);
    var nodes = data.nodes;
    var radius = data.radius || {};
    var status = document.getElementById("graph-status");

    var edges = svgEl("g", { "class": "edges" });
    edges.appendChild(svgEl("path", { "class": "edge own", d: edgePath(nodes, data.own) }));
    edges.appendChild(svgEl("path", { "class": "edge link", d: edgePath(nodes, data.link) }));
    svg.appendChild(edges);

    var layerCounts = {};
    nodes.forEach(function (n) { layerCounts[n[2]] = (layerCounts[n[2]] || 0) + 1; });
    function labelled(layer) {  // hover shows every title; permanent labels only where they fit
      if (nodes.length <= 150 || layer === 1) return true;
      return (layer === 2 || layer === 3) && (layerCounts[layer] || 0) <= 60;
    }
    var fontSize = { 0: 14, 1: 30, 2: 25, 3: 19, 4: 15, 5: 14 };
    // Smallest size on screen, in pixels, whatever the zoom: a large forest stays visible.
    var minRadiusPx = { 0: 2.5, 1: 7, 2: 5, 3: 3.5, 4: 2, 5: 2 };
    var minFontPx = { 0: 10, 1: 14, 2: 12, 3: 11, 4: 10, 5: 10 };

    var group = svgEl("g", { "class": "nodes" });
    var labels = svgEl("g", { "class": "labels" });
    var anchors = [];
    var circles = [];
    var texts = [];
    var bounds = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
    nodes.forEach(function (n) {
      var x = n[0], y = n[1], layer = n[2], title = String(n[3]), path = String(n[4]);
      var r = Number(radius[layer]) || 12;
      var link = svgEl("a", { "class": "g" + layer });
      if (isRelative(n[5])) link.setAttribute("href", n[5]);
      var circle = svgEl("circle", { "class": "node l" + layer, cx: x, cy: y, r: r });
      circles.push([circle, r, layer]);
      var tip = svgEl("title", {});
      tip.textContent = title + " \u2014 " + path;
      circle.appendChild(tip);
      link.appendChild(circle);
      group.appendChild(link);
      anchors.push({ el: link, key: (title + "\n" + path).toLowerCase() });
      if (labelled(layer)) {
        var text = svgEl("text", { "class": "label g" + layer, x: x + r * 1.3, y: y,
                                   "font-size": fontSize[layer] || 30, "dominant-baseline": "middle" });
        text.textContent = title.length > 48 ? title.slice(0, 47) + "\u2026" : title;
        labels.appendChild(text);
        texts.push([text, x, r, layer]);
      }
      bounds.minX = Math.min(bounds.minX, x - r); bounds.maxX = Math.max(bounds.maxX, x + r);
      bounds.minY = Math.min(bounds.minY, y - r); bounds.maxY = Math.max(bounds.maxY, y + r);
    });
    svg.appendChild(group);
    svg.appendChild(labels);

    if (!nodes.length) bounds = { minX: -500, minY: -500, maxX: 500, maxY: 500 };
    var pad = Math.max(60, 0.04 * Math.max(bounds.maxX - bounds.minX, bounds.maxY - bounds.minY));
    var view = { x: bounds.minX - pad, y: bounds.minY - pad,
                 w: bounds.maxX - bounds.minX + 2 * pad + 260, h: bounds.maxY - bounds.minY + 2 * pad };
    var scaled = 0, pending = false;
    function rescale() {  // keep nodes and labels readable at every zoom level
      pending = false;
      var rect = svg.getBoundingClientRect();
      if (!rect.width || !rect.height) return;
      var unitsPerPx = Math.max(view.w / rect.width, view.h / rect.height);
      if (scaled && Math.abs(unitsPerPx - scaled) / scaled < 0.05) return;
      scaled = unitsPerPx;
      circles.forEach(function (c) {
        c[0].setAttribute("r", Math.max(c[1], minRadiusPx[c[2]] * unitsPerPx));
      });
      texts.forEach(function (t) {
        var r = Math.max(t[2], minRadiusPx[t[3]] * unitsPerPx);
        t[0].setAttribute("x", t[1] + r * 1.3);
        t[0].setAttribute("font-size", Math.max(fontSize[t[3]] || 30, minFontPx[t[3]] * unitsPerPx));
      });
    }
    function show() {
      svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" "));
      if (!pending) { pending = true; window.requestAnimationFrame(rescale); }
    }
    show();
    rescale();
    if (status) status.textContent = nodes.length + " nodes, " + data.own.length +
      " ownership edges, " + data.link.length + " other links";

    // Zoom around the pointer.
    svg.addEventListener("wheel", function (event) {
      event.preventDefault();
      var rect = svg.getBoundingClientRect();
      var scale = Math.max(view.w / rect.width, view.h / rect.height);
      var px = view.x + (event.clientX - rect.left) * scale;
      var py = view.y + (event.clientY - rect.top) * scale;
      var factor = Math.exp(Math.max(-300, Math.min(300, event.deltaY)) * 0.002);
      view.x = px - (px - view.x) * factor; view.y = py - (py - view.y) * factor;
      view.w *= factor; view.h *= factor;
      show();
    }, { passive: false });

    // Drag to pan; a drag never counts as a click on a node.
    var drag = null, dragged = false;
    svg.addEventListener("pointerdown", function (event) {
      drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y };
      dragged = false;
    });
    window.addEventListener("pointermove", function (event) {
      if (!drag) return;
      var dx = event.clientX - drag.x, dy = event.clientY - drag.y;
      if (!dragged && Math.abs(dx) + Math.abs(dy) < 5) return;
      dragged = true;
      svg.classList.add("dragging");
      var rect = svg.getBoundingClientRect();
      var scale = Math.max(view.w / rect.width, view.h / rect.height);
      view.x = drag.vx - dx * scale; view.y = drag.vy - dy * scale;
      show();
    });
    window.addEventListener("pointerup", function () {
      drag = null;
      svg.classList.remove("dragging");
    });
    svg.addEventListener("click", function (event) {
      if (dragged) { event.preventDefault(); event.stopPropagation(); dragged = false; }
    }, true);

    // Layer toggles.
    Array.prototype.forEach.call(document.querySelectorAll("input[data-layer]"), function (box) {
      box.addEventListener("change", function () {
        svg.classList.toggle("hide-l" + box.getAttribute("data-layer"), !box.checked);
      });
    });

    // Highlight by title or path.
    var find = document.getElementById("graph-find");
    if (find) {
      var highlight = function () {
        var words = terms(find.value);
        var hits = 0;
        anchors.forEach(function (a) {
          var hit = words.length > 0 && matches(a.key, words);
          a.el.classList.toggle("hit", hit);
          if (hit) hits++;
        });
        svg.classList.toggle("finding", words.length > 0);
        if (status && words.length) status.textContent = hits + " of " + nodes.length + " match";
      };
      find.addEventListener("input", highlight);
      find.value = initialQuery();
      highlight();
    }
  }

  function start() {
    setupFilter();
    setupGraph();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
