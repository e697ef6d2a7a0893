"""Every read operation of the table (read only, reading the store) under another process's exclusive lock on
views.sqlite3, in rollback-journal mode (readers shut out too) and in WAL mode, after writes made under the lock
of everything the reads show: each waits for the lock once at most (counted: `tests/locking.py`), and answers as
the same operation does once the lock is released, or says plainly that its answer is partial. "Not found", an
empty list or an older item shown as the newest never come from a lock.

One store is stocked for the module; each lock mode holds it once, writes once and runs every read under the
lock (each in a new App, as a new process), then every read again once the lock is gone: the tests compare."""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from contextflow.app import App
from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import Operation, operations
from tests.locking import MODES, Waits, counted_waits, shut_out

OPERATIONS = {op.name: op for op in operations()}
BASE = {"agent": "claude", "project": "p", "session_id": "s-lock"}
# Read operations left out, and why
SKIPPED = {
    "serve": "starts the MCP server, which reads the protocol from standard input until it closes",
    "pick-session": "a terminal picker: it waits for a person's keys",
}


class Stock(NamedTuple):
    """The stocked store's folder, and the ids the reads name."""

    root: Path
    thread: str  # an active thread, given a thought under the lock
    node: str  # a node linked, under the lock, from one written under it


class Answer(NamedTuple):
    kind: str  # "reply" or the error's class
    data: Any
    text: str
    waits: int


def arguments(name: str, stock: Stock, new_node: str) -> dict[str, Any]:
    """What each read is asked: what was written under the lock (an id, a key, a view) where it names one."""
    asked: dict[str, dict[str, Any]] = {
        "read_shared_context": {"project": "p"},
        "get_latest_handoff": {"project": "p"},
        "list_sessions": {"project": "p"},
        "resume_session": {"project": "p", "session_id": "s-lock"},
        "session_activity": {"project": "p", "session_id": "s-lock"},
        "context_get": {"key": "fact:under-lock"},
        "timeline_get_thread": {"thread_id": stock.thread},
        "get_context": {"query": "websocket", "limit": 50},
        "get_conversation": {"conversation_id": "conv-lock"},
        "graph_recall": {"ids": [new_node, stock.node]},
        "show": {"id": new_node},
        "edges": {"id": new_node},
        "query": {"query": "tag:area:lock"},
        "trace": {"id": new_node},
        "related": {"id": stock.node},
        "view render": {"view": "lockview"},
        "doctor": {"quick": True},
        "start-preview": {"project": "p", "session_id": "s-lock"},
    }
    return asked.get(name, {})


def reads() -> list[str]:
    return [op.name for op in operations() if op.read_only and op.needs_store and op.name not in SKIPPED]


def ask(op: Operation, app: App, args: dict[str, Any]) -> tuple[str, Any, str]:
    """What `op` answers: its reply's data and text (with what it printed itself, as `export` does), or the error
    it raised."""
    printed = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(printed):
            reply = op.run(app, check_arguments(op, args, cli=not op.tool))
    except Exception as exc:  # (a ContextflowError is what its caller is told; another, a crash)
        return type(exc).__name__, None, str(exc)
    printed.flush()
    return "reply", reply.data, reply.text + printed.buffer.getvalue().decode()


