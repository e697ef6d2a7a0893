// contextflow ui: the router, the API client, live updates and DOM helpers.
// Stored text is untrusted: it only ever reaches the page as text nodes (never innerHTML),
// and links are built from fixed routes with encodeURIComponent.
import { pages } from "./pages.js";

// -- DOM helpers -----------------------------------------------------------------------

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "on") for (const [name, fn] of Object.entries(value)) el.addEventListener(name, fn);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  add(el, children);
  return el;
}

export function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function link(route, text, props) {
  return h("a", { href: "#" + route, ...(props || {}) }, text);
}

// A route with its arguments, e.g. route("/project", name, {session: s}) -> "/project/<name>?session=s".
export function route(path, arg, query) {
  let out = path + (arg === undefined || arg === null ? "" : "/" + encodeURIComponent(arg));
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) if (value) params.set(key, value);
  const rest = params.toString();
  return rest ? out + "?" + rest : out;
}

export function when(iso) {
  if (!iso) return "";
  return String(iso).replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// A table whose cells never break a word: each holds one line, cut with "…" when too long; a cut
// cell shows its whole text on demand (click, or Tab to it and press Enter) and as a tooltip.
export function table(caption, headers, rows, props) {
  return h("table", { class: "data", ...(props || {}) },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cellOf(cell)))))));
}

function cellOf(cell) {
  const inner = h("div", { class: "cell" }, cell);
  const text = inner.textContent;
  if (text.length > 24 && !(cell instanceof Node && cell.matches && cell.matches("a, button"))) {
    inner.title = text;
    inner.tabIndex = 0;
    inner.setAttribute("aria-expanded", "false");
    const toggle = () => {
      // opened, the text wraps between words only: each word (hyphens and slashes too) stays whole
      if (!inner.dataset.words && !inner.firstElementChild) {
        inner.replaceChildren(...text.split(/(\s+)/).map((part) => /\S/.test(part) ? h("span", { class: "word" }, part)
          : document.createTextNode(part)));
        inner.dataset.words = "1";
      }
      const open = inner.classList.toggle("open");
      inner.setAttribute("aria-expanded", String(open));
    };
    inner.addEventListener("click", (event) => { if (!event.target.closest("a, button")) toggle(); });
    inner.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === inner) { event.preventDefault(); toggle(); }
    });
  }
  return inner;
}

// Long stored text, shown cut to a few lines with a button for the whole of it.
export function longText(text, props) {
  const body = pre(text, { class: "text clamp", ...(props || {}) });
  if (String(text || "").split("\n").length <= 8 && String(text || "").length <= 700) return body;
  const more = button("Show the whole text", () => {
    const open = body.classList.toggle("clamp");
    more.textContent = open ? "Show the whole text" : "Show less";
  }, { class: "linkish" });
  return h("div", {}, body, more);
}

let fields = 0;

export function field(label, control) {
  const id = "f" + (++fields) + "-" + label.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  control.id = id;
  return h("label", { for: id, class: "field" }, h("span", {}, label), control);
}

export function button(text, onclick, props) {
  return h("button", { type: "button", on: { click: onclick }, ...(props || {}) }, text);
}

export function pre(text, props) {
  return h("pre", props || {}, text);
}

// -- API -------------------------------------------------------------------------------

export async function get(name, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) if (value) params.set(key, value);
  const response = await fetch("/api/" + name + "?" + params.toString(), { headers: { accept: "application/json" } });
  return answer(response);
}

// A change; `done` says what happened, in words (shown once it is saved).
export async function post(name, body, done) {
  let data;
  try {
    const response = await fetch("/api/" + name, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    data = await answer(response);
  } catch (error) {
    notice("Not saved: " + error.message);
    throw error;
  }
  if (done) notice(typeof done === "function" ? done(data) : done, false);
  return data;
}

async function answer(response) {
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  if (!response.ok) {
    const message = data && data.error ? data.error : response.status + " " + response.statusText;
    throw new Error(message);
  }
  return data;
}

// A notice that says what happened and goes away (after a few seconds, or when the page changes).
// `action` adds a button (e.g. Undo) to it.
export function notice(message, isError = true, action) {
  const el = document.getElementById("notice");
  el.replaceChildren(h("span", {}, message));
  if (action) el.append(" ", button(action.label, () => { hideNotice(); action.run(); }));
  el.className = isError ? "notice error" : "notice";
  el.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(hideNotice, action ? action.seconds * 1000 : (isError ? 8000 : 4000));
}

export function hideNotice() {
  clearTimeout(notice.timer);
  document.getElementById("notice").hidden = true;
}

// A change that can be taken back for a few seconds before it is sent: the notice counts down
// with an Undo button; leaving the page does not cancel it (it is sent at once then).
export function undoable(message, seconds, send) {
  let pending = true;
  const commit = async () => {
    if (!pending) return;
    pending = false;
    window.removeEventListener("hashchange", commit);
    await send();
  };
  window.addEventListener("hashchange", commit);
  notice(message + " (in " + seconds + " s)", false, {
    label: "Undo", seconds, run: () => {
      pending = false;
      window.removeEventListener("hashchange", commit);
      notice("Undone: nothing was changed.", false);
    },
  });
  setTimeout(commit, seconds * 1000);
}

// Asks before a change that removes something; resolves to true when confirmed.
export function confirmed(question, yes) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "confirm", "aria-label": "Confirm" }, h("p", {}, question));
    const close = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    dialog.append(h("div", { class: "actions" }, button(yes, () => close(true), { class: "danger" }),
      button("Cancel", () => close(false))));
    dialog.addEventListener("cancel", () => close(false));
    document.body.append(dialog);
    dialog.showModal();
  });
}

