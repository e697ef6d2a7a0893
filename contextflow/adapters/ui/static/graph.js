// The knowledge graph as a picture (positions come from the server), filters, and a node's details.
import { button, field, get, h, post, pre, rerender, route, when } from "./app.js";

const SVG = "http://www.w3.org/2000/svg";
const TYPES = ["fact", "decision", "pattern", "observation", "hypothesis", "task", "summary", "source", "open-question"];
const TIERS = ["pinned", "reference", "working", "off-context"];

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

function clip(text, n) {
  const one = String(text || "").replace(/\s+/g, " ");
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

function tierOf(tags) {
  for (const tier of TIERS) if (tags.includes("tier:" + tier)) return tier;
  return "";
}

function picture(data, selected, choose) {
  const svg = s("svg", { viewBox: "0 0 1000 700", role: "group", "aria-label": "Knowledge graph: " + data.count
    + " nodes, " + data.edges.length + " edges", class: "graph" });
  const defs = s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 19, refY: 5, markerWidth: 7,
    markerHeight: 7, orient: "auto-start-reverse" }, s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" })));
  svg.append(defs);
  const at = data.layout;
  for (const edge of data.edges) {
    const a = at[edge.from];
    const b = at[edge.to];
    if (!a || !b) continue;
    svg.append(s("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "edge edge-" + edge.type.toLowerCase(),
      "marker-end": "url(#arrow)" }, s("title", {}, edge.type)));
  }
  for (const node of data.nodes) {
    const [x, y] = at[node.id];
    const type = TYPES.includes(node.type) ? node.type : "other";
    const tier = tierOf(node.tags);
    const group = s("g", { class: "node type-" + type + (tier ? " tier-" + tier : "") + (node.id === selected ? " selected" : ""),
      transform: "translate(" + x + " " + y + ")", tabindex: 0, role: "button", "data-id": node.id,
      "aria-label": node.type + (tier ? ", " + tier : "") + ": " + clip(node.content, 80) });
    const left = x > 720;  // labels of nodes near the right edge go to their left
    group.append(s("circle", { r: tier === "pinned" ? 11 : 8 }),
      s("text", { x: left ? -14 : 14, y: 5, "text-anchor": left ? "end" : "start" }, clip(node.content, 28)));
    group.addEventListener("click", () => choose(node.id));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); choose(node.id); }
    });
    svg.append(group);
  }
  return svg;
}

function legend() {
  return h("ul", { class: "legend", "aria-label": "Node types" },
    TYPES.map((type) => h("li", {}, h("span", { class: "swatch type-" + type, "aria-hidden": "true" }), type)));
}

async function details(id, onChange) {
  const n = await get("node", { id });
  const tier = tierOf(n.tags);
  const act = (action, extra) => async () => {
    await post("node", { id: n.id, action, ...(extra || {}) });
    onChange(action === "forget" ? null : n.id);
  };
  const tagInput = h("input", { type: "text", value: n.tags.join(", "), placeholder: "namespace:value, ..." });
  const tagForm = h("form", { class: "inline" }, field("Tags", tagInput), h("button", { type: "submit" }, "Save tags"));
  tagForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const wanted = tagInput.value.split(",").map((t) => t.trim()).filter(Boolean);
    await act("tags", { add_tags: wanted.filter((t) => !n.tags.includes(t)),
      remove_tags: n.tags.filter((t) => !wanted.includes(t)) })();
  });
  const edges = [...n.edges_out.map((e) => ["→ " + e.type + " ", e.to]), ...n.edges_in.map((e) => ["← " + e.type + " ", e.from])];
  return h("section", { class: "detail", id: "node-detail", "aria-label": "Node details" },
    h("h2", {}, n.type + (tier ? " (" + tier + ")" : "")),
    h("p", { class: "meta" }, ["id " + n.id, "agent " + (n.agent || "unknown"), "machine " + n.writer,
      "created " + when(n.created_at), "updated " + when(n.updated_at), n.token_estimate + " tokens"].join(" · ")),
    n.superseded_by ? h("p", { class: "badge bad" }, "superseded by " + n.superseded_by) : null,
    pre(n.content, { class: "text", id: "node-content" }),
    n.summary ? h("p", {}, "Summary: ", n.summary) : null,
    Object.keys(n.metadata || {}).length ? pre(JSON.stringify(n.metadata, null, 2)) : null,
    edges.length ? h("ul", { class: "edges" }, edges.map(([label, other]) => h("li", {}, label,
      button(other, () => onChange(other), { class: "linkish" })))) : null,
    h("div", { class: "actions" },
      tier === "pinned" ? button("Unpin", act("unpin")) : button("Pin", act("pin")),
      tier === "off-context" ? button("Unarchive", act("unarchive")) : button("Archive", act("archive")),
      button("Forget (delete)", act("forget"), { class: "danger" })),
    tagForm);
}

export async function graphPage(_, query) {
  const filters = { q: query.get("q") || "", type: query.get("type") || "", tag: query.get("tag") || "",
    tier: query.get("tier") || "" };
  const selected = query.get("node") || "";
  const data = await get("graph", filters);
  const text = h("input", { type: "text", value: filters.q, placeholder: "graph query, e.g. auth AND created:>7d" });
  const type = h("select", {}, h("option", { value: "" }, "every type"),
    TYPES.map((t) => h("option", { value: t, selected: t === filters.type }, t)));
  const tag = h("input", { type: "text", value: filters.tag, placeholder: "project:shop" });
  const tier = h("select", {}, h("option", { value: "" }, "every tier"),
    TIERS.map((t) => h("option", { value: t, selected: t === filters.tier }, t)));
  const form = h("form", { class: "filters" }, field("Query", text), field("Type", type), field("Tag", tag),
    field("Tier", tier), h("button", { type: "submit" }, "Filter"));
  const go = (node) => {
    location.hash = route("/graph", null, { q: text.value, type: type.value, tag: tag.value, tier: tier.value,
      node: node || "" });
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); go(selected); });
  const choose = (id) => {
    if (id === selected) rerender(); else go(id);
  };
  const side = selected ? await details(selected, choose).catch((error) => h("p", { class: "error" }, error.message))
    : h("p", { class: "hint" }, "Choose a node (click, or Tab then Enter) to see its content and provenance.");
  return h("section", {}, h("h1", {}, "Knowledge graph"), form,
    h("p", { class: "meta" }, "Showing " + data.count + " of " + data.total + " nodes" + (data.query ? " for " + data.query : "")
      + (data.total > data.count ? " (the most recently updated; narrow the filters to see others)" : "")),
    h("div", { class: "graph-layout" }, h("div", { class: "canvas" }, picture(data, selected, choose), legend()), side));
}
