// The pages: projects, the next session start, health; the others have their own modules.
import { field, get, h, link, none, pre, route, table, when } from "./app.js";
import { feedPage } from "./feed.js";
import { graphPage } from "./graph.js";
import { conversationPage, conversationsPage, threadPage, threadsPage } from "./more.js";
import { meta, projectPage, short } from "./project.js";
import { recordsPage } from "./records.js";
import { indexProgress, searchPage } from "./search.js";

function section(title, ...children) {
  return h("section", {}, h("h1", {}, title), ...children);
}

// -- projects ----------------------------------------------------------------------------

async function projectsPage() {
  const data = await get("overview");
  const rows = data.projects.map((p) => [
    link(route("/project", p.name), p.name),
    String(p.sessions), String(p.entries), h("time", { datetime: p.latest_ts, title: when(p.latest_ts) }, short(p.latest_ts)),
    p.agents.join(", "),
    link(route("/start", p.name), "next session start"),
  ]);
  return section("Projects",
    meta("store " + data.store, "default project " + data.default_project),
    h("p", {}, link("/feed", "What every agent is doing now: the live feed")),
    rows.length ? table("Projects with notes or handoffs, most recently active first",
      ["Project", "Sessions", "Entries", "Last activity", "Agents", ""], rows)
      : h("p", {}, none("No notes or handoffs yet. Agents write them with append_shared_note and write_shared_handoff.")));
}

// -- the next session start ------------------------------------------------------------------

async function startPage(project, query) {
  const overview = await get("overview");
  const chosen = project || overview.default_project;
  const session = query.get("session") || "";
  const [data, sessions] = await Promise.all([
    get("start", { project: chosen, session }), get("sessions", { project: chosen, limit: 200 }),
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

// -- health -------------------------------------------------------------------------------

function mb(bytes) {
  if (bytes === null || bytes === undefined) return "?";
  if (bytes < 1e6) return Math.ceil(bytes / 1e3).toLocaleString("en") + " KB";
  return (bytes / 1e6).toLocaleString("en", { maximumFractionDigits: 1 }) + " MB";
}

function tableRows(t) {
  if (!t) return [["State", "unknown"]];
  return [["State", t.current ? "up to date" : "behind the logs (the next read brings them up to date)"],
    ["Formats", Object.entries(t.formats || {}).map(([name, version]) => name + " v" + version).join(", ")],
    ["Size on disk", mb(t.bytes)], ["File", t.file || ""], ["To rebuild", t.rebuild || ""]];
}

function indexRows(d) {
  const index = d.derived || {};
  const state = d.indexing ? "being built now"
    : index.current ? "up to date" : index.version_matches ? mb(index.log_bytes_behind) + " of the logs not in it yet (the next search adds them)"
      : "not built yet on this machine (the first search builds it)";
  return [["State", state], ["Documents", index.documents === null || index.documents === undefined ? "?" : String(index.documents)],
    ["Size on disk", mb(index.bytes)], ["Last updated", when(index.updated) || "never"], ["Folder", index.folder || ""],
    ["To rebuild", index.rebuild || ""]];
}

function captureTable(rows) {
  if (!Array.isArray(rows) || !rows.length) return h("p", { id: "capture-state" }, none("Nothing captured on this machine yet."));
  return table("Capture on this machine, per client (from each transcript's capture state)", ["Client", "Transcripts",
    "Turns stored", "Lines skipped (too long)", "Unreadable lines", "Last error"], rows.map((r) => [r.client,
    String(r.transcripts), String(r.turns), String(r.skipped), String(r.bad),
    r.last_error ? when(r.last_error_at) + ": " + r.last_error : "none"]), { id: "capture-state" });
}

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
    h("h2", {}, "Search index (machine-local, rebuilt from the logs)"),
    d.indexing ? indexProgress(d.indexing) : null,
    table("The search index", ["", ""], indexRows(d), { id: "index-state" }),
    h("h2", {}, "Views on disk (machine-local tables, rebuilt from the logs)"),
    table("The derived tables", ["", ""], tableRows(d.tables), { id: "tables-state" }),
    h("h2", {}, "Capture (each agent turn, from the clients' own transcripts)"),
    captureTable(d.capture),
    table("Logs", ["File", "Writer", "Events", "Bad lines", ""], logs));
}

export const pages = {
  projects: projectsPage, project: projectPage, feed: feedPage, start: startPage, search: searchPage, graph: graphPage,
  records: recordsPage, threads: threadsPage, thread: threadPage, conversations: conversationsPage,
  conversation: conversationPage, health: healthPage,
};
