// The tool graph page: Cytoscape.js draws the elements the server placed (each job in a box,
// one column per DAG layer). Colour = edge type, line style = edge source, width = weight.
// The drawing is fitted to its box, but never so small that a label is hard to read (nor so
// large that one job fills the screen): past that, it is dragged to be seen. `window.cy` is
// the instance, for the browser tests.
(function () {
  "use strict";
  var TYPE_COLOURS = {
    dependency: "#1f5fbf",
    contains: "#8a8f99",
    provides: "#1a7f37",
    sequence: "#c77700",
  };
  var LINE_STYLES = { observed: "solid", inferred: "dashed", template: "dotted" };
  // Louvain communities (related endpoints): a ring of the group's colour round each member.
  var GROUP_COLOURS = ["#b0307a", "#2a8c8c", "#7a4fc4", "#b8860b", "#3b7d23", "#c2410c"];
  var READABLE_ZOOM = 1; // labels at their 12 px
  var LARGEST_ZOOM = 1.6;
  var style = [
    {
      selector: "node",
      style: {
        label: "data(label)",
        "font-size": 12,
        "text-valign": "bottom",
        "text-margin-y": 4,
        "background-color": "#1d2330",
        width: 22,
        height: 22,
      },
    },
    {
      selector: 'node[kind = "job"]',
      style: { shape: "round-rectangle", width: 34, height: 22, "background-color": "#5b6475" },
    },
    {
      selector: 'node[kind = "layer"]',
      style: {
        "background-opacity": 0,
        "font-size": 13,
        "font-weight": "bold",
        color: "#5b6475",
        "text-valign": "center",
        events: "no",
      },
    },
    {
      selector: 'node[kind = "box"]',
      style: {
        shape: "round-rectangle",
        "background-color": "#f4f6f9",
        "border-width": 1,
        "border-color": "#d9dde5",
        padding: 12,
        events: "no",
      },
    },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#f2a900" } },
    {
      selector: "edge",
      style: {
        "curve-style": "bezier",
        "target-arrow-shape": "triangle",
        "arrow-scale": 0.9,
        width: "mapData(weight, 0, 1, 1, 7)",
        opacity: 0.9,
      },
    },
  ];
  Object.keys(TYPE_COLOURS).forEach(function (type) {
    style.push({
      selector: 'edge[type = "' + type + '"]',
      style: { "line-color": TYPE_COLOURS[type], "target-arrow-color": TYPE_COLOURS[type] },
    });
  });
  style.push({
    selector: "node[community]",
    style: {
      "border-width": 4,
      "border-color": function (node) {
        return GROUP_COLOURS[(node.data("community") - 1) % GROUP_COLOURS.length];
      },
    },
  });
  Object.keys(LINE_STYLES).forEach(function (origin) {
    style.push({
      selector: 'edge[origin = "' + origin + '"]',
      style: { "line-style": LINE_STYLES[origin] },
    });
  });

  var box = document.getElementById("graph");
  var elements = JSON.parse(document.getElementById("graph-data").textContent);
  var cy = cytoscape({
    container: box,
    elements: elements,
    style: style,
    layout: { name: "preset", fit: true, padding: 20 },
    wheelSensitivity: 0.3,
  });
  if (cy.zoom() < READABLE_ZOOM) {
    // Too many jobs to read at once: readable size from the top left, the rest a drag away.
    cy.zoom(READABLE_ZOOM);
    var drawn = cy.elements().boundingBox();
    cy.pan({ x: 20 - drawn.x1 * READABLE_ZOOM, y: 20 - drawn.y1 * READABLE_ZOOM });
  } else if (cy.zoom() > LARGEST_ZOOM) {
    cy.zoom(LARGEST_ZOOM);
    cy.center();
  }
  cy.on("tap", "node[href]", function (event) {
    window.location.assign(event.target.data("href"));
  });
  cy.on("mouseover", "node[href]", function () { box.style.cursor = "pointer"; });
  cy.on("mouseout", "node[href]", function () { box.style.cursor = ""; });
  window.cy = cy;
})();
