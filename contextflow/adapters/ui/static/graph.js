// The knowledge graph, drawn by Cytoscape.js (vendor/, shipped in the package): zoom and pan, edge
// labels, every node clickable (and reachable by keyboard from the list under the picture); a first
// view of the most recently updated nodes a filter matches, or the neighbourhood of a chosen node.
import cytoscape from "./vendor/cytoscape.esm.min.js";
import { button, confirmed, field, get, h, link, post, pre, rerender, route, undoable, when } from "./app.js";

const TYPES = ["fact", "decision", "pattern", "observation", "hypothesis", "task", "summary", "source", "open-question"];
const TIERS = ["pinned", "reference", "working", "off-context"];
const COLOURS = { fact: "#1f77b4", decision: "#d62728", pattern: "#2ca02c", observation: "#ff7f0e", hypothesis: "#9467bd",
  task: "#8c564b", summary: "#17becf", source: "#7f7f7f", "open-question": "#e377c2" };

function clip(text, n) {
  const one = String(text || "").replace(/\s+/g, " ");
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

function tierOf(tags) {
  for (const tier of TIERS) if (tags.includes("tier:" + tier)) return tier;
  return "";
}

function dark() {
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
}

function styles() {
  const fg = dark() ? "#e8e8e8" : "#1a1a1a";
  const bg = dark() ? "#1c1f24" : "#f4f5f7";
  return [
    { selector: "node", style: { "background-color": "data(colour)", label: "data(label)", color: fg, "font-size": 11,
      "text-valign": "bottom", "text-margin-y": 3, "text-outline-color": bg, "text-outline-width": 2, width: 16, height: 16,
      "min-zoomed-font-size": 7, "border-width": 1, "border-color": fg } },
    { selector: "node.pinned", style: { width: 22, height: 22, "border-width": 3 } },
    { selector: "node.off-context", style: { opacity: 0.5 } },
    { selector: "node.root", style: { shape: "diamond", width: 26, height: 26 } },
    { selector: "node:selected", style: { "border-color": "#e8a200", "border-width": 5 } },
    { selector: "edge", style: { width: 1.4, "line-color": "#8a8f98", "target-arrow-color": "#8a8f98",
      "target-arrow-shape": "triangle", "curve-style": "bezier", label: "data(type)", "font-size": 9, color: fg,
      "text-rotation": "autorotate", "text-outline-color": bg, "text-outline-width": 2, "min-zoomed-font-size": 7 } },
    { selector: "edge[type = 'SUPERSEDES']", style: { "line-style": "dashed" } },
  ];
}

function elements(data) {
  const ids = new Set(data.nodes.map((n) => n.id));
  const count = data.nodes.length;
  const radius = 40 * Math.sqrt(count + 1);
  const nodes = data.nodes.map((n, i) => ({
    group: "nodes",
    data: { id: n.id, label: clip(n.content, 24), colour: COLOURS[n.type] || "#555555" },
    classes: [tierOf(n.tags), n.id === data.around ? "root" : ""].filter(Boolean).join(" "),
    position: { x: radius * Math.cos((2 * Math.PI * i) / count), y: radius * Math.sin((2 * Math.PI * i) / count) },
  }));
  const edges = data.edges.filter((e) => ids.has(e.from) && ids.has(e.to)).map((e, i) => ({
    group: "edges", data: { id: "e" + i, source: e.from, target: e.to, type: e.type } }));
  return [...nodes, ...edges];
}

async function details(id, reload) {
  const n = await get("node", { id });
  const tier = tierOf(n.tags);
  const act = (action, done, extra) => async () => {
    await post("node", { id: n.id, action, ...(extra || {}) }, done);
    reload(n.id);
  };
  const forget = async () => {
    if (!await confirmed("Forget this node and its edges? Every agent and machine stops seeing it.", "Forget")) return;
    undoable("Forgetting node " + clip(n.content, 40), 6, async () => {
      await post("node", { id: n.id, action: "forget" }, "Forgot node " + clip(n.content, 40) + " and its edges.");
      reload(null);
    });
  };
  const tagInput = h("input", { type: "text", value: n.tags.join(", "), placeholder: "namespace:value, ..." });
  const tagForm = h("form", { class: "inline" }, field("Tags", tagInput), h("button", { type: "submit" }, "Save tags"));
  tagForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const wanted = tagInput.value.split(",").map((t) => t.trim()).filter(Boolean);
    await act("tags", "Saved the tags of this node: " + (wanted.join(", ") || "none"), {
      add_tags: wanted.filter((t) => !n.tags.includes(t)), remove_tags: n.tags.filter((t) => !wanted.includes(t)) })();
  });
  const edges = [...n.edges_out.map((e) => ["→ " + e.type + " ", e.to]), ...n.edges_in.map((e) => ["← " + e.type + " ", e.from])];
  return h("section", { class: "detail", id: "node-detail", "aria-label": "Node details", "data-id": n.id },
    h("h2", {}, n.type + (tier ? " (" + tier + ")" : "")),
    h("p", { class: "meta" }, ["id " + n.id, "agent " + (n.agent || "unknown"), "machine " + n.writer,
      "created " + when(n.created_at), "updated " + when(n.updated_at), n.token_estimate + " tokens"].join(" · ")),
    n.superseded_by ? h("p", { class: "badge bad" }, "superseded by " + n.superseded_by) : null,
    pre(n.content, { class: "text", id: "node-content" }),
    n.summary ? h("p", {}, "Summary: ", n.summary) : null,
    Object.keys(n.metadata || {}).length ? pre(JSON.stringify(n.metadata, null, 2)) : null,
    edges.length ? h("ul", { class: "edges" }, edges.map(([label, other]) => h("li", {}, label,
      link(route("/graph", null, { around: other }), other)))) : null,
    h("div", { class: "actions" },
      link(route("/graph", null, { around: n.id }), "Its neighbourhood", { class: "button" }),
      tier === "pinned" ? button("Unpin", act("unpin", "Unpinned: it leaves every session start."))
        : button("Pin", act("pin", "Pinned: every session start now carries it.")),
      tier === "off-context" ? button("Unarchive", act("unarchive", "Unarchived: it can reach composed context again."))
        : button("Archive", act("archive", "Archived: it stays, out of composed context.")),
      button("Forget (delete)", forget, { class: "danger" })),
    tagForm);
}

