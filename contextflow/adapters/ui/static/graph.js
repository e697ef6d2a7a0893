// The knowledge graph page: find a node by its words and draw its neighbourhood; or a filter's view of
// up to 2,000 nodes, grouped by type or project (graphdraw.js). A chosen node lights up with its
// neighbours, and its details stand beside the picture (graphdetail.js); every node is also reachable
// by keyboard from the list under the picture.
import { button, field, get, h, link, none, rerender, route } from "./app.js";
import { details, nodeForm } from "./graphdetail.js";
import { TIERS, TYPES, clip, draw, highlight } from "./graphdraw.js";

const MAX_SHOWN = 2000;  // graphview.MAX_SHOWN
const GROUPS = [["type", "type"], ["project", "project"], ["none", "nothing"]];

function filterForm(filters) {
  const text = h("input", { type: "text", value: filters.q, placeholder: "graph query, e.g. auth AND created:>7d" });
  const type = h("select", {}, h("option", { value: "" }, "every type"),
    TYPES.map((t) => h("option", { value: t, selected: t === filters.type }, t)));
  const tag = h("input", { type: "text", value: filters.tag, placeholder: "project:shop" });
  const tier = h("select", {}, h("option", { value: "" }, "every tier"),
    TIERS.map((t) => h("option", { value: t, selected: t === filters.tier }, t)));
  const group = h("select", {}, GROUPS.map(([value, label]) => h("option", { value, selected: value === filters.group }, label)));
  const form = h("form", { class: "filters" }, field("Query", text), field("Type", type), field("Tag", tag),
    field("Tier", tier), field("Group by", group), h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/graph", null, { q: text.value, type: type.value, tag: tag.value, tier: tier.value,
      group: group.value === "type" ? "" : group.value });
  });
  return form;
}

// The nodes whose words match, each opening its neighbourhood.
async function found(text) {
  let data;
  try {
    data = await get("graph", { find: text });
  } catch (error) {
    return h("p", { class: "error", id: "find-results" }, error.message);
  }
  const heading = data.total === 0 ? none("No node holds “" + clip(text, 60) + "”.")
    : data.total + (data.total === 1 ? " node holds " : " nodes hold ") + "“" + clip(text, 60) + "”"
      + (data.total > data.count ? " (the " + data.count + " most recently updated):" : ":");
  return h("section", { id: "find-results", "aria-label": "Nodes found" }, h("h2", {}, heading),
    h("ul", { class: "found" }, data.nodes.map((n) => h("li", {},
      link(route("/graph", null, { around: n.id, node: n.id, find: text }), n.type + ": " + clip(n.content, 90),
        { "data-id": n.id })))));
}

function countLine(data, filters, around, depth, selected, find) {
  if (around) {
    const further = Number(depth) < 3
      ? link(route("/graph", null, { around, depth: String(Number(depth) + 1), node: selected, find }), "one hop further") : null;
    return ["The neighbourhood of one node: " + data.count + " nodes within " + depth + (depth === "1" ? " hop" : " hops"),
      further, link("/graph", "back to the whole graph")];
  }
  const more = Math.min(MAX_SHOWN, data.total, data.count * 2);
  const all = Math.min(MAX_SHOWN, data.total);
  return ["Showing " + data.count + " of " + data.total + " nodes" + (data.query ? " for " + data.query : "")
    + (data.total > data.count ? " (the most recently updated; find a node, filter, or show more)" : ""),
  more > data.count && more < all ? link(route("/graph", null, { ...filters, limit: String(more) }), "show " + more) : null,
  all > data.count ? link(route("/graph", null, { ...filters, limit: String(all) }), "show all " + all) : null];
}

