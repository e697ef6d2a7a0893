"""`<ctx:...>` directives an agent writes in its reply, parsed and carried out (the Stop hook).

    <ctx:remember type="fact" tags="project:x,tier:reference">text</ctx:remember>
    <ctx:recall query="type:decision AND tag:project:x"/>
    <ctx:summarize nodes="id1,id2" archive="true">summary text</ctx:summarize>
    <ctx:link from="id1" to="id2" type="DEPENDS_ON"/>
    <ctx:supersede old="id1" new="id2"/>
    <ctx:status/>
    <ctx:task name="implement-oauth" action="start"/>   (action="end" summarize="true")
    <ctx:expand node="id"/>

Directives inside code (fenced blocks of ``` or ~~~, inline code spans of any number of
backticks, as CommonMark reads them: `core/markdown.py`) are examples, not commands, and are
ignored. Each directive runs on its own: one failing does not stop the others, and its
error is reported back. Results meant for the agent (recall, status, expand, errors) come
back as `Outcome.pending` text for the next prompt.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass, field

from contextflow.app import App
from contextflow.core import regexes
from contextflow.core.checks import flag
from contextflow.core.errors import ContextflowError, InputError
from contextflow.core.markdown import mask_code
from contextflow.core.text import clip
from contextflow.core.timeutil import now_ms
from contextflow.graph import explore, inbound, model, writes
from contextflow.graph.compose import candidates_for, compose_ids
from contextflow.graph.render import status_text

AGENT = "unknown"  # when the hook cannot tell which client wrote the reply
RECALL_BUDGET = 4_000
NAMES = ("remember", "recall", "summarize", "link", "status", "task", "expand", "supersede")
_OPEN = regexes.compile(
    r"<ctx:(?P<name>[a-z-]+)(?P<attrs>(?:\s+[a-zA-Z_-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(?P<end>/?>)"
)
_CLOSE = regexes.compile(r"</ctx:(?P<name>[a-z-]+)\s*>")
_ATTR = regexes.compile(r"([a-zA-Z_-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


@dataclass(frozen=True)
class Directive:
    name: str
    attrs: dict[str, str]
    body: str


@dataclass
class Outcome:
    done: list[str] = field(default_factory=list)  # one line per directive carried out
    pending: list[str] = field(default_factory=list)  # text for the agent's next prompt
    errors: list[str] = field(default_factory=list)


def parse(text: str) -> list[Directive]:
    """The directives written in prose: code blocks and inline code are masked out first (same
    offsets), so an example is never carried out, while a directive's body keeps any code it quotes."""
    masked = mask_code(text)
    closers: dict[str, list[tuple[int, int]]] = {}  # name -> (start, end) of each closing tag, in order
    for match in _CLOSE.finditer(masked):
        closers.setdefault(match.group("name"), []).append(match.span())
    found: list[Directive] = []
    consumed = 0  # the end of the last directive: tags inside its body are its text
    for opening in _OPEN.finditer(masked):
        name = opening.group("name")
        if opening.start() < consumed:
            continue
        body = ""
        if opening.group("end") == ">":  # the body runs to the first closing tag of the same name
            ends = closers.get(name, [])
            at = bisect.bisect_left(ends, (opening.end(), -1))
            if at == len(ends):
                continue  # never closed: not a directive
            body, consumed = text[opening.end() : ends[at][0]], ends[at][1]
        else:
            consumed = opening.end()
        attrs = {
            m.group(1).lower(): html.unescape(m.group(2) if m.group(2) is not None else m.group(3))
            for m in _ATTR.finditer(opening.group("attrs") or "")
        }
        found.append(Directive(name, attrs, html.unescape(body).strip()))
    return found


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in re.split(r"[,\s]+", value or "") if part.strip()]


def _truthy(value: str | None) -> bool:
    return flag(value) is True