def environ(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """The store, state folder, home and working folder under `root`; project `p`."""
    home = root / "home"
    for folder in (home, root / "work"):
        folder.mkdir(exist_ok=True)
    for key, value in {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CACHE_HOME": home / ".cache",
        "CONTEXTFLOW_STORE": root / "store",
        "CONTEXTFLOW_STATE": root / "state",
        "CONTEXTFLOW_WRITER": "writer-a",
        "MCP_SHARED_CONTEXT_PROJECT": "p",
    }.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.chdir(root / "work")


def write(app: App, name: str, /, **args: Any) -> Any:
    op = OPERATIONS[name]
    return op.run(app, check_arguments(op, args, cli=not op.tool)).data


def turn(app: App, n: int, words: str) -> None:
    """A turn captured from a client's transcript."""
    data = {**BASE, "turn_id": f"turn-{n}", "turn": {"request": f"request {n}", "final": words}}
    app.store.append("capture.turn", data)


def stock_up(app: App) -> Stock:
    """Notes and handoffs, records, threads and thoughts, graph nodes and links, a view, a conversation saved,
    captured turns: a little of everything the reads show."""
    write(app, "use_session", session_id="s-lock")
    for n in range(6):
        write(app, "append_shared_note", **BASE, text=f"note {n} about the websocket reconnect")
        turn(app, n, f"answered {n} about the websocket")
        if n % 3 == 0:
            write(app, "write_shared_handoff", **BASE, task=f"task {n}", summary=f"handoff {n}")
    thread = write(app, "timeline_create_thread", name="websocket thread", agent="claude")["id"]
    paused = write(app, "timeline_create_thread", name="paused thread", agent="claude")["id"]
    for n in range(3):
        write(app, "timeline_add_thought", thread_id=thread, content=f"thought {n}", agent="claude")
        write(app, "timeline_add_thought", thread_id=paused, content=f"paused thought {n}", agent="claude")
    write(app, "timeline_update_thread", thread_id=paused, status="paused")
    write(app, "context_set", key="fact:k1", value={"text": "k1"}, label="k1", thread_id=paused)
    write(app, "context_set", key="fact:k2", value={"text": "k2"}, pinned=True)
    nodes = [write(app, "graph_remember", type="fact", content=f"node {n}", tags=["area:net"])["id"] for n in range(3)]
    write(app, "graph_link", **{"from": nodes[0], "to": nodes[1], "type": "RELATES_TO"})
    write(app, "view create", name="netview", query="tag:area:net")
    write(
        app, "save_conversation", conversation_id="conv-0", topic="websocket planning", summary="decided", project="p"
    )
    return Stock(Path(), thread, nodes[1])


def write_under_lock(app: App, stock: Stock) -> str:
    """What each read shows, written while another process holds the tables: the id of the node made."""
    write(app, "append_shared_note", **BASE, text="note under the lock")
    write(app, "write_shared_handoff", **BASE, task="the task under the lock", summary="handoff under the lock")
    write(app, "context_set", key="fact:under-lock", value={"text": "set under the lock"}, pinned=True)
    write(app, "timeline_add_thought", thread_id=stock.thread, content="thought under the lock", agent="claude")
    node = write(app, "graph_remember", type="fact", content="node under the lock", tags=["area:lock"])["id"]
    write(app, "graph_link", **{"from": node, "to": stock.node, "type": "RELATES_TO"})
    write(app, "view create", name="lockview", query="tag:area:lock")
    write(app, "save_conversation", conversation_id="conv-lock", topic="lock planning", summary="under the lock")
    turn(app, 99, "answered under the lock")
    return str(node)


@pytest.fixture(scope="module")
def stocked(tmp_path_factory: pytest.TempPathFactory) -> Stock:
    """The store, its tables and search index built, kept aside as `pristine` (each mode starts from a copy of
    it in place: the tables' read positions name the logs' paths)."""
    root = tmp_path_factory.mktemp("locked-all")
    with pytest.MonkeyPatch.context() as monkeypatch:
        environ(monkeypatch, root)
        app = App.open()
        try:
            stock = stock_up(app)._replace(root=root)
            assert "websocket" in write(app, "get_context", query="websocket")["markdown"]  # (the index built)
            app.tables().update()
        finally:
            app.close()
    for folder in ("store", "state"):
        shutil.copytree(root / folder, root / "pristine" / folder)
    return stock


def restored(stock: Stock) -> None:
    for folder in ("store", "state"):
        shutil.rmtree(stock.root / folder)
        shutil.copytree(stock.root / "pristine" / folder, stock.root / folder)


def answer(name: str, args: dict[str, Any], waits: Waits) -> Answer:
    """`name`'s answer in a new App (as a new process), and the waits it took."""
    waits.count = 0
    app = App.open()
    try:
        kind, data, text = ask(OPERATIONS[name], app, args)
    finally:
        app.close()
    return Answer(kind, data, text, waits.count)


@pytest.fixture(scope="module")
def locked(request: pytest.FixtureRequest, stocked: Stock) -> dict[str, tuple[Answer, Answer]]:
    """Per read, its answer under the lock (held in mode `request.param`) after the writes under it, and its
    answer once the lock is released."""
    mode = str(request.param)
    restored(stocked)
    found: dict[str, tuple[Answer, Answer]] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        environ(monkeypatch, stocked.root)
        waits = counted_waits(monkeypatch)
        app = App.open()
        path = app.tables().path
        app.close()
        with shut_out(path, mode):
            app = App.open()
            try:
                node = write_under_lock(app, stocked)
            finally:
                app.close()
            under = {name: answer(name, arguments(name, stocked, node), waits) for name in reads()}
        for name in reads():
            found[name] = (under[name], answer(name, arguments(name, stocked, node), waits))
    return found


RELATIVE = re.compile(r"just now|\d+ (?:second|minute)s? ago|in \d+ (?:second|minute)s?")
NOW = re.compile(r'(rendered at |# Where (?:am|was) I \(|"exported_at": ")[0-9TZ:.-]+')  # the time of asking
SIZE = re.compile(r"(?m)(^Database: .*\()[0-9.]+ [KMG]?B")  # the tables' size (`graph_status`): a catch-up grows it
VOLATILE = ("now", "database_bytes")  # the data's keys for the same
# What `doctor` says of this machine's derived state itself (is it current, how big): its data's keys, its lines
DERIVED_KEYS = ("derived", "tables")
DERIVED_LINES = re.compile(r"(?m)^(?:search index|views on disk): .*$")
# What a derived-state line may say under the lock instead of what it says after (the catch-up made it current)
LOCKED_STATE = ("behind the logs", "could not be read")


def normal(name: str, answer: Answer) -> tuple[str, str, str]:
    """An answer without what differs between two moments: relative times, the time of asking, the tables' size,
    what `doctor` says of the derived state itself (checked apart: `derived_state_said`)."""
    data = answer.data
    if isinstance(data, dict):
        gone = (*VOLATILE, *(DERIVED_KEYS if name == "doctor" else ()))
        data = {key: value for key, value in data.items() if key not in gone}
    encoded = json.dumps(data, sort_keys=True, default=str)
    text = DERIVED_LINES.sub("", answer.text) if name == "doctor" else answer.text
    for pattern, by in ((RELATIVE, "<when>"), (NOW, r"\1<now>"), (SIZE, r"\1<size>")):
        encoded, text = pattern.sub(by, encoded), pattern.sub(by, text)
    return answer.kind, encoded, text


def derived_state_said(under: Answer, after: Answer) -> list[str]:
    """`doctor`'s lines on the derived state under the lock that neither say what they say after it nor that
    the state is behind or could not be read (a search index "not built", tables "empty")."""
    said = DERIVED_LINES.findall(after.text)
    return [
        line
        for line in DERIVED_LINES.findall(under.text)
        if line not in said and not any(words in line for words in LOCKED_STATE)
    ]


def explain(name: str, under: Answer, after: Answer) -> str:
    """Where the answer under the lock differs from the one after it."""

    def lines(answer: Answer) -> list[str]:
        kind, encoded, text = normal(name, answer)
        return [kind, *json.dumps(json.loads(encoded), indent=1, sort_keys=True).splitlines(), *text.splitlines()]

    diff = difflib.unified_diff(lines(after), lines(under), "unlocked", "under the lock", lineterm="", n=2)
    return f"{name}:\n" + "\n".join(diff)


PARTIAL_MARKS = ("PARTIAL:", "could not be read", "still reading the store's logs")


def plainly_partial(answer: Answer) -> bool:
    """Whether the answer says it is partial (`operations.spec.partial`, the search's notes, the session
    start's)."""
    return answer.kind == "reply" and any(mark in answer.text for mark in PARTIAL_MARKS)


def test_every_read_of_the_table_is_checked_or_named_as_skipped() -> None:
    every = {op.name for op in operations() if op.read_only and op.needs_store}
    assert set(SKIPPED) <= every
    assert len(reads()) == len(every) - len(SKIPPED) > 30


@pytest.mark.parametrize("locked", MODES, indirect=True, scope="module")
@pytest.mark.parametrize("name", reads())
def test_a_read_under_an_exclusive_lock_waits_once_and_answers_as_unlocked_or_says_partial(
    locked: dict[str, tuple[Answer, Answer]], stocked: Stock, name: str
) -> None:
    under, after = locked[name]
    assert under.waits <= 1, f"{name} waited for the lock {under.waits} times"
    assert after.kind == "reply" and after.text.strip(), after  # (the read itself is sound, and shows something)
    assert not derived_state_said(under, after), (derived_state_said(under, after), under.text)
    if plainly_partial(under) and name != "doctor":  # (doctor's only partial parts are its derived state's)
        return
    assert normal(name, under) == normal(name, after), explain(name, under, after)
