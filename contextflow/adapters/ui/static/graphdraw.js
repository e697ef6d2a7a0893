// Drawing the graph with Cytoscape.js (vendor/). No force simulation: positions are computed in one
// pass, so 2,000 nodes settle at once. A filter's view groups its nodes by type or by project (a
// labelled box each, its nodes packed in a disc, the discs in rows); a neighbourhood is drawn in
// rings around its node, one ring per hop. Choosing a node lights it and its neighbours up. A view of
// more than BIG nodes draws the edges of the chosen node only: thousands of edges at once are a
// hairball nobody reads, and the slowest part to draw.
import cytoscape from "./vendor/cytoscape.esm.min.js";

export const TYPES = ["fact", "decision", "pattern", "observation", "hypothesis", "task", "summary", "source",
  "open-question"];
export const TIERS = ["pinned", "reference", "working", "off-context"];
const COLOURS = { fact: "#1f77b4", decision: "#d62728", pattern: "#2ca02c", observation: "#ff7f0e", hypothesis: "#9467bd",
  task: "#8c564b", summary: "#17becf", source: "#7f7f7f", "open-question": "#e377c2" };
const STEP = 34;  // px between neighbouring nodes
const BIG = 300;  // nodes from which only the chosen node's edges are drawn

export function clip(text, n) {
  const one = String(text || "").replace(/\s+/g, " ");
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

export function tierOf(tags) {
  for (const tier of TIERS) if (tags.includes("tier:" + tier)) return tier;
  return "";
}

function projectOf(tags) {
  const tag = tags.find((t) => t.startsWith("project:"));
  return tag ? tag.slice("project:".length) : "no project";
}

function dark() {
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
}

function styles(big) {
  const fg = dark() ? "#e8e8e8" : "#1a1a1a";
  const bg = dark() ? "#1c1f24" : "#f4f5f7";
  const edge = { width: 1.2, "line-color": "#8a8f98", "target-arrow-color": "#8a8f98", "target-arrow-shape": "triangle",
    "arrow-scale": 0.8, "curve-style": big ? "straight" : "bezier", "font-size": 9, color: fg,
    "text-rotation": "autorotate", "text-outline-color": bg, "text-outline-width": 2, "min-zoomed-font-size": 7 };
  if (!big) edge.label = "data(type)";
  const node = { "background-color": "data(colour)", color: fg, "font-size": 11, "text-valign": "bottom", "text-margin-y": 3,
    "text-outline-color": bg, "text-outline-width": 2, width: 16, height: 16, "min-zoomed-font-size": 8, "border-width": 1,
    "border-color": fg };
  if (!big) node.label = "data(label)";  // a big view labels the chosen node and its neighbours only
  return [
    { selector: "node", style: node },
    { selector: "edge", style: { "z-index-compare": "manual", "z-index": 2 } },
    { selector: "node.item", style: { "z-index-compare": "manual", "z-index": 6 } },  // above every edge
    { selector: "node.group", style: { label: "data(label)", shape: "round-rectangle", width: "data(size)",
      height: "data(size)", "background-color": fg, "background-opacity": 0.04, "border-style": "dashed",
      "border-color": "#8a8f98", "border-width": 1, "text-valign": "top", "text-halign": "center", "text-margin-y": -4,
      "font-size": 16, "font-weight": "bold", "min-zoomed-font-size": 4, events: "no", "z-index-compare": "manual",
      "z-index": 0 } },
    { selector: "node.pinned", style: { width: 22, height: 22, "border-width": 3 } },
    { selector: "node.off-context", style: { opacity: 0.5 } },
    { selector: "node.root", style: { shape: "diamond", width: 26, height: 26 } },
    { selector: "node:selected", style: { "border-color": "#e8a200", "border-width": 5 } },
    { selector: "edge", style: edge },
    { selector: "edge[type = 'SUPERSEDES']", style: { "line-style": "dashed" } },
    { selector: ".faded", style: { opacity: 0.25 } },
    { selector: "edge.near", style: { width: 2.4, label: "data(type)", "line-color": "#e8a200", "target-arrow-color": "#e8a200",
      "z-index": 4 } },
    { selector: "node.near", style: { "z-index": 9, label: "data(label)", "min-zoomed-font-size": 4 } },
  ];
}

function item(n, data, position, group) {
  return { group: "nodes", position, classes: ["item", tierOf(n.tags), n.id === data.around ? "root" : ""].join(" ").trim(),
    data: { id: n.id, label: clip(n.content, 24), colour: COLOURS[n.type] || "#555555", group } };
}

// Node i of a disc: a sunflower pattern, evenly spread however many there are.
function sunflower(i) {
  const r = STEP * 0.62 * Math.sqrt(i + 0.5) * 1.6;
  const a = i * 2.39996323;
  return { x: r * Math.cos(a), y: r * Math.sin(a) };
}

// A filter's view: one box per type (or project), biggest first, packed in rows shaped like the picture.
function grouped(data, by, aspect) {
  const groups = new Map();
  for (const n of data.nodes) {
    const name = by === "project" ? projectOf(n.tags) : by === "type" ? n.type : "";
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(n);
  }
  const discs = [...groups].map(([name, nodes]) => ({ name, nodes, r: STEP * Math.sqrt(nodes.length) + STEP }))
    .sort((a, b) => b.nodes.length - a.nodes.length);
  const area = discs.reduce((sum, d) => sum + 4 * d.r * d.r, 0);
  const width = Math.max(Math.sqrt(area * aspect) * 1.15, discs.length ? 2 * discs[0].r : 0);
  const out = [];
  let x = 0, y = 0, row = 0;
  for (const d of discs) {
    if (x > 0 && x + 2 * d.r > width) { x = 0; y += row + 3 * STEP; row = 0; }
    const cx = x + d.r, cy = y + d.r;
    x += 2 * d.r + 3 * STEP;
    row = Math.max(row, 2 * d.r);
    // a box behind each group (not a compound node: 2,000 children make Cytoscape.js twice as slow to start)
    if (by) out.push({ group: "nodes", classes: "group", selectable: false, grabbable: false, position: { x: cx, y: cy },
      data: { id: "group:" + d.name, label: d.name + " (" + d.nodes.length + ")", size: 2 * d.r, name: d.name } });
    d.nodes.forEach((n, i) => { const p = sunflower(i); out.push(item(n, data, { x: cx + p.x, y: cy + p.y }, d.name)); });
  }
  return out;
}

// A neighbourhood: its node in the middle, each hop a ring further out.
function rings(data) {
  const next = new Map(data.nodes.map((n) => [n.id, []]));
  for (const e of data.edges) {
    if (next.has(e.from) && next.has(e.to)) { next.get(e.from).push(e.to); next.get(e.to).push(e.from); }
  }
  const hop = new Map([[data.around, 0]]);
  const queue = [data.around];
  for (let i = 0; i < queue.length; i++) {
    for (const other of next.get(queue[i]) || []) if (!hop.has(other)) { hop.set(other, hop.get(queue[i]) + 1); queue.push(other); }
  }
  const ring = new Map();
  for (const n of data.nodes) {
    const k = hop.has(n.id) ? hop.get(n.id) : 1;
    if (!ring.has(k)) ring.set(k, []);
    ring.get(k).push(n);
  }
  const out = [];
  let radius = 0;
  for (const k of [...ring.keys()].sort((a, b) => a - b)) {
    const nodes = ring.get(k);
    radius = k === 0 ? 0 : Math.max(radius + 4 * STEP, (nodes.length * STEP * 1.3) / (2 * Math.PI));
    nodes.forEach((n, i) => {
      const a = (2 * Math.PI * i) / nodes.length + k * 0.4;
      out.push(item(n, data, { x: radius * Math.cos(a), y: radius * Math.sin(a) }, ""));
    });
  }
  return out;
}

function edges(data) {
  const ids = new Set(data.nodes.map((n) => n.id));
  return data.edges.filter((e) => ids.has(e.from) && ids.has(e.to)).map((e, i) => ({
    group: "edges", data: { id: "e" + i, source: e.from, target: e.to, type: e.type } }));
}

const held = new WeakMap();  // a big view's edges, by node id: drawn when their node is chosen

// Draws `data` in `container`; `by`: "type", "project" or "" (a filter's view). Returns the Cytoscape
// instance; the container gets data-ready and data-layout-ms (the time to build and place it).
export function draw(container, data, by) {
  const began = performance.now();
  const big = data.nodes.length > BIG;
  const aspect = Math.min(3, Math.max(0.5, container.clientWidth / Math.max(1, container.clientHeight)));
  const nodes = data.around ? rings(data) : grouped(data, by, aspect);
  const lines = edges(data);
  const cy = cytoscape({ container, elements: big ? nodes : [...nodes, ...lines], style: styles(big),
    layout: { name: "preset" }, minZoom: 0.02, maxZoom: 4, boxSelectionEnabled: false, hideEdgesOnViewport: big,
    textureOnViewport: big, pixelRatio: 1 });
  if (big) {
    const byNode = new Map();
    for (const line of lines) {
      for (const end of [line.data.source, line.data.target]) {
        if (!byNode.has(end)) byNode.set(end, []);
        byNode.get(end).push(line);
      }
    }
    held.set(cy, byNode);
  }
  cy.fit(undefined, 30);
  if (cy.zoom() > 1.5) { cy.zoom(1.5); cy.center(); }  // a few nodes: not blown up to fill the picture
  cy.nodes(".group").style("font-size", Math.max(16, 15 / cy.zoom()));  // the groups' names readable at any size
  container.dataset.layoutMs = String(Math.round(performance.now() - began));
  return cy;
}

// Lights a node and its neighbours up (the rest fades in a big view); none: every light off.
export function highlight(cy, id) {
  cy.batch(() => {
    const byNode = held.get(cy);
    if (byNode) {  // a big view: only the chosen node's edges
      cy.edges().remove();
      if (id && byNode.has(id)) cy.add(byNode.get(id));
    }
    cy.elements().removeClass("near faded");
    const node = id ? cy.$id(id) : cy.collection();
    if (!node.length) return;
    const near = node.closedNeighborhood();
    near.addClass("near");
    if (cy.nodes(".item").length > 40) cy.elements().not(near).not(".group").addClass("faded");
  });
}