function nodeForm() {
  const type = h("select", {}, TYPES.map((t) => h("option", { value: t, selected: t === "observation" }, t)));
  const content = h("textarea", { rows: "2", maxlength: "20000", placeholder: "the knowledge itself, self-contained" });
  const tags = h("input", { type: "text", placeholder: "project:shop, tier:reference" });
  const form = h("form", { class: "inline add" }, field("Type", type), field("Content", content), field("Tags", tags),
    h("button", { type: "submit" }, "Remember it"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const saved = await post("new-node", { type: type.value, content: content.value, tags: tags.value },
      (d) => "Remembered a " + type.value + " node: " + d.id);
    if (saved) location.hash = route("/graph", null, { node: saved.id });
  });
  return h("details", { class: "adder" }, h("summary", {}, "Add a node"), form);
}

export async function graphPage(_, query) {
  const filters = { q: query.get("q") || "", type: query.get("type") || "", tag: query.get("tag") || "",
    tier: query.get("tier") || "", limit: query.get("limit") || "" };
  const around = query.get("around") || "";
  const depth = query.get("depth") || "1";
  let selected = query.get("node") || around;
  const data = await get("graph", around ? { around, depth } : filters);
  const text = h("input", { type: "text", value: filters.q, placeholder: "graph query, e.g. auth AND created:>7d" });
  const type = h("select", {}, h("option", { value: "" }, "every type"),
    TYPES.map((t) => h("option", { value: t, selected: t === filters.type }, t)));
  const tag = h("input", { type: "text", value: filters.tag, placeholder: "project:shop" });
  const tier = h("select", {}, h("option", { value: "" }, "every tier"),
    TIERS.map((t) => h("option", { value: t, selected: t === filters.tier }, t)));
  const form = h("form", { class: "filters" }, field("Query", text), field("Type", type), field("Tag", tag),
    field("Tier", tier), h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/graph", null, { q: text.value, type: type.value, tag: tag.value, tier: tier.value });
  });
  const canvas = h("div", { id: "graph-canvas", class: "canvas", role: "img",
    "aria-label": "Knowledge graph: " + data.count + " nodes, " + data.edges.length + " edges. The list below the picture "
      + "holds the same nodes." });
  const side = h("div", { id: "graph-side" }, h("p", { class: "hint" },
    "Click a node (or choose it in the list under the picture) to see its content, edges and provenance."));
  const where = (node) => route("/graph", null, around ? { around, depth, node } : { ...filters, node });
  let asked = 0;  // clicks in quick succession: only the last one's details are shown
  const reload = async (id) => {
    if (!id) { rerender(); return; }
    const ticket = ++asked;
    const panel = await details(id, reload).catch((error) => h("p", { class: "error" }, error.message));
    if (ticket === asked) side.replaceChildren(panel);
  };
  const choose = async (id) => {
    selected = id;
    history.replaceState(null, "", "#" + where(id));  // no new render: the picture keeps its zoom and place
    if (cy) { cy.$(":selected").unselect(); cy.$id(id).select(); }
    await reload(id);
  };
  let cy = null;  // drawn once the canvas is in the page (it needs its size)
  const zoom = (factor) => cy && cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  const list = h("ul", { class: "node-list" }, data.nodes.map((n) => h("li", {},
    button(n.type + ": " + clip(n.content, 60), () => { choose(n.id); if (cy) cy.animate({ center: { eles: cy.$id(n.id) } }); },
      { class: "linkish", "data-id": n.id }))));
  const changed = h("p", { class: "hint", hidden: true }, "The graph changed since it was drawn. ", button("Draw it again", rerender));
  const view = h("section", { class: "wide", "data-live": "manual" }, h("h1", {}, "Knowledge graph"), form,
    h("p", { class: "meta", id: "graph-count" }, (around
      ? ["The neighbourhood of one node: " + data.count + " nodes within " + depth + (depth === "1" ? " hop" : " hops"),
        depth < "3" ? link(route("/graph", null, { around, depth: String(Number(depth) + 1), node: selected }), "one hop further") : null,
        link("/graph", "back to the whole graph")]
      : ["Showing " + data.count + " of " + data.total + " nodes" + (data.query ? " for " + data.query : "")
        + (data.total > data.count ? " (the most recently updated; filter, or open a node's neighbourhood, to see others)" : ""),
      data.total > data.count && data.count < 500
        ? link(route("/graph", null, { ...filters, limit: String(Math.min(500, data.count * 2)) }), "show more") : null]).filter(Boolean).map((part, i) => [i ? " · " : "", part])),
    h("div", { class: "zoom actions" }, button("Zoom in", () => zoom(1.4)), button("Zoom out", () => zoom(1 / 1.4)),
      button("Fit", () => cy && cy.fit(undefined, 30)), changed),
    canvas, h("div", { class: "legend-row" }, legend()), side, nodeForm(),
    h("details", {}, h("summary", {}, "The " + data.count + " nodes in the picture, as a list"), list));
  view.addEventListener("changed", () => { changed.hidden = false; });
  // lay out once the canvas is in the page (it needs its size)
  requestAnimationFrame(() => {
    if (!canvas.isConnected) return;  // another page replaced this one meanwhile
    cy = cytoscape({ container: canvas, elements: elements(data), style: styles(), minZoom: 0.05, maxZoom: 4,
      boxSelectionEnabled: false });
    canvas._cy = cy;  // for the browser tests
    cy.on("tap", "node", (event) => choose(event.target.id()));
    cy.layout({ name: "cose", animate: false, randomize: false, fit: true, padding: 30, nodeDimensionsIncludeLabels: false,
      idealEdgeLength: () => 45, nodeOverlap: 20, nodeRepulsion: () => 6000, componentSpacing: 40, numIter: 600 }).run();
    if (selected && cy.$id(selected).length) cy.$id(selected).select();
    canvas.dataset.ready = "1";
  });
  if (selected) reload(selected);
  return view;
}

function legend() {
  return h("ul", { class: "legend", "aria-label": "Node types" },
    TYPES.map((type) => h("li", {}, h("span", { class: "swatch type-" + type, "aria-hidden": "true" }), type)));
}
