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

export function table(caption, headers, rows) {
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))));
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

export async function post(name, body) {
  const response = await fetch("/api/" + name, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  });
  const data = await answer(response);
  notice("Saved: " + (data && data.id ? data.id : "done"), false);
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

export function notice(message, isError = true) {
  const el = document.getElementById("notice");
  el.textContent = message;
  el.className = isError ? "notice error" : "notice";
  el.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { el.hidden = true; }, isError ? 8000 : 3000);
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
  let content;
  try {
    content = await page(where.arg, where.query);
  } catch (error) {
    content = h("section", {}, h("h1", {}, "Could not load this page"), h("p", { class: "error" }, String(error.message)));
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
}

// A live change re-renders the page, unless someone is typing in it (then once they leave the field).
function refresh() {
  const active = document.activeElement;
  if (active && active.closest("main") && active.matches("input, textarea, select")) {
    stale = true;
    return;
  }
  stale = false;
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

window.addEventListener("hashchange", () => render(false));
document.addEventListener("focusout", () => { if (stale) setTimeout(refresh, 0); });
render(false);
live();
