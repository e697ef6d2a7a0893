"""What a machine answers from its incremental derived state equals what a fresh build of the same store
folder answers: two machines write, sync each other's logs (whole-file replacements, sometimes an older
copy first or a torn last line), compact their own logs and find sync-conflict copies; after each read
every user-facing read (run as every adapter runs it: `tests/table.py`) is compared with the answer of a
new state folder built from the same store folder, the oracle.

A search is compared by the hits it finds, not their scores or ranks: tantivy counts a replaced
document (every update of a document is a delete and an add) in BM25's statistics until its segments
merge, in the background, so the same documents score a little differently on a machine that updated
them than in a fresh build, as they do between two machines; ties rank by arrival order. So a search
asks for every hit (limit 50): which hits make a shorter page's cut depends on those scores.

`CF_SWEEP_EXAMPLES` and `CF_SWEEP_STEPS` raise the number of examples and steps for a long local hunt
(the defaults keep the file fast).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from contextflow.app import App
from contextflow.core.compact import compact
from contextflow.core.errors import ContextflowError
from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import operations

WRITERS = ("wa", "wb")
PROJECTS = ("p1", "p2")
SESSIONS = ("s1", "s2")
WORDS = ("alpha", "bravo", "charlie", "delta")
KEYS = ("fact:k1", "fact:k2")
OPERATIONS = {op.name: op for op in operations()}


def run(app: App, name: str, /, **arguments: Any) -> Any:
    """Operation `name` as every adapter runs it: (its reply's data and text) or (the error it raised)."""
    op = OPERATIONS[name]
    try:
        reply = op.run(app, check_arguments(op, arguments, cli=not op.tool))
    except ContextflowError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("reply", reply.data, reply.text)


def write(app: App, name: str, /, **arguments: Any) -> Any:
    """A write; an id the machine does not hold yet (not synced) is its error, not the test's."""
    found = run(app, name, **arguments)
    if found[0] == "reply":
        return found[1]
    assert found[1] == "NotFoundError", found  # (a mistake of this test's, else)
    return None


@dataclass
class Machine:
    writer: str
    root: Path
    app: App | None = None
    history: list[bytes] = field(default_factory=list)  # every content its own log had, oldest first

    @property
    def folder(self) -> Path:
        return self.root / f"{self.writer}-store"

    @property
    def state(self) -> Path:
        return self.root / f"{self.writer}-state"

    @property
    def log(self) -> Path:
        return self.folder / f"events.{self.writer}.jsonl"

    def env(self, state: Path) -> dict[str, str]:
        return {
            **os.environ,
            "CONTEXTFLOW_STORE": str(self.folder),
            "CONTEXTFLOW_STATE": str(state),
            "CONTEXTFLOW_WRITER": self.writer,
        }

    def open(self) -> App:
        if self.app is None:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.app = App.open(self.env(self.state), cwd=self.root)
        return self.app

    def close(self) -> None:
        if self.app is not None:
            self.app.close()
            self.app = None

    def remember(self) -> None:
        content = self.log.read_bytes() if self.log.exists() else b""
        if not self.history or self.history[-1] != content:
            self.history.append(content)


def replace(target: Path, content: bytes) -> None:
    """A synced file arrives whole: a temp file renamed over the old one, as Syncthing does."""
    temp = target.with_name(f".syncthing.{target.name}.tmp")
    temp.write_bytes(content)
    os.replace(temp, target)


def reads(threads: list[str], nodes: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every read compared: sessions, records, timeline, search, graph, orientation."""
    found: list[tuple[str, dict[str, Any]]] = [("list_projects", {}), ("context_list", {}), ("whereami", {})]
    for project in PROJECTS:
        found += [
            ("get_latest_handoff", {"project": project}),
            ("list_sessions", {"project": project}),
            ("read_shared_context", {"project": project}),
            ("read_shared_context", {"project": project, "limit": 2}),  # (the newest page)
            ("list_sessions", {"project": project, "limit": 1}),
        ]
        for session in SESSIONS:
            found += [
                ("resume_session", {"project": project, "session_id": session}),
                ("get_latest_handoff", {"project": project, "session_id": session}),
            ]
    found += [("context_get", {"key": key}) for key in KEYS]
    found += [("timeline_list_threads", {}), ("timeline_where_am_i", {})]
    found += [("timeline_get_thread", {"thread_id": thread}) for thread in threads]
    found += [("get_context", {"query": word, "limit": 50}) for word in WORDS]  # (every hit: see the docstring)
    found += [("list", {}), ("tags", {}), ("recent_activity", {}), ("recent_activity", {"limit": 3})]
    found += [("context_list", {"limit": 1})]
    found += [("show", {"id": node}) for node in nodes]
    found += [("conversations list", {}), ("wherewasi", {})]
    found += [("get_conversation", {"conversation_id": f"conv-{n}"}) for n in (0, 1)]
    found += [("start-preview", {"project": project}) for project in PROJECTS]
    found += [("graph_recall", {"ids": nodes})] if nodes else []
    return found


def scoped_reads() -> list[tuple[str, dict[str, Any]]]:
    """What a reader limited to some projects (an HTTP grant's) is compared on."""
    found: list[tuple[str, dict[str, Any]]] = [("list_projects", {}), ("context_list", {}), ("list", {})]
    found += [("list_sessions", {"project": project}) for project in PROJECTS]
    found += [("read_shared_context", {"project": project}) for project in PROJECTS]
    found += [("get_latest_handoff", {"project": "p1"}), ("timeline_list_threads", {}), ("recent_activity", {})]
    found += [("get_context", {"query": word, "limit": 50}) for word in WORDS]  # (every hit: see the docstring)
    return found


def granted(app: App, projects: frozenset[str]) -> App:
    """The same machine as an HTTP grant limited to `projects` sees it."""
    from contextflow.adapters.server.auth import Grant
    from contextflow.adapters.server.http import grant_app

    return grant_app(app, Grant("reader", b"", projects, frozenset()))


RELATIVE = re.compile(r"just now|\d+ (?:second|minute)s? ago|in \d+ (?:second|minute)s?")


def normal(name: str, answer: Any, states: tuple[Path, ...]) -> Any:
    """An answer with what legitimately differs between two state folders read moments apart taken out:
    the state folder's paths, relative times, the time of asking, the database's size; and search hits of
    equal score, ranked by arrival order (which differs), compared as a set."""
    if answer[0] == "error":
        kind, text = answer[1], answer[2]
        data = None
    else:
        _, data, text = answer
        kind = "reply"
    encoded = json.dumps(data, sort_keys=True, default=str)
    for state in states:
        encoded = encoded.replace(str(state), "<state>")
        text = text.replace(str(state), "<state>")
    data = json.loads(encoded)
    text = RELATIVE.sub("<when>", text)
    if isinstance(data, dict):
        for volatile in ("now", "database_bytes"):
            data.pop(volatile, None)
        if name == "get_context":  # the hits, not their scores (see the module's docstring)
            data.pop("markdown", None)
            data.pop("tokens", None)  # (of the markdown, which shows the scores)
            data["results"] = sorted(
                ({k: v for k, v in hit.items() if k not in ("rank", "score")} for hit in data.get("results", [])),
                key=lambda hit: str(hit["id"]),
            )
            text = ""  # (ranked text: the data above holds what it shows)
    text = re.sub(r"^# Where (am I|was I) \([^,)]*", r"# Where \1 (<now>", text)
    text = re.sub(r"rendered at [0-9TZ:.-]+", "rendered at <now>", text)
    encoded = json.dumps(data, sort_keys=True)
    encoded = re.sub(r"rendered at [0-9TZ:.-]+", "rendered at <now>", RELATIVE.sub("<when>", encoded))
    return kind, encoded, text


def explain(writer: str, name: str, arguments: dict[str, Any], mine: Any, fresh: Any) -> str:
    """Where the machine's answer differs from the fresh build's."""
    import difflib

    def lines(answer: Any) -> list[str]:
        return [
            answer[0],
            *json.dumps(json.loads(answer[1]), indent=1, sort_keys=True).splitlines(),
            *answer[2].splitlines(),
        ]

    diff = difflib.unified_diff(lines(fresh), lines(mine), "fresh build", f"machine {writer}", lineterm="", n=2)
    return f"{name} {arguments}:\n" + "\n".join(diff)


def same(who: str, app: App, oracle: App, compared: list[tuple[str, dict[str, Any]]], states: tuple[Path, ...]) -> None:
    """Each read answered alike by the machine and by the fresh build."""
    for name, arguments in compared:
        mine = normal(name, run(app, name, **arguments), states)
        fresh = normal(name, run(oracle, name, **arguments), states)
        assert mine == fresh, explain(who, name, arguments, mine, fresh)


class IncrementalEqualsFresh(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="cf-incremental-"))
        self.machines = {writer: Machine(writer, self.root) for writer in WRITERS}
        for machine in self.machines.values():
            machine.open()
        self.threads: list[str] = []
        self.nodes: list[str] = []
        self.conflicts = 0
        self.oracles = 0
        self.steps = 0

    def teardown(self) -> None:
        event(f"steps: {self.steps // 5 * 5}+")
        event(f"reads compared before the end: {min(self.oracles, 5)}{'+' if self.oracles >= 5 else ''}")
        try:
            for machine in self.machines.values():  # and at the end, on both machines
                self.compare(machine)
        finally:
            for machine in self.machines.values():
                machine.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def machine(self, writer: str) -> Machine:
        return self.machines[writer]

    def wrote(self, machine: Machine) -> None:
        machine.remember()

    # -- writes ---------------------------------------------------------------------------------

    @rule(
        writer=st.sampled_from(WRITERS),
        project=st.sampled_from(PROJECTS),
        session=st.sampled_from(SESSIONS),
        word=st.sampled_from(WORDS),
        handoff=st.booleans(),
    )
    def session_entry(self, writer: str, project: str, session: str, word: str, handoff: bool) -> None:
        machine = self.machine(writer)
        base = {"agent": "claude", "project": project, "session_id": session}
        if handoff:
            write(machine.open(), "write_shared_handoff", summary=f"{word} handoff by {writer}", task=word, **base)
        else:
            write(machine.open(), "append_shared_note", text=f"{word} note by {writer}", **base)
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), key=st.sampled_from(KEYS), word=st.sampled_from(WORDS), delete=st.booleans())
    def record(self, writer: str, key: str, word: str, delete: bool) -> None:
        machine = self.machine(writer)
        if delete:
            write(machine.open(), "context_delete", key=key, agent="claude")
        else:
            write(machine.open(), "context_set", key=key, value={"text": f"{word} by {writer}"}, label=word)
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), word=st.sampled_from(WORDS), pick=st.integers(0, 5))
    def timeline(self, writer: str, word: str, pick: int) -> None:
        machine = self.machine(writer)
        if not self.threads or pick == 0:
            made = write(machine.open(), "timeline_create_thread", name=f"{word} thread", agent="claude")
            if made is not None:
                self.threads.append(made["id"])
        else:
            thread = self.threads[pick % len(self.threads)]
            write(machine.open(), "timeline_add_thought", thread_id=thread, content=f"{word} thought", agent="claude")
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), word=st.sampled_from(WORDS), pick=st.integers(0, 7))
    def graph(self, writer: str, word: str, pick: int) -> None:
        machine, app = self.machine(writer), self.machine(writer).open()
        if not self.nodes or pick < 2:
            made = write(app, "graph_remember", type="fact", content=f"{word} node by {writer}", agent="claude")
            if made is not None:
                self.nodes.append(made["id"])
        else:
            node, other = self.nodes[pick % len(self.nodes)], self.nodes[(pick * 3) % len(self.nodes)]
            if pick % 3 == 0:
                write(app, "graph_update", id=node, content=f"{word} node updated by {writer}")
            elif pick % 3 == 1:
                write(app, "graph_update", id=node, add_tags=[f"tag:{word}"])
            elif node != other:
                write(app, "graph_link", **{"from": node, "to": other, "type": "RELATES_TO"})
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), word=st.sampled_from(WORDS), which=st.integers(0, 1))
    def conversation(self, writer: str, word: str, which: int) -> None:
        machine = self.machine(writer)
        write(
            machine.open(),
            "save_conversation",
            conversation_id=f"conv-{which}",
            topic=f"{word} planning",
            summary=f"{writer} decided {word}",
            source=writer,
            project=PROJECTS[which],
        )
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), project=st.sampled_from(PROJECTS))
    def mark_wrong(self, writer: str, project: str) -> None:
        """The latest handoff this machine shows for `project` is marked wrong (every "latest" skips it)."""
        machine = self.machine(writer)
        latest = run(machine.open(), "get_latest_handoff", project=project)
        if latest[0] == "reply" and isinstance(latest[1], dict) and latest[1].get("handoff"):
            write(
                machine.open(),
                "mark_handoff_wrong",
                handoff_id=latest[1]["handoff"]["id"],
                reason="stale",
                agent="claude",
            )
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), pick=st.integers(0, 7), status=st.sampled_from(("completed", "paused")))
    def thread_status(self, writer: str, pick: int, status: str) -> None:
        machine = self.machine(writer)
        if self.threads:
            thread = self.threads[pick % len(self.threads)]
            write(machine.open(), "timeline_update_thread", thread_id=thread, status=status)
        self.wrote(machine)

    @rule(writer=st.sampled_from(WRITERS), pick=st.integers(0, 7))
    def node_deleted(self, writer: str, pick: int) -> None:
        machine = self.machine(writer)
        if self.nodes:
            write(machine.open(), "graph_update", id=self.nodes[pick % len(self.nodes)], delete=True)
        self.wrote(machine)

    # -- sync, compaction, conflict copies -------------------------------------------------------

    @rule(
        source=st.sampled_from(WRITERS),
        how=st.sampled_from(("whole", "whole", "older", "torn")),
        back=st.integers(1, 4),
        cut=st.integers(1, 200),
    )
    def sync(self, source: str, how: str, back: int, cut: int) -> None:
        """Copy `source`'s own log into the other machine's folder: whole, an older copy of it, or with
        its last line torn."""
        machine = self.machine(source)
        other = next(m for w, m in self.machines.items() if w != source)
        if not machine.log.exists():
            return
        content = machine.log.read_bytes()
        if how == "older":
            content = machine.history[max(0, len(machine.history) - 1 - back)]
        elif how == "torn":
            last = content.rstrip(b"\n").rfind(b"\n") + 1
            content = content[: last + max(1, min(cut, len(content) - last - 1))]
        other.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace(other.folder / machine.log.name, content)

    @rule(writer=st.sampled_from(WRITERS))
    def compaction(self, writer: str) -> None:
        machine = self.machine(writer)
        app = machine.open()
        compact(app.store, app.unneeded())
        self.wrote(machine)

    @rule(source=st.sampled_from(WRITERS), into=st.sampled_from(WRITERS), back=st.integers(0, 4))
    def conflict_copy(self, source: str, into: str, back: int) -> None:
        """A `.sync-conflict-…` copy of some content `source`'s log had appears in `target`'s folder."""
        history = self.machine(source).history
        if not history:
            return
        self.conflicts += 1
        name = f"events.{source}.sync-conflict-20260101-1010{self.conflicts:02d}-DEVICE{self.conflicts}.jsonl"
        replace(self.machine(into).folder / name, history[max(0, len(history) - 1 - back)])

    @rule(into=st.sampled_from(WRITERS), pick=st.integers(0, 9))
    def conflict_removed(self, into: str, pick: int) -> None:
        copies = sorted(self.machine(into).folder.glob("events.*.sync-conflict-*.jsonl"))
        if copies:
            copies[pick % len(copies)].unlink()

    @rule(writer=st.sampled_from(WRITERS))
    def new_process(self, writer: str) -> None:
        """Another process of the same machine: the same state folder, nothing held in memory."""
        self.machine(writer).close()
        self.machine(writer).open()

    @invariant()
    def count(self) -> None:
        self.steps += 1

    # -- the property ------------------------------------------------------------------------------

    @rule(writer=st.sampled_from(WRITERS))
    def read(self, writer: str) -> None:
        self.compare(self.machine(writer))

    def compare(self, machine: Machine) -> None:
        app = machine.open()
        self.oracles += 1
        fresh_state = self.root / f"fresh-{self.oracles}"
        oracle = App.open(machine.env(fresh_state), cwd=self.root)
        states = (machine.state, fresh_state)
        try:
            same(machine.writer, app, oracle, reads(self.threads, self.nodes), states)
            for projects in (frozenset({"p1"}), frozenset({"p2", app.settings.default_project})):
                mine, fresh = granted(app, projects), granted(oracle, projects)
                try:
                    same(f"{machine.writer} granted {sorted(projects)}", mine, fresh, scoped_reads(), states)
                finally:
                    mine.close()
                    fresh.close()
        finally:
            oracle.close()
            shutil.rmtree(fresh_state, ignore_errors=True)


