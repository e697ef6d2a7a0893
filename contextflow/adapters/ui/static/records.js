// Keyed context records of any age (the age window is shown and chosen), one in full, and a new one.
import { add, button, confirmed, field, get, h, link, none, post, pre, rerender, route, table, undoable, when } from "./app.js";

const WINDOWS = [["0", "any age"], ["1", "the last day"], ["7", "the last 7 days"], ["30", "the last 30 days"],
  ["365", "the last year"]];
const CATEGORIES = ["", "project", "pr", "machine", "waiting", "fact", "clipboard"];

function meta(...parts) {
  return h("p", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

function recordForm() {
  const key = h("input", { type: "text", placeholder: "prefix:name, e.g. waiting:pr-42", required: true });
  const value = h("textarea", { rows: "2", placeholder: 'plain text, or a JSON object such as {"status": "open"}' });
  const label = h("input", { type: "text", placeholder: "a title (optional)" });
  const category = h("select", {}, CATEGORIES.map((c) => h("option", { value: c }, c || "from the key")));
  const form = h("form", { class: "inline add" }, field("Key", key), field("Value", value), field("Label", label),
    field("Category", category), h("button", { type: "submit" }, "Save the record"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const saved = await post("new-record", { key: key.value.trim(), value: value.value, label: label.value,
      category: category.value }, (d) => "Saved record " + d.key + " in " + d.project + ".");
    if (saved) location.hash = route("/records", saved.key, { project: saved.project });
  });
  return h("details", { class: "adder" }, h("summary", {}, "Add a record"), form);
}

export async function recordsPage(key, query) {
  const prefix = query.get("prefix") || "";
  const days = query.get("days") || "0";
  const limit = Number(query.get("limit") || 50);
  const data = await get("records", { prefix, days, limit });
  const input = h("input", { type: "text", value: prefix, placeholder: "pr:, machine:, ..." });
  const age = h("select", {}, WINDOWS.map(([value, text]) => h("option", { value, selected: value === days }, text)));
  const form = h("form", { class: "filters" }, field("Key prefix", input), field("Updated within", age),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/records", null, { prefix: input.value, days: age.value === "0" ? "" : age.value });
  });
  const shown = WINDOWS.find(([value]) => value === days);
  const rows = data.records.map((r) => [link(route("/records", r.key, { prefix, days, project: r.project }), r.key),
    r.project, r.category, r.label || "", r.pinned ? "pinned" : "", r.agent || "",
    h("time", { datetime: r.updated_at, title: when(r.updated_at) }, when(r.updated_at).slice(0, 16))]);
  const page = h("section", {}, h("h1", {}, "Context records"), form,
    h("p", { class: "meta", id: "age-window" }, (days === "0" ? "Showing records of any age" : "Showing records updated within " + (shown ? shown[1] : days + " days"))
      + ", newest first (" + data.count + " shown)."),
    recordForm(),
    rows.length ? table("Keyed context records, newest first", ["Key", "Project", "Category", "Label", "Pinned", "Agent",
      "Updated"], rows) : h("p", {}, none("No records in this window.")));
  if (data.count >= limit) {
    add(page, link(route("/records", null, { prefix, days, limit: String(limit + 50) }), "Show more records"));
  }
  if (key) add(page, await recordDetail(key, query.get("project")));
  return page;
}

async function recordDetail(key, project) {
  const r = await get("record", { key, project });
  const pin = async () => {
    await post("record", { key, project: r.project, action: r.pinned ? "unpin" : "pin" },
      (r.pinned ? "Unpinned " : "Pinned ") + r.key + (r.pinned ? "." : ": /whereami always shows it."));
    rerender();
  };
  const forget = async () => {
    if (!await confirmed("Forget record " + r.key + "? Every agent and machine stops seeing it.", "Forget")) return;
    undoable("Forgetting record " + r.key, 6, async () => {
      await post("record", { key, project: r.project, action: "forget" }, "Forgot record " + r.key + ".");
      if (location.hash.includes(encodeURIComponent(key))) location.hash = route("/records");
    });
  };
  return h("section", { class: "detail", "aria-label": "Record" }, h("h2", {}, r.key),
    meta("project " + r.project, "category " + r.category, "agent " + (r.agent || "unknown"),
      "machine " + r.source, "updated " + when(r.updated_at), r.expires_at ? "expires " + when(r.expires_at) : ""),
    pre(JSON.stringify(r.value, null, 2), { class: "text" }),
    h("div", { class: "actions" }, button(r.pinned ? "Unpin" : "Pin", pin),
      button("Forget (delete)", forget, { class: "danger" })));
}
