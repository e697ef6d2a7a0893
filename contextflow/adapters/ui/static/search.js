// Search, ranked as get_context ranks. While the search index is built (the first time on this
// machine) the page says so, with how far it is, and asks again until the results are there.
import { add, field, get, h, link, rerender, route, when } from "./app.js";

const KINDS = ["", "conversation", "handoff", "note", "node", "context", "thought", "thread", "turn"];

function why(matched) {
  const parts = Object.entries(matched || {}).map(([name, terms]) => terms.join(", ") + " in " + name);
  return parts.length ? "matched " + parts.join("; ") : "matched";
}

function meta(...parts) {
  return h("p", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

export function indexProgress(state) {
  const share = state.total_bytes > 1 ? Math.min(1, state.done_bytes / state.total_bytes) : 0;
  const left = state.seconds_left === null || state.seconds_left === undefined ? ""
    : ", about " + Math.max(1, Math.round(state.seconds_left)) + " s left";
  return h("div", { id: "index-progress", class: "progress", role: "status" },
    h("p", {}, "Building the search index on this machine (it is read once from the logs, then kept up to date): "
      + Math.round(share * 100) + "% (" + state.events.toLocaleString("en") + " events read, "
      + state.seconds.toLocaleString("en") + " s so far" + left + "). The results appear here when it is done."),
    h("progress", { max: "100", value: String(Math.round(share * 100)), "aria-label": "Search index built" }),
    state.failed ? h("p", { class: "error" }, "The last attempt failed: " + state.failed) : null);
}

export async function searchPage(_, query) {
  const text = query.get("q") || "";
  const input = h("input", { type: "search", value: text, placeholder: "words, names, files, decisions" });
  const kind = h("select", {}, KINDS.map((k) => h("option", { value: k, selected: k === (query.get("kind") || "") },
    k || "every kind")));
  const project = h("input", { type: "text", value: query.get("project") || "", placeholder: "every project" });
  const form = h("form", { class: "filters", role: "search" }, field("Search", input), field("Kind", kind),
    field("Project", project), h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/search", null, { q: input.value, kind: kind.value, project: project.value });
  });
  const page = h("section", {}, h("h1", {}, "Search"),
    h("p", {}, "Ranked as get_context ranks (BM25 over every kind, newer a little first)."), form);
  if (!text) return page;
  const data = await get("search", { q: text, kind: query.get("kind"), project: query.get("project") });
  if (data.indexing) {
    const asked = location.hash;
    setTimeout(() => { if (location.hash === asked) rerender(); }, 500);
    return add(page, indexProgress(data.indexing));
  }
  const list = h("ol", { class: "results" }, data.results.map((r) => h("li", {},
    h("h3", {}, r.kind + ": ", r.kind === "node" ? link(route("/graph", null, { node: r.id }), r.title || r.id)
      : (r.title || r.id)),
    r.excerpt && r.excerpt !== r.title ? h("p", { class: "excerpt" }, r.excerpt) : null,
    meta("id " + r.id, r.project ? "project " + r.project : "", "agent " + (r.agent || "unknown"),
      "machine " + (r.writer || "unknown"), when(r.time), "score " + r.score),
    h("p", { class: "why" }, why(r.matched)))));
  add(page, h("h2", { class: data.count ? "" : "results-none" }, data.count + (data.count === 1 ? " result" : " results")),
    list);
  return page;
}