class Runner:
    """Carries out directives against the store as `agent` (the client that wrote them);
    `current_task` is the task in progress (machine-local)."""

    def __init__(self, app: App, current_task: str | None, agent: str = AGENT) -> None:
        self.app = app
        self.task = current_task
        self.agent = agent or AGENT  # the client that wrote the directives
        self.outcome = Outcome()

    def run(self, directives: list[Directive]) -> Outcome:
        for directive in directives:
            try:
                if directive.name not in NAMES:
                    raise InputError(f"unknown directive <ctx:{directive.name}>; known: {', '.join(NAMES)}")
                getattr(self, "do_" + directive.name)(directive)
            except ContextflowError as exc:
                message = f"<ctx:{directive.name}> failed: {exc}"
                self.outcome.errors.append(message)
                self.outcome.pending.append(f"## ctx error\n\n{message}")
        return self.outcome

    def do_remember(self, d: Directive) -> None:
        tags = model.tags(inbound.tags(_split(d.attrs.get("tags"))))
        if self.task and not any(t.startswith("task:") for t in tags):
            tags.append(f"task:{self.task}")
            if model.tier_of(set(tags)) is None:
                tags.append(model.WORKING)
        event = writes.add_node(
            self.app,
            type=inbound.node_type(d.attrs.get("type", "observation")),
            content=d.body,
            tags=tags,
            summary=d.attrs.get("summary"),
            agent=self.agent,
        )
        self.outcome.done.append(f"remembered [{event.data['type']}:{event.id}] {clip(d.body, 60)}")

    def do_recall(self, d: Directive) -> None:
        query = d.attrs.get("query", "")
        self._show(f"Recall results for `{clip(query, 200)}`", query)
        self.outcome.done.append(f"recalled {clip(query, 80)}")

    def _show(self, title: str, query: str, ids: list[str] | None = None) -> None:
        state = writes.graph(self.app)
        moment = now_ms()
        if ids is None:
            ids, _, _ = candidates_for(state, query, at_ms=moment, include_archived=True)
        else:
            ids = [i for i in ids if i in state.live]
        composed = compose_ids(state, ids, RECALL_BUDGET, at_ms=moment)
        note = f"\n({composed.report()})" if composed.dropped else ""
        body = composed.text if composed.included else "(nothing matched)\n"
        self.outcome.pending.append(f"## {title}\n\n{body}{note}")

    def do_summarize(self, d: Directive) -> None:
        done = writes.summarize(
            self.app,
            _split(d.attrs.get("nodes")),
            d.body,
            archive_sources=_truthy(d.attrs.get("archive")),
            tags=inbound.tags(_split(d.attrs.get("tags"))),
            agent=self.agent,
        )
        self.outcome.done.append(f"summarized {len(done.sources)} node(s) as [summary:{done.id}]")

    def do_link(self, d: Directive) -> None:
        writes.link(self.app, d.attrs.get("from", ""), d.attrs.get("to", ""), d.attrs.get("type", "RELATES_TO"))
        self.outcome.done.append(f"linked {d.attrs.get('from')} -> {d.attrs.get('to')}")

    def do_supersede(self, d: Directive) -> None:
        writes.supersede(self.app, d.attrs.get("old", ""), d.attrs.get("new", ""))
        self.outcome.done.append(f"superseded {d.attrs.get('old')} by {d.attrs.get('new')}")

    def do_status(self, d: Directive) -> None:
        text = status_text(explore.status(self.app))
        if self.task:
            text += f"\nCurrent task: {self.task}"
        self.outcome.pending.append(f"## ctx status\n\n{text}")
        self.outcome.done.append("status")

    def do_expand(self, d: Directive) -> None:
        state = writes.graph(self.app)
        node = writes.resolve(state, d.attrs.get("node", ""), "node")
        sources = [edge.target for edge in state.edges_out(node.id) if edge.type == "DERIVED_FROM"]
        if not sources:
            raise InputError(f"node {node.id} has no DERIVED_FROM sources to expand")
        self._show(f"Sources of [{node.type}:{node.id}]", "", sources)
        self.outcome.done.append(f"expanded {node.id}")

    def do_task(self, d: Directive) -> None:
        name = d.attrs.get("name", "").strip()
        action = d.attrs.get("action", "start").strip().lower()
        if not re.fullmatch(r"\S{1,120}", name):
            raise InputError('<ctx:task> needs name="..." without spaces, e.g. name="implement-oauth"')
        if action == "start":
            self.task = name
            self.outcome.done.append(f"task {name} started")
            return
        if action != "end":
            raise InputError('<ctx:task> action must be "start" or "end"')
        if self.task == name:
            self.task = None
        # the end archives the task's working nodes and promotes its decisions to the reference tier
        state = writes.graph(self.app)
        members = sorted(state.tagged(f"task:{name}") & state.tagged(model.WORKING) & state.live)
        decisions = [i for i in members if state.nodes[i].type == "decision"]
        others = [i for i in members if i not in decisions]
        items = writes.archive_items(state, others)
        for node_id in decisions:
            items += [
                (model.UNTAG, {"node": node_id, "tags": [model.WORKING]}),
                (model.TAG, {"node": node_id, "tags": [model.REFERENCE]}),
            ]
        if items:
            self.app.store.append_many(items)
        self.outcome.done.append(f"task {name} ended: {len(others)} archived, {len(decisions)} decision(s) promoted")
        if _truthy(d.attrs.get("summarize")) and others:
            self.outcome.pending.append(
                f"## Task {name} ended\n\n{len(others)} working node(s) were archived: {', '.join(others)}. "
                f'To keep their conclusions, write <ctx:summarize nodes="{",".join(others)}">...</ctx:summarize>.'
            )