EXAMPLES = int(os.environ.get("CF_SWEEP_EXAMPLES", "25"))
STEPS = int(os.environ.get("CF_SWEEP_STEPS", "15"))
IncrementalEqualsFresh.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None)
test_incremental_state_answers_as_a_fresh_build = IncrementalEqualsFresh.TestCase


# -- what the hunt found, each as a plain regression test ---------------------------------------------


def test_a_word_in_records_updated_since_indexing_is_still_a_strong_match(app: App) -> None:
    """Each update of a record replaces its search document; tantivy counts the replaced one in a word's
    document frequency until its segment merges. Weighed against the live documents alone, the word's idf
    went negative and every hit was flagged weak ("nothing stored matches") though each holds the word;
    a fresh build, with fewer replaced documents, said the opposite."""
    for n in range(5):
        run(app, "context_set", key=f"fact:k{n}", value={"n": n}, label="alpha")
    run(app, "append_shared_note", text="bravo", agent="claude")
    run(app, "get_context", query="alpha")  # indexed: one segment
    for n in range(5):
        run(app, "context_set", key=f"fact:k{n}", value={"n": n + 1}, label="alpha")
    found = run(app, "get_context", query="alpha")
    assert found[0] == "reply" and found[1]["count"] == 5
    assert not found[1]["weak"] and not any(hit["weak"] for hit in found[1]["results"])


