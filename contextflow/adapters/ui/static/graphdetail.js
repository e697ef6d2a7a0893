// One node beside the picture: its content, provenance, edges (each with the other end's type and
// words, a link to it) and what can be done to it; and the form that adds a node.
import { button, confirmed, field, get, h, link, post, pre, route, undoable, when } from "./app.js";
import { TYPES, clip, tierOf } from "./graphdraw.js";

// `changed(id)`: a change was saved (draw again, showing `id`); `forgotten(id)`: the node is gone.
export async function details(id, { changed, forgotten, open }) {
  const n = await get("node", { id });
  const tier = tierOf(n.tags);
  const act = (action, done, extra) => async () => {
    await post("node", { id: n.id, action, ...(extra || {}) }, done);
    changed(n.id);
  };
  const forget = async () => {
    if (!await confirmed("Forget this node and its edges? Every agent and machine stops seeing it.", "Forget")) return;
    undoable("Forgetting node " + clip(n.content, 40), 6, async () => {
      await post("node", { id: n.id, action: "forget" }, "Forgot node " + clip(n.content, 40) + " and its edges.");
      forgotten(n.id);
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
  const labels = n.labels || {};
  const end = (other) => {
    const known = labels[other];
    return link(open(other), known ? known.type + ": " + known.label : other, { "data-id": other });
  };
  const edges = [...n.edges_out.map((e) => ["→ " + e.type + " ", e.to]), ...n.edges_in.map((e) => ["← " + e.type + " ", e.from])];
  return h("section", { class: "detail", id: "node-detail", "aria-label": "Node details", "data-id": n.id },
    h("h2", {}, n.type + (tier ? " (" + tier + ")" : "")),
    pre(n.content, { class: "text", id: "node-content" }),
    h("p", { class: "meta" }, ["id " + n.id, "agent " + (n.agent || "unknown"), "machine " + n.writer,
      "created " + when(n.created_at), "updated " + when(n.updated_at), n.token_estimate + " tokens"].join(" · ")),
    n.superseded_by ? h("p", { class: "badge bad" }, "superseded by " + n.superseded_by) : null,
    n.summary ? h("p", {}, "Summary: ", n.summary) : null,
    n.tags.length ? h("p", { class: "meta" }, "Tags: " + n.tags.join(", ")) : null,
    Object.keys(n.metadata || {}).length ? pre(JSON.stringify(n.metadata, null, 2)) : null,
    h("h3", {}, edges.length ? edges.length + (edges.length === 1 ? " edge" : " edges") : "No edges"),
    edges.length ? h("ul", { class: "edges" }, edges.map(([label, other]) => h("li", {}, label, end(other)))) : null,
    h("div", { class: "actions" },
      link(route("/graph", null, { around: n.id, node: n.id }), "Its neighbourhood", { class: "button" }),
      tier === "pinned" ? button("Unpin", act("unpin", "Unpinned: it leaves every session start."))
        : button("Pin", act("pin", "Pinned: every session start now carries it.")),
      tier === "off-context" ? button("Unarchive", act("unarchive", "Unarchived: it can reach composed context again."))
        : button("Archive", act("archive", "Archived: it stays, out of composed context.")),
      button("Forget (delete)", forget, { class: "danger" })),
    tagForm);
}

export function nodeForm() {
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
