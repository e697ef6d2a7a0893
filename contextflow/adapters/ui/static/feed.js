// The live feed: what every agent on every machine wrote, newest first, as it is written.
import { button, field, get, h, link, none, route, when } from "./app.js";

const KINDS_SHOWN = { "capture.turn": "captured turn", handoff: "handoff", note: "note", "graph.node": "remembered",
  "context.set": "record", "conversation.save": "conversation" };

function kindName(kind) {
  return KINDS_SHOWN[kind] || String(kind || "").replace(/^timeline\./, "timeline ").replace(/[._]/g, " ");
}

function clipped(text) {
  const body = h("p", { class: "feed-text clip2" }, text || "");
  if (String(text || "").length <= 200) return body;
  body.tabIndex = 0;
  body.title = "Show the whole text";
  const toggle = () => body.classList.toggle("clip2");
  body.addEventListener("click", toggle);
  body.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); toggle(); } });
  return body;
}

function item(entry) {
  const where = entry.session_id
    ? link(route("/project", entry.project, { session: entry.session_id }), "session " + entry.session_id)
    : link(route("/project", entry.project), entry.project);
  return h("li", { class: "feed-item kind-" + String(entry.kind).replace(/\./g, "-"), "data-id": entry.id },
    h("div", { class: "feed-head" },
      h("time", { datetime: entry.at, title: when(entry.at) }, when(entry.at).slice(0, 16).replace(/^\d{4}-/, "")),
      h("strong", {}, entry.agent || "unknown"),
      h("span", { class: "badge" }, kindName(entry.kind)),
      h("span", { class: "meta" }, "on " + (entry.machine || "?")),
      h("span", { class: "meta" }, "in ", link(route("/project", entry.project), entry.project)),
      entry.session_id ? where : null),
    clipped(entry.text));
}

function choice(label, name, values, chosen) {
  const select = h("select", { name }, h("option", { value: "" }, "every " + label.toLowerCase()),
    [...new Set([...(values || []), ...(chosen ? [chosen] : [])])].map((v) =>
      h("option", { value: v, selected: v === chosen }, name === "kind" ? kindName(v) : v)));
  return field(label, select);
}

export async function feedPage(_, query) {
  const wanted = {};
  for (const name of ["project", "agent", "machine", "kind", "session", "until"]) wanted[name] = query.get(name) || "";
  const asked = { ...wanted, until: undefined, before: wanted.until ? wanted.until + "T23:59:59.999Z" : "" };
  const data = await get("feed", asked);
  const facets = data.facets || {};
  const form = h("form", { class: "filters" },
    choice("Project", "project", facets.project || facets.projects, wanted.project),
    choice("Agent", "agent", facets.agent || facets.agents, wanted.agent),
    choice("Machine", "machine", facets.machine || facets.machines, wanted.machine),
    choice("Kind", "kind", facets.kind || facets.kinds, wanted.kind),
    field("Up to the day", h("input", { type: "date", name: "until", value: wanted.until })),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = {};
    for (const control of form.querySelectorAll("select, input")) chosen[control.name] = control.value;
    location.hash = route("/feed", null, { ...chosen, session: wanted.session });
  });
  // a change on the page (one of the filters) filters at once
  form.addEventListener("change", () => form.requestSubmit());
  const list = h("ol", { class: "feed", id: "feed" }, data.items.map(item));
  let last = data.items.length ? data.items[data.items.length - 1].id : null;
  const more = button("Older", async () => {
    const page = await get("feed", { ...asked, before: last });
    list.append(...page.items.map(item));
    last = page.items.length ? page.items[page.items.length - 1].id : last;
    more.hidden = page.items.length < 50;
  });
  more.hidden = data.items.length < 50;
  return h("section", {}, h("h1", {}, "Live feed"),
    h("p", { class: "meta" }, "What every agent on every machine writes, newest first, as it is written: captured turns, "
      + "handoffs, notes, remembered knowledge, records."
      + (wanted.session ? " Session " + wanted.session + " only." : "")),
    form,
    data.items.length ? list : h("p", { class: "none" }, none("Nothing written yet" + (Object.values(wanted).some(Boolean)
      ? " that matches these filters." : "."))),
    more);
}