// -- router ------------------------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, search] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "projects", arg: parts[1], query: new URLSearchParams(search || "") };
}

let rendering = 0;
let stale = false;

async function render(keepPlace) {
  const main = document.getElementById("main");
  const where = parseHash();
  const page = pages[where.name] || pages.projects;
  const ticket = ++rendering;
  const scroll = window.scrollY;
  const waiting = keepPlace ? null : waitingNote(main, ticket);
  let content;
  try {
    await knowBuilding();
    content = await page(where.arg, where.query);
  } catch (error) {
    content = h("section", {}, h("h1", {}, "Could not load this page"), h("p", { class: "error" }, String(error.message)));
  } finally {
    if (waiting) clearInterval(waiting);
  }
  if (ticket !== rendering) return;  // a newer render started meanwhile
  main.replaceChildren(content);
  for (const a of document.querySelectorAll("header nav a")) {
    const current = a.getAttribute("href").slice(2).split("/")[0] === (where.name === "projects" ? "" : where.name);
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (keepPlace) window.scrollTo(0, scroll);
  else main.focus({ preventScroll: true });
  document.body.dataset.rendered = String(ticket);
  checkBuilding();
}

// A guess never hides: while this machine's views are built from the logs (a new machine), pages
// show what is built so far, and this banner says so and how far; the page is drawn again once done.
let watching = false;
let building = null;  // whether this machine's views are being built (null: not asked yet)

// What an empty list says: "No threads yet." once the views hold every log, never while they are built
// (what is not read yet is not absent).
export function none(text) {
  return building ? "None read yet: this machine is still building its views from the logs (the banner above says how "
    + "far); this page is drawn again when it is done." : text;
}

async function knowBuilding() {
  if (building !== null) return;
  try {
    building = !(await get("state")).tables.current;
  } catch {
    building = false;  // the server is away: the page's own error says so
  }
}

async function checkBuilding() {
  if (watching) return;
  watching = true;
  const banner = document.getElementById("building");
  let wasBuilding = false;
  try {
    for (;;) {
      const state = (await get("state")).tables;
      if (state.current) break;
      wasBuilding = building = true;
      const share = state.total_bytes ? Math.floor((100 * state.done_bytes) / state.total_bytes) : 0;
      banner.textContent = "Building this machine's views from the logs: " + share + "% ("
        + Math.round(state.done_bytes / 1e6) + " of " + Math.round(state.total_bytes / 1e6) + " MB). "
        + "Until it is done, pages show what is built so far; this page is drawn again when it is.";
      banner.hidden = false;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } catch {
    // the server is away: the live status says so
  } finally {
    watching = false;
  }
  banner.hidden = true;
  building = false;
  delete document.body.dataset.building;
  if (wasBuilding) render(true);
}

// Never a silent wait: a page that takes a moment says so, and how long it has waited.
function waitingNote(main, ticket) {
  const began = Date.now();
  return setInterval(() => {
    if (ticket !== rendering) return;
    const seconds = Math.round((Date.now() - began) / 1000);
    let note = document.getElementById("waiting");
    if (!note) {
      note = h("p", { id: "waiting", role: "status", class: "hint" });
      main.replaceChildren(note);
    }
    note.textContent = "Reading the store… " + seconds + " s. The first read on a machine (or after many new "
      + "events) brings its derived state up to date from the logs; later pages answer at once.";
  }, 1000);
}

// A live change re-renders the page, unless someone is typing in it (then once they leave the field).
function refresh() {
  const active = document.activeElement;
  if (active && active.closest("main") && active.matches("input, textarea, select")) {
    stale = true;
    return;
  }
  stale = false;
  const held = document.querySelector("main [data-live]");
  if (held) { held.dispatchEvent(new CustomEvent("changed")); return; }  // the page updates itself
  render(true);
}

export function rerender() {
  render(true);
}

// -- live updates ------------------------------------------------------------------------

function live() {
  const status = document.getElementById("live");
  const source = new EventSource("/api/events");
  let timer = null;
  let first = true;
  let lost = false;
  source.addEventListener("change", () => {
    status.textContent = "live";
    status.className = "live on";
    const opening = first;
    first = false;
    if (opening && !lost) return;  // the stream's opening event: nothing changed since the page loaded
    lost = false;
    clearTimeout(timer);
    timer = setTimeout(refresh, 150);
  });
  source.addEventListener("error", () => {
    status.textContent = "offline";
    status.className = "live off";
    first = true;  // the browser reconnects; what changed meanwhile is fetched then
    lost = true;
  });
}

window.addEventListener("hashchange", () => { hideNotice(); render(false); });
document.addEventListener("focusout", () => { if (stale) setTimeout(refresh, 0); });
render(false);
live();
