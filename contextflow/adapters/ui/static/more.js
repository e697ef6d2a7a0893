// Timeline threads and conversation records.
import { get, h, link, none, pre, route, table, when } from "./app.js";

function meta(...parts) {
  return h("p", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

export async function threadsPage(_, query) {
  const limit = Number(query.get("limit") || 50);
  const data = await get("threads", { limit });
  const rows = data.threads.map((t) => [link(route("/thread", t.id), t.name), t.status, String(t.thought_count),
    t.agent || "", t.writer, when(t.updated_at), t.description || ""]);
  const page = h("section", {}, h("h1", {}, "Timeline threads"),
    rows.length ? table("Threads, most recently active first", ["Thread", "Status", "Thoughts", "Agent", "Machine",
      "Updated", "Description"], rows) : h("p", {}, none("No threads yet.")));
  if (data.count >= limit) page.append(link(route("/threads", null, { limit: String(limit + 50) }), "Show more threads"));
  return page;
}

export async function threadPage(id) {
  const t = await get("thread", { id });
  const thoughts = t.thoughts.map((thought) => h("article", {
    class: "entry" + (thought.id === t.position_thought_id ? " here" : ""),
  },
  h("h3", {}, thought.thought_type + " · " + thought.status,
    thought.id === t.position_thought_id ? h("span", { class: "badge ok" }, "you are here") : null),
  meta(when(thought.created_at), "agent " + (thought.agent || "unknown"), "machine " + thought.writer, "id " + thought.id),
  pre(thought.content, { class: "text" })));
  return h("section", {}, h("h1", {}, "Thread " + t.name),
    meta("status " + t.status, "agent " + (t.agent || "unknown"), "machine " + t.writer, "id " + t.id),
    t.description ? pre(t.description, { class: "text" }) : null,
    h("h2", {}, "Thoughts, oldest first"), thoughts.length ? thoughts : h("p", {}, none("No thoughts yet.")),
    t.tangents && t.tangents.length ? h("h2", {}, "Tangents") : null,
    (t.tangents || []).map((tangent) => h("p", {}, link(route("/thread", tangent.id), tangent.name || tangent.id))),
    h("p", {}, link("/threads", "All threads")));
}

export async function conversationsPage(_, query) {
  const project = query.get("project") || "";
  const limit = Number(query.get("limit") || 50);
  const data = await get("conversations", { project, limit });
  const rows = data.conversations.map((c) => [
    link(route("/conversation", c.conversation_id, { project: c.project }), c.topic || c.conversation_id),
    c.project, c.source || "", c.writer, String((c.decisions || []).length), when(c.saved_at)]);
  const page = h("section", {}, h("h1", {}, "Conversations"),
    rows.length ? table("Saved conversation records, most recently saved first", ["Topic", "Project", "Source",
      "Machine", "Decisions", "Saved"], rows) : h("p", {}, none("No saved conversations yet.")));
  if (data.conversations.length >= limit) {
    page.append(link(route("/conversations", null, { project, limit: String(limit + 50) }), "Show more conversations"));
  }
  return page;
}

function list(title, items, render) {
  if (!Array.isArray(items) || !items.length) return null;
  return [h("h2", {}, title), h("ul", {}, items.map((item) => h("li", {}, render(item))))];
}

export async function conversationPage(id, query) {
  const c = await get("conversation", { id, project: query.get("project") });
  return h("section", {}, h("h1", {}, "Conversation: " + (c.topic || c.conversation_id)),
    meta("project " + c.project, "source " + (c.source || "unknown"), "machine " + c.writer, "saved " + when(c.saved_at),
      "versions " + c.versions, "id " + c.conversation_id),
    c.summary ? pre(c.summary, { class: "text" }) : null,
    list("Decisions", c.decisions, (d) => [h("strong", {}, "[" + (d.status || "chosen") + "] "), d.decision,
      h("br"), "why: ", d.reasoning || ""]),
    list("Open questions", c.open_questions, (q) => q),
    list("Related entities", c.related_entities, (e) => e),
    list("Topics", c.topics, (t) => [h("strong", {}, t.topic || ""), " ", t.summary || ""]),
    h("p", {}, link("/conversations", "All conversations")));
}