def test_a_project_filter_keeps_positive_scores_after_updates(app: App) -> None:
    """The project filter boosts each term by its idf among the documents it searches over its idf in the
    project's terms; with the replaced documents of three updated nodes counted in the frequencies but not
    in the whole, the boost went negative and so did every filtered score."""
    for n in range(4):
        for project in ("web", "api"):
            run(app, "append_shared_note", text=f"alpha {n}", agent="claude", project=project)
    nodes = [run(app, "graph_remember", type="fact", content=f"alpha node {n}")[1]["id"] for n in range(3)]
    run(app, "get_context", query="alpha")  # indexed: one segment
    for node in nodes:
        run(app, "graph_update", id=node, content="alpha node changed")

    def scores(**scope: str) -> dict[str, float]:
        found = run(app, "get_context", query="alpha", limit=20, **scope)
        return {hit["id"]: hit["score"] for hit in found[1]["results"]}

    every, web = scores(), scores(project="web")
    assert len(web) == 7 and all(score > 0 for score in web.values())
    assert set(web) <= set(every)  # the same documents, scored by the project's own frequencies


def test_the_feed_shows_an_event_alike_whichever_of_its_copies_was_read_first(tmp_path: Path) -> None:
    """Compaction keeps a superseded conversation save reduced to a few fields, under its id; a sync-conflict
    copy of the log from before still holds it whole. The feed kept whichever copy it read first: a machine
    that met the conflict copy first showed the save's words, a fresh build (the log first) an empty line."""
    a, b = Machine("wa", tmp_path), Machine("wb", tmp_path)
    try:
        for summary in ("the first plan", "the second plan"):
            write(b.open(), "save_conversation", conversation_id="c", topic="alpha planning", summary=summary)
        a.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace(a.folder / "events.wb.sync-conflict-20260101-101010-DEVICE.jsonl", b.log.read_bytes())
        shown = run(a.open(), "recent_activity")  # the conflict copy: each save whole
        assert "the first plan" in shown[2]
        assert compact(b.open().store, b.open().unneeded()).changed  # the first save, reduced
        replace(a.folder / b.log.name, b.log.read_bytes())
        fresh = App.open(a.env(tmp_path / "fresh-state"), cwd=tmp_path)
        try:
            states = (a.state, tmp_path / "fresh-state")
            mine, built = (normal("recent_activity", run(app, "recent_activity"), states) for app in (a.open(), fresh))
            assert mine == built, explain("wa", "recent_activity", {}, mine, built)
            assert "the first plan" in mine[2]  # the copy holding more is the one shown
        finally:
            fresh.close()
    finally:
        a.close()
        b.close()
