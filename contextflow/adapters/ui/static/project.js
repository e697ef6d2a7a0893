// A project's page: its activity by day, its sessions (filtered, a page at a time) and its timeline.
import { button, field, get, h, link, longText, none, post, rerender, route, table, when } from "./app.js";

const SESSIONS_PAGE = 20;
const CHART_EVENTS = 200;

export function meta(...parts) {
  return h("p", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

export function short(iso) {  // "2026-11-28 14:05" (the whole stamp in the tooltip)
  return when(iso).replace(/:\d\d(\.\d+)?Z$/, "");
}

// A timeline entry, compact: its heading, one line of where it comes from and two lines of its text.
// "Show all" opens it: the whole text, its lists (next steps, files, tags) and marking it wrong.
function entryCard(entry, wrong) {
  const isHandoff = entry.kind === "handoff";
  const text = String((isHandoff ? entry.summary : entry.text) || "");
  const body = h("p", { class: "entry-text" }, text);
  const more = h("div", { class: "entry-more" });
  for (const [name, label] of [["next_steps", "Next steps"], ["open_questions", "Open questions"], ["files", "Files"],
    ["tags", "Tags"]]) {
    if (Array.isArray(entry[name]) && entry[name].length) {
      more.append(h("h4", {}, label), h("ul", {}, entry[name].map((item) => h("li", {}, item))));
    }
  }
  if (isHandoff && !wrong.has(entry.id)) more.append(wrongForm(entry.id));
  const card = h("article", { class: "entry compact " + (isHandoff ? "handoff" : "note"), "data-id": entry.id },
    h("h3", {}, (isHandoff ? (entry.auto ? "Automatic handoff" : "Handoff") : "Note") + " by " + (entry.agent || "unknown"),
      wrong.has(entry.id) ? h("span", { class: "badge bad" }, "marked wrong") : null),
    meta(when(entry.ts), "machine " + entry.writer, entry.session_id ? "session " + entry.session_id : "no session",
      entry.task ? "task " + entry.task : "", "id " + entry.id),
    body);
  if (entry.wrong_handoff) card.append(h("p", { class: "badge bad" }, "marks handoff " + entry.wrong_handoff + " as wrong"));
  const long = text.length > 160 || text.includes("\n");
  if (long || more.childElementCount) {
    const toggle = button("Show all", () => {
      const open = card.classList.toggle("open");
      toggle.textContent = open ? "Show less" : "Show all";
      toggle.setAttribute("aria-expanded", String(open));
    }, { class: "linkish", "aria-expanded": "false" });
    card.append(more, toggle);
  }
  return card;
}

function wrongForm(id) {
  const reason = h("input", { type: "text", placeholder: "what is wrong with it", maxlength: "2000" });
  const form = h("form", { class: "inline", hidden: true },
    field("Reason", reason), h("button", { type: "submit" }, "Mark wrong"), button("Cancel", () => { form.hidden = true; }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await post("handoff-wrong", { id, reason: reason.value },
      "Marked handoff " + id + " as wrong: the next session start uses the handoff before it.");
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
  if (t.final) card.append(longText(t.final));
  return card;
}

// -- the activity chart: the newest events by day, stacked by agent or machine ---------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

export function activityChart(entries, by) {
  const days = new Map();
  const names = new Map();
  for (const e of entries) {
    const day = String(e.ts || "").slice(0, 10);
    const who = (by === "machine" ? e.writer : e.agent) || "unknown";
    if (!day) continue;
    if (!days.has(day)) days.set(day, new Map());
    days.get(day).set(who, (days.get(day).get(who) || 0) + 1);
    names.set(who, (names.get(who) || 0) + 1);
  }
  const order = [...days.keys()].sort();
  const series = [...names.keys()].sort((a, b) => names.get(b) - names.get(a));
  const most = Math.max(1, ...order.map((day) => [...days.get(day).values()].reduce((a, b) => a + b, 0)));
  const width = 900;
  const height = 120;
  const barWidth = Math.max(4, Math.min(40, (width - 40) / Math.max(1, order.length) - 4));
  const chart = svg("svg", { viewBox: "0 0 " + width + " " + (height + 24), class: "chart", role: "img",
    "aria-label": "Events per day by " + by + ": " + order.map((day) => day + " " + [...days.get(day).values()]
      .reduce((a, b) => a + b, 0)).join(", ") });
  order.forEach((day, i) => {
    let y = height;
    const x = 30 + i * (barWidth + 4);
    for (const who of series) {
      const count = days.get(day).get(who) || 0;
      if (!count) continue;
      const tall = (count / most) * (height - 10);
      y -= tall;
      chart.append(svg("rect", { x, y, width: barWidth, height: tall, class: "series-" + (series.indexOf(who) % 8) },
        svg("title", {}, day + ": " + count + " by " + who)));
    }
    if (i === 0 || i === order.length - 1 || i % Math.ceil(order.length / 6) === 0) {
      chart.append(svg("text", { x: x + barWidth / 2, y: height + 16, "text-anchor": "middle", class: "axis" }, day.slice(5)));
    }
  });
  chart.append(svg("text", { x: 0, y: 12, class: "axis" }, String(most)));
  const legend = h("ul", { class: "legend" }, series.map((who, i) => h("li", {},
    h("span", { class: "swatch series-" + (i % 8), "aria-hidden": "true" }), who + " (" + names.get(who) + ")")));
  return h("div", { class: "activity" }, chart, legend);
}

// -- the page ----------------------------------------------------------------------------------------

function noteForm(project, session) {
  const text = h("textarea", { rows: "3", maxlength: "20000", placeholder: "what the next agent should know" });
  const sessionInput = h("input", { type: "text", value: session, placeholder: "no session" });
  const form = h("form", { class: "inline add" }, field("Note", text), field("Session", sessionInput),
    h("button", { type: "submit" }, "Add the note"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const saved = await post("note", { project, session_id: sessionInput.value, text: text.value },
      (d) => "Added a note to " + project + (sessionInput.value ? " (session " + sessionInput.value + ")" : "") + ": " + d.id);
    if (saved) { text.value = ""; rerender(); }
  });
  return h("details", { class: "adder" }, h("summary", {}, "Add a note"), form);
}

export async function projectPage(name, query) {
  const session = query.get("session") || "";
  const agent = query.get("agent") || "";
  const since = query.get("since") || "";
  const kind = query.get("kind") || "";
  const by = query.get("by") === "machine" ? "machine" : "agent";
  const shown = Math.max(SESSIONS_PAGE, Number(query.get("n") || SESSIONS_PAGE));
  const sinceIso = since ? since + "T00:00:00Z" : "";
  const [sessions, first, recent, activity] = await Promise.all([
    get("sessions", { project: name, agent, since: sinceIso, limit: Math.min(200, shown + 1) }),
    get("entries", { project: name, session, agent, since: sinceIso, kind }),
    get("entries", { project: name, session, limit: CHART_EVENTS }),
    session ? get("activity", { project: name, session }) : Promise.resolve(null),
  ]);
  const at = (changes) => route("/project", name, { session, agent, since, kind, by, ...changes });
  const agentInput = h("input", { type: "text", value: agent, placeholder: "every agent", list: "agents" });
  const sinceInput = h("input", { type: "date", value: since });
  const kindSelect = h("select", {}, ["", "note", "handoff"].map((k) => h("option", { value: k, selected: k === kind },
    k || "notes and handoffs")));
  const known = new Set(sessions.sessions.flatMap((s) => s.agents));
  const filters = h("form", { class: "filters" }, field("Agent", agentInput),
    h("datalist", { id: "agents" }, [...known].map((a) => h("option", { value: a }))),
    field("Since", sinceInput), field("Kind", kindSelect), h("button", { type: "submit" }, "Filter"),
    link(route("/feed", null, { project: name }), "By machine and kind: the live feed"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = at({ agent: agentInput.value.trim(), since: sinceInput.value, kind: kindSelect.value, n: "" });
  });
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
    const page = await get("entries", { project: name, session, agent, since: sinceIso, kind, before: oldest });
    show(page.entries);
    if (page.entries.length < 50) more.hidden = true;
  });
  more.hidden = first.entries.length < 50;
  const list = sessions.sessions.slice(0, shown);
  const rows = list.map((s) => [
    link(route("/project", name, { session: s.session_id }), s.session_id),
    s.agents.join(", "), String(s.entry_count), String(s.handoff_count),
    h("time", { datetime: s.latest_ts, title: when(s.latest_ts) }, short(s.latest_ts)),
    s.latest_handoff_summary || "",
  ]);
  const chartSwitch = h("p", { class: "meta" }, "By ", by === "agent" ? h("strong", {}, "agent") : link(at({ by: "agent" }), "agent"),
    " · ", by === "machine" ? h("strong", {}, "machine") : link(at({ by: "machine" }), "machine"));
  return h("section", {}, h("h1", {}, "Project " + name),
    h("p", {}, link(route("/start", name), "What the next session start injects for " + name), " · ",
      link(route("/feed", null, { project: name }), "Live feed of " + name)),
    h("h2", {}, "Activity"),
    meta("The newest " + recent.entries.length + " notes and handoffs" + (session ? " of session " + session : "") + ", per day"),
    recent.entries.length ? [activityChart(recent.entries, by), chartSwitch] : h("p", {}, none("No activity yet.")),
    noteForm(name, session),
    filters,
    h("h2", {}, "Sessions"),
    rows.length ? table("Sessions, most recently active first (latest handoff not marked wrong)"
      + (agent ? ", with agent " + agent : "") + (since ? ", active since " + since : ""),
    ["Session", "Agents", "Entries", "Handoffs", "Last activity", "Latest handoff"], rows, { id: "sessions" })
      : h("p", {}, none("No sessions.")),
    sessions.sessions.length > shown ? link(at({ n: String(shown + SESSIONS_PAGE) }), "Show " + SESSIONS_PAGE + " more sessions") : null,
    activity ? h("h2", {}, "Captured activity of session " + session + ", oldest first") : null,
    activity ? (activity.turns.length ? activity.turns.map(turnCard)
      : h("p", {}, none("No captured turns (capture runs in the clients' hooks)."))) : null,
    h("h2", {}, session ? "Timeline of session " + session : "Timeline, newest first"),
    session ? h("p", {}, link(route("/project", name), "Show every session")) : null,
    first.entries.length ? timeline : h("p", {}, none("No entries.")), more);
}

