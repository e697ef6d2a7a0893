// The pages: projects, a project's timeline, the next session start, search, records, health.
import { add, button, field, get, h, link, post, pre, rerender, route, table, when } from "./app.js";
import { graphPage } from "./graph.js";
import { conversationPage, conversationsPage, threadPage, threadsPage } from "./more.js";

const KINDS = ["", "conversation", "handoff", "note", "node", "context", "thought", "thread"];

function section(title, ...children) {
  return h("section", {}, h("h1", {}, title), ...children);
}

function meta(...parts) {
  return h("p", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

// -- projects ----------------------------------------------------------------------------

async function projectsPage() {
  const data = await get("overview");
  const rows = data.projects.map((p) => [
    link(route("/project", p.name), p.name),
    String(p.sessions), String(p.entries), when(p.latest_ts), p.agents.join(", "),
    link(route("/start", p.name), "next session start"),
  ]);
  return section("Projects",
    meta("store " + data.store, "default project " + data.default_project),
    rows.length ? table("Projects with notes or handoffs, most recently active first",
      ["Project", "Sessions", "Entries", "Last activity", "Agents", ""], rows)
      : h("p", {}, "No notes or handoffs yet. Agents write them with append_shared_note and write_shared_handoff."));
}

// -- a project's timeline --------------------------------------------------------------------

function entryCard(entry, wrong) {
  const isHandoff = entry.kind === "handoff";
  const card = h("article", { class: "entry " + (isHandoff ? "handoff" : "note"), "data-id": entry.id },
    h("h3", {}, (isHandoff ? (entry.auto ? "Automatic handoff" : "Handoff") : "Note") + " by " + (entry.agent || "unknown"),
      wrong.has(entry.id) ? h("span", { class: "badge bad" }, "marked wrong") : null),
    meta(when(entry.ts), "machine " + entry.writer, entry.session_id ? "session " + entry.session_id : "no session",
      entry.task ? "task " + entry.task : "", "id " + entry.id),
    pre(isHandoff ? entry.summary : entry.text, { class: "text" }));
  for (const [name, label] of [["next_steps", "Next steps"], ["open_questions", "Open questions"], ["files", "Files"],
    ["tags", "Tags"]]) {
    if (Array.isArray(entry[name]) && entry[name].length) {
      card.append(h("h4", {}, label), h("ul", {}, entry[name].map((item) => h("li", {}, item))));
    }
  }
  if (entry.wrong_handoff) card.append(h("p", { class: "badge bad" }, "marks handoff " + entry.wrong_handoff + " as wrong"));
  if (isHandoff && !wrong.has(entry.id)) card.append(wrongForm(entry.id));
  return card;
}

function wrongForm(id) {
  const reason = h("input", { type: "text", placeholder: "what is wrong with it", maxlength: "2000" });
  const form = h("form", { class: "inline", hidden: true },
    field("Reason", reason), h("button", { type: "submit" }, "Mark wrong"), button("Cancel", () => { form.hidden = true; }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await post("handoff-wrong", { id, reason: reason.value });
    rerender();
  });
  const open = button("Mark this handoff as wrong", () => { form.hidden = false; reason.focus(); });
  return h("div", {}, open, form);
}

function turnCard(turn) {
  const t = turn.turn || {};
  const card = h("article", { class: "entry turn", "data-id": turn.id },
    h("h3", {}, "Turn by " + (turn.agent || "unknown")),
    meta(when(turn.ts), "machine " + turn.writer, "id " + turn.id),
    t.request ? h("p", {}, "Asked: ", t.request) : null);
  for (const [kind, paths] of Object.entries(t.files || {})) {
    if (Array.isArray(paths) && paths.length) card.append(h("p", {}, kind + ": " + paths.join(", ")));
  }
  for (const test of t.tests || []) {
    card.append(h("p", {}, h("span", { class: test.passed ? "badge ok" : "badge bad" }, test.passed ? "passed" : "failed"),
      " ", test.command));
  }
  for (const error of t.errors || []) card.append(h("p", { class: "error" }, error));
  if (t.final) card.append(pre(t.final, { class: "text" }));
  return card;
}

async function projectPage(name, query) {
  const session = query.get("session") || "";
  const [sessions, first, activity] = await Promise.all([
    get("sessions", { project: name }), get("entries", { project: name, session }),
    session ? get("activity", { project: name, session }) : Promise.resolve(null),
  ]);
  const timeline = h("div", { class: "timeline", id: "timeline" });
  const wrong = new Set();
  let oldest = null;
  const show = (entries) => {
    for (const entry of entries) if (entry.wrong_handoff) wrong.add(entry.wrong_handoff);
    for (const entry of [...entries].reverse()) timeline.append(entryCard(entry, wrong));
    oldest = entries.length ? entries[0].id : null;
  };
  show(first.entries);
  const more = button("Older entries", async () => {
    const page = await get("entries", { project: name, session, before: oldest });
    show(page.entries);
    if (page.entries.length < 50) more.hidden = true;
  });
  more.hidden = first.entries.length < 50;
  const rows = sessions.sessions.map((s) => [
    link(route("/project", name, { session: s.session_id }), s.session_id),
    s.agents.join(", "), String(s.entry_count), String(s.handoff_count), when(s.latest_ts),
    s.latest_handoff_summary || "",
  ]);
  return section("Project " + name,
    h("p", {}, link(route("/start", name), "What the next session start injects for " + name)),
    h("h2", {}, "Sessions"),
    rows.length ? table("Sessions, most recently active first (latest handoff not marked wrong)",
      ["Session", "Agents", "Entries", "Handoffs", "Last activity", "Latest handoff"], rows) : h("p", {}, "No sessions."),
    activity ? h("h2", {}, "Captured activity of session " + session + ", oldest first") : null,
    activity ? (activity.turns.length ? activity.turns.map(turnCard)
      : h("p", {}, "No captured turns (capture runs in the clients' hooks).")) : null,
    h("h2", {}, session ? "Timeline of session " + session : "Timeline, newest first"),
    session ? h("p", {}, link(route("/project", name), "Show every session")) : null,
    first.entries.length ? timeline : h("p", {}, "No entries."), more);
}

// -- the next session start ------------------------------------------------------------------

async function startPage(project, query) {
  const overview = await get("overview");
  const chosen = project || overview.default_project;
  const session = query.get("session") || "";
  const [data, sessions] = await Promise.all([
    get("start", { project: chosen, session }), get("sessions", { project: chosen }),
  ]);
  const projectSelect = h("select", {}, [...new Set([overview.default_project, ...overview.projects.map((p) => p.name)])]
    .map((name) => h("option", { value: name, selected: name === chosen }, name)));
  const sessionSelect = h("select", {}, h("option", { value: "" }, "the active session"),
    sessions.sessions.map((s) => h("option", { value: s.session_id, selected: s.session_id === session }, s.session_id)));
  const form = h("form", { class: "filters" }, field("Project", projectSelect), field("Session", sessionSelect),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/start", projectSelect.value, { session: sessionSelect.value });
  });
  const rows = data.limits.map((item) => [item.name, item.limit ? item.limit.toLocaleString("en") + " characters"
    : "no documented limit", data.chars.toLocaleString("en"),
  h("span", { class: item.fits ? "badge ok" : "badge bad" }, item.limit ? (item.fits ? "fits" : "over the limit") : "—")]);
  return section("Next session start", form,
    meta("project " + data.project, "session " + (data.session_id || "(none active)"),
      "hook budget " + data.budget_tokens.toLocaleString("en") + " tokens"),
    table("Size of what is injected against each client's limit", ["Client", "Limit", "Injected", ""], rows),
    h("h2", {}, "What the model is given (additionalContext)"),
    data.context ? pre(data.context, { class: "text", id: "start-context" }) : h("p", {}, "Nothing: the hook prints nothing."),
    h("details", {}, h("summary", {}, "The hook's exact output (JSON on stdout)"), pre(data.output || "(empty)")));
}

// -- search ----------------------------------------------------------------------------------

function why(matched) {
  const parts = Object.entries(matched || {}).map(([name, terms]) => terms.join(", ") + " in " + name);
  return parts.length ? "matched " + parts.join("; ") : "matched";
}

async function searchPage(_, query) {
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
  const page = section("Search", h("p", {}, "Ranked as get_context ranks (BM25 over every kind, newer a little first)."),
    form);
  if (!text) return page;
  const data = await get("search", { q: text, kind: query.get("kind"), project: query.get("project") });
  const list = h("ol", { class: "results" }, data.results.map((r) => h("li", {},
    h("h3", {}, r.kind + ": ", r.kind === "node" ? link(route("/graph", null, { node: r.id }), r.title || r.id)
      : (r.title || r.id)),
    r.excerpt && r.excerpt !== r.title ? h("p", { class: "excerpt" }, r.excerpt) : null,
    meta("id " + r.id, r.project ? "project " + r.project : "", "agent " + (r.agent || "unknown"),
      "machine " + (r.writer || "unknown"), when(r.time), "score " + r.score),
    h("p", { class: "why" }, why(r.matched)))));
  add(page, h("h2", {}, data.count + (data.count === 1 ? " result" : " results")), list);
  return page;
}

// -- context records ---------------------------------------------------------------------------

async function recordsPage(key, query) {
  const prefix = query.get("prefix") || "";
  const limit = Number(query.get("limit") || 50);
  const data = await get("records", { prefix, limit });
  const input = h("input", { type: "text", value: prefix, placeholder: "pr:, machine:, ..." });
  const form = h("form", { class: "filters" }, field("Key prefix", input), h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = route("/records", null, { prefix: input.value });
  });
  const rows = data.records.map((r) => [link(route("/records", r.key, { prefix, project: r.project }), r.key),
    r.project, r.category, r.label || "", r.pinned ? "pinned" : "", r.agent || "", when(r.updated_at)]);
  const page = section("Context records", form,
    table("Keyed context records, newest first", ["Key", "Project", "Category", "Label", "Pinned", "Agent", "Updated"],
      rows));
  if (data.count >= limit) {
    add(page, link(route("/records", null, { prefix, limit: String(limit + 50) }), "Show more records"));
  }
  if (key) add(page, await recordDetail(key, query.get("project")));
  return page;
}