export async function graphPage(_, query) {
  const filters = { q: query.get("q") || "", type: query.get("type") || "", tag: query.get("tag") || "",
    tier: query.get("tier") || "", limit: query.get("limit") || "", group: query.get("group") || "" };
  const by = filters.group === "none" ? "" : filters.group || "type";
  const around = query.get("around") || "";
  const depth = query.get("depth") || "1";
  const find = query.get("find") || "";
  let selected = query.get("node") || around;
  const [data, results] = await Promise.all([get("graph", around ? { around, depth } : filters), find ? found(find) : null]);
  const here = (extra) => route("/graph", null, { ...(around ? { around, depth } : filters), find, ...extra });
  const findInput = h("input", { type: "search", name: "find", value: find, placeholder: "words of a node, e.g. refunds settle" });
  const findForm = h("form", { class: "filters", role: "search" }, field("Find a node", findInput), h("button", { type: "submit" }, "Find"));
  const side = h("aside", { id: "graph-side", "aria-label": "The chosen node" }, h("p", { class: "hint", id: "graph-hint" },
    "Click a node (or choose it in the list under the picture) to see its content, edges and provenance here."), results);
  findForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    history.replaceState(null, "", "#" + here({ find: findInput.value, node: selected }));
    const list = await found(findInput.value);
    side.querySelector("#find-results")?.remove();
    side.append(list);
    list.querySelector("a")?.focus();
  });
  const canvas = h("div", { id: "graph-canvas", class: "canvas", role: "img",
    "aria-label": "Knowledge graph: " + data.count + " nodes, " + data.edges.length + " edges. The list below the picture "
      + "holds the same nodes." });
  let cy = null;  // drawn once the canvas is in the page (it needs its size)
  let asked = 0;  // clicks in quick succession: only the last one's details are shown
  const show = async (id) => {
    const ticket = ++asked;
    const panel = await details(id, {
      changed: () => rerender(),
      forgotten: (gone) => {  // the node is gone: the page no longer asks for it
        const rest = around === gone ? route("/graph", null, { find }) : here({ node: "" });
        history.replaceState(null, "", "#" + rest);
        rerender();
      },
      open: (other) => route("/graph", null, { around: other, node: other, find }),
    }).catch((error) => h("p", { class: "error" }, error.message));
    if (ticket !== asked) return;
    side.querySelector("#node-detail, #graph-hint, :scope > p.error")?.remove();
    side.prepend(panel);
  };
  const choose = async (id) => {
    selected = id;
    history.replaceState(null, "", "#" + here({ node: id }));  // no new render: the picture keeps its zoom and place
    if (cy) { cy.$(":selected").unselect(); cy.$id(id).select(); highlight(cy, id); }
    await show(id);
  };
  const zoom = (factor) => cy && cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  const list = h("ul", { class: "node-list" });  // filled when opened: 2,000 buttons slow the first drawing down
  const fill = () => list.childElementCount || list.append(...data.nodes.map((n) => h("li", {},
    button(n.type + ": " + clip(n.content, 60), () => { choose(n.id); if (cy) cy.animate({ center: { eles: cy.$id(n.id) } }); },
      { class: "linkish", "data-id": n.id }))));
  const changed = h("p", { class: "hint", hidden: true }, "The graph changed since it was drawn. ", button("Draw it again", rerender));
  const view = h("section", { class: "wide", "data-live": "manual" }, h("h1", {}, "Knowledge graph"),
    h("div", { class: "graph-forms" }, findForm, around ? null : filterForm(filters)),
    h("p", { class: "meta", id: "graph-count" }, countLine(data, filters, around, depth, selected, find)
      .filter(Boolean).map((part, i) => [i ? " · " : "", part])),
    h("div", { class: "zoom actions" }, button("Zoom in", () => zoom(1.4)), button("Zoom out", () => zoom(1 / 1.4)),
      button("Fit", () => cy && cy.fit(undefined, 30)), changed),
    h("div", { class: "graph-main" }, h("div", { class: "graph-picture" }, canvas, legend()), side),
    nodeForm(),
    h("details", { on: { toggle: fill } }, h("summary", {}, "The " + data.count + " nodes in the picture, as a list"), list));
  view.addEventListener("changed", () => { changed.hidden = false; });
  requestAnimationFrame(() => {
    if (!canvas.isConnected) return;  // another page replaced this one meanwhile
    cy = draw(canvas, data, by);
    canvas._cy = cy;  // for the browser tests
    cy.on("tap", "node.item", (event) => choose(event.target.id()));
    cy.on("tap", (event) => { if (event.target === cy) highlight(cy, null); });
    if (selected && cy.$id(selected).length) { cy.$id(selected).select(); highlight(cy, selected); }
    canvas.dataset.ready = "1";
  });
  if (selected) show(selected);
  return view;
}

function legend() {
  return h("ul", { class: "legend", "aria-label": "Node types" },
    TYPES.map((type) => h("li", {}, h("span", { class: "swatch type-" + type, "aria-hidden": "true" }), type)));
}