async function recordDetail(key, project) {
  const r = await get("record", { key, project });
  const act = (action) => async () => { await post("record", { key, project: r.project, action }); rerender(); };
  return h("section", { class: "detail", "aria-label": "Record" }, h("h2", {}, r.key),
    meta("project " + r.project, "category " + r.category, "agent " + (r.agent || "unknown"),
      "machine " + r.source, "updated " + when(r.updated_at), r.expires_at ? "expires " + when(r.expires_at) : ""),
    pre(JSON.stringify(r.value, null, 2), { class: "text" }),
    h("div", { class: "actions" }, button(r.pinned ? "Unpin" : "Pin", act(r.pinned ? "unpin" : "pin")),
      button("Forget (delete)", act("forget"), { class: "danger" })));
}

// -- health -------------------------------------------------------------------------------

async function healthPage() {
  const d = await get("health");
  const logs = d.logs.map((l) => [l.file, l.writer, String(l.events), String(l.bad_lines),
    [l.legacy ? "legacy" : "", l.conflict_copy ? "conflict copy" : ""].filter(Boolean).join(", ")]);
  return section("Store health",
    table("What doctor reports", ["", ""], [["Store", d.store], ["Chosen by", d.chosen_by], ["Writer (this machine)",
      d.writer], ["Events", String(d.events)], ["Bad lines", String(d.bad_lines)],
    ["Writers ahead of this clock", d.writers_ahead.map((w) => w.writer + " (" + w.ahead_s + " s)").join(", ") || "none"],
    ["Active session", d.active_session || "(none)"]]),
    h("h2", {}, "Problems"),
    d.problems.length ? h("ul", { class: "problems" }, d.problems.map((p) => h("li", {}, p))) : h("p", {}, "None."),
    table("Logs", ["File", "Writer", "Events", "Bad lines", ""], logs));
}

export const pages = {
  projects: projectsPage, project: projectPage, start: startPage, search: searchPage, graph: graphPage,
  records: recordsPage, threads: threadsPage, thread: threadPage, conversations: conversationsPage,
  conversation: conversationPage, health: healthPage,
};
