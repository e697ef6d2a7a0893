"""`contextflow compact`: only this writer's log is rewritten, only what later events in it supersede
goes, and machines that read the old file converge on the same views with nothing lost or revived.

Machines are folders; syncing copies each machine's own log to the other folder with a
temp-file rename, as Syncthing does. Every check compares against a reference store that holds
the same events without compaction.
"""

from __future__ import annotations

import gzip
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.compact import compact
from contextflow.core.errors import InputError, StoreError
from contextflow.core.log import replace_log, signature
from tests.folding import view_of
from tests.sync.workload import differences, picture, write_round


@dataclass
class Machine:
    root: Path
    writer: str
    apps: list[App] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.root / f"{self.writer}-store"

    @property
    def log(self) -> Path:
        return self.folder / f"events.{self.writer}.jsonl"

    def open(self, writer: str | None = None, **kwargs: Any) -> App:
        env = {
            **os.environ,
            "CONTEXTFLOW_STORE": str(self.folder),
            "CONTEXTFLOW_WRITER": writer or self.writer,
            "CONTEXTFLOW_STATE": str(self.root / f"{self.writer}-state-{len(self.apps)}"),
        }
        app = App.open(env, **kwargs)
        self.apps.append(app)
        return app


def sync(*machines: Machine) -> None:
    """Copy every machine's own log to every other machine, replacing the file as Syncthing does."""
    for source in machines:
        if not source.log.exists():
            continue
        for target in machines:
            if target is source:
                continue
            target.folder.mkdir(mode=0o700, exist_ok=True)
            temp = target.folder / f".syncthing.{source.log.name}.tmp"
            temp.write_bytes(source.log.read_bytes())
            os.replace(temp, target.folder / source.log.name)


def reference(root: Path, logs: dict[str, bytes]) -> dict[str, Any]:
    """The picture of a store holding exactly these log contents, folded from scratch."""
    folder = root / f"reference-{len(list(root.glob('reference-*')))}"
    folder.mkdir(mode=0o700)
    for writer, data in logs.items():
        (folder / f"events.{writer}.jsonl").write_bytes(data)
    env = {**os.environ, "CONTEXTFLOW_STORE": str(folder), "CONTEXTFLOW_STATE": str(folder.with_suffix(".state"))}
    return picture(App.open(env, shares_state=False))


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Machine, Machine]:
    return Machine(tmp_path, "alpha"), Machine(tmp_path, "beta")


# -- the end-to-end promise -------------------------------------------------------------------


def test_compacting_on_a_while_b_writes_loses_and_revives_nothing(pair, tmp_path: Path):
    a, b = pair
    app_a, app_b = a.open(), b.open()
    for i in range(6):
        write_round(app_a, i)
        write_round(app_b, i)
        if i % 2:
            sync(a, b)
    sync(a, b)
    assert app_b.store.event_count == app_a.store.event_count  # b has read a's whole old log

    old_a = a.log.read_bytes()
    report = compact(app_a.store, app_a.unneeded())
    assert report.changed and report.bytes_after < report.bytes_before
    compacted = a.log.read_bytes()
    for i in range(6, 9):  # b writes while a compacts, a writes after it
        write_round(app_b, i)
        write_round(app_a, i)
    appended_after = a.log.read_bytes()[len(compacted) :]
    sync(a, b)

    expected = reference(tmp_path, {"alpha": old_a + appended_after, "beta": b.log.read_bytes()})
    for name, app in (
        ("a incremental", app_a),
        ("b incremental", app_b),
        ("a fresh", a.open(shares_state=False)),
        ("b fresh", b.open(shares_state=False)),
    ):
        assert differences(expected, picture(app)) == [], name


def test_a_delete_compacted_away_from_its_set_still_hides_an_older_write_from_another_machine(pair, tmp_path):
    a, b = pair
    app_a, app_b = a.open(), b.open()
    app_b.store.append("context.set", {"key": "pr:1", "value": {"state": "open"}})  # not synced yet
    app_a.store.append("context.set", {"key": "pr:1", "value": {"state": "merged"}})
    app_a.store.append("context.delete", {"key": "pr:1"})
    app_a.store.append("note", {"text": "later", "session_id": "s"})
    report = compact(app_a.store, app_a.unneeded())
    assert report.dropped == {"context.set": 1}
    sync(a, b)
    for app in (app_a, app_b, a.open(shares_state=False)):
        assert view_of(app.store, "records").live(("shared", "pr:1")) is None


def test_an_expired_last_write_stays_and_keeps_older_writes_hidden(pair):
    a, b = pair
    app_a, app_b = a.open(), b.open()
    app_b.store.append("context.set", {"key": "clip:x", "value": {"v": "old"}})
    sync(a, b)  # a writes after reading b's write, so a's orders later even within the same millisecond
    app_a.store.append("context.set", {"key": "clip:x", "value": {"v": "new"}, "expires_at": "2000-01-01T00:00:00Z"})
    compact(app_a.store, app_a.unneeded())
    assert any(line["kind"] == "context.set" for line in lines_of(a.log))
    sync(a, b)
    record = view_of(b.open(shares_state=False).store, "records").live(("shared", "clip:x"))
    assert record is not None and record.expired(10**13) and record.data["value"] == {"v": "new"}


def test_when_a_record_was_created_survives_compaction_and_a_concurrent_delete(pair, tmp_path):
    a, b = pair
    app_a, app_b = a.open(), b.open()
    app_a.store.append("context.set", {"key": "k", "value": {"n": 1}})
    app_b.store.append("context.delete", {"key": "k"})  # ordered between a's writes, not yet seen by a
    app_a.store.append("context.set", {"key": "k", "value": {"n": 2}})
    app_a.store.append("context.set", {"key": "k", "value": {"n": 3}})
    old_a = a.log.read_bytes()
    report = compact(app_a.store, app_a.unneeded())
    assert report.reduced == {"context.set": 2}
    sync(a, b)
    expected = reference(tmp_path, {"alpha": old_a, "beta": b.log.read_bytes()})
    for app in (app_a, app_b):
        assert picture(app)["records"] == expected["records"]


def test_conversation_versions_and_first_save_survive_compaction(pair, tmp_path):
    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("conversation.save", {"conversation_id": "c1", "topic": f"v{n}", "summary": "x" * 500})
    before = view_of(app.store, "conversations").records[("shared", "c1")]
    first_ts, versions = before.first_ts, before.versions
    report = compact(app.store, app.unneeded())
    assert report.reduced == {"conversation.save": 2} and report.bytes_after < report.bytes_before / 2
    after = view_of(a.open(shares_state=False).store, "conversations").records[("shared", "c1")]
    assert (after.first_ts, after.versions, after.event.data["topic"]) == (first_ts, versions, "v2")


def test_notes_and_handoffs_are_never_dropped(pair):
    a, _ = pair
    app = a.open()
    for n in range(5):
        app.store.append("note", {"text": f"n{n}", "session_id": "s"})
    app.store.append("handoff", {"summary": "done", "session_id": "s"})
    before = a.log.read_bytes()
    assert not compact(app.store, app.unneeded()).changed
    assert a.log.read_bytes() == before


# -- a random mix of writes, syncs and compactions ---------------------------------------------

KEYS = ("k1", "k2")
OPS = st.sampled_from(
    [
        "set",
        "set_expired",
        "delete",
        "save",
        "thread_update",
        "position",
        "node_update",
        "tag",
        "untag",
        "edge",
        "unedge",
        "note",
        "sync",
        "compact",
    ]
)


def apply_op(app: App, op: str, n: int, anchors: dict[str, str]) -> None:
    key = KEYS[n % 2]
    if op == "set":
        app.store.append("context.set", {"key": key, "value": {"n": n}})
    elif op == "set_expired":
        app.store.append("context.set", {"key": key, "value": {"n": n}, "expires_at": "2001-01-01T00:00:00Z"})
    elif op == "delete":
        app.store.append("context.delete", {"key": key})
    elif op == "save":
        app.store.append("conversation.save", {"conversation_id": f"c{n % 2}", "topic": f"t{n}", "summary": "s"})
    elif op == "thread_update":
        status = ["paused", "active"][n % 2]
        app.store.append("timeline.thread_update", {"thread_id": anchors["thread"], "status": status})
    elif op == "position":
        app.store.append("timeline.position", {"thread_id": anchors["thread"], "thought_id": anchors["thought"]})
    elif op == "node_update":
        app.store.append("graph.node_update", {"node": anchors["node"], "content": f"c{n}"})
    elif op in ("tag", "untag"):
        app.store.append(f"graph.{op}", {"node": anchors["node"], "tags": [f"t:{n % 2}"]})
    elif op in ("edge", "unedge"):
        kind = "graph.edge" if op == "edge" else "graph.edge_delete"
        app.store.append(kind, {"from": anchors["node"], "to": anchors["other"], "type": "RELATES_TO"})
    else:
        app.store.append("note", {"text": f"note {n}", "session_id": "s"})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["alpha", "beta"]), OPS), min_size=4, max_size=30))
def test_any_mix_of_writes_syncs_and_compactions_matches_the_uncompacted_store(tmp_path_factory, steps):
    root = tmp_path_factory.mktemp("mix")
    machines = {w: Machine(root, w) for w in ("alpha", "beta")}
    apps = {w: m.open() for w, m in machines.items()}
    seed = apps["alpha"]
    thread = seed.store.append("timeline.thread", {"name": "t", "status": "active"})
    anchors = {
        "thread": thread.id,
        "thought": seed.store.append("timeline.thought", {"thread_id": thread.id, "content": "x"}).id,
        "node": seed.store.append("graph.node", {"type": "fact", "content": "a"}).id,
        "other": seed.store.append("graph.node", {"type": "fact", "content": "b"}).id,
    }
    sync(*machines.values())
    uncompacted = {w: m.log.read_bytes() if m.log.exists() else b"" for w, m in machines.items()}
    compacted: list[bool] = []
    for n, (writer, op) in enumerate(steps):
        machine, app = machines[writer], apps[writer]
        if op == "sync":
            sync(*machines.values())
            continue
        size = machine.log.stat().st_size if machine.log.exists() else 0
        if op == "compact":
            compacted.append(compact(app.store, app.unneeded()).changed)
            continue
        apply_op(app, op, n, anchors)
        uncompacted[writer] += machine.log.read_bytes()[size:]
    for writer, app in apps.items():  # finally both compact, then each writes once more
        compacted.append(compact(app.store, app.unneeded()).changed)
        size = machines[writer].log.stat().st_size if machines[writer].log.exists() else 0
        apply_op(app, "set", len(steps), anchors)
        uncompacted[writer] += machines[writer].log.read_bytes()[size:]
    sync(*machines.values())
    event(f"compactions that changed a log: {min(sum(compacted), 3)}+")
    expected = reference(root, uncompacted)
    for writer, app in apps.items():
        assert differences(expected, picture(app)) == [], writer
        assert differences(expected, picture(machines[writer].open(shares_state=False))) == [], writer


# -- the rewrite itself ------------------------------------------------------------------------


def test_only_this_writers_log_is_rewritten_and_stays_private(pair):
    a, b = pair
    app_a, app_b = a.open(), b.open()
    for n in range(3):
        app_b.store.append("context.set", {"key": "k", "value": {"n": n}})
        app_a.store.append("context.set", {"key": "k", "value": {"n": n}})
    sync(a, b)
    theirs = (a.folder / "events.beta.jsonl").read_bytes()
    assert compact(app_a.store, app_a.unneeded()).changed
    assert (a.folder / "events.beta.jsonl").read_bytes() == theirs
    assert stat.S_IMODE(a.log.stat().st_mode) == 0o600
    assert {p.name for p in a.folder.iterdir()} == {"events.alpha.jsonl", "events.beta.jsonl"}  # no temp left


def test_unreadable_lines_and_a_torn_last_line_are_kept_byte_for_byte(pair):
    a, _ = pair
    app = a.open()
    app.store.append("context.set", {"key": "k", "value": {"n": 1}})
    with open(a.log, "ab") as handle:
        handle.write(b"{this is not json\n")
    app.store.append("context.set", {"key": "k", "value": {"n": 2}})
    with open(a.log, "ab") as handle:
        handle.write(b'{"v": 1, "id": "torn-in-the-midd')
    report = compact(app.store, app.unneeded())
    data = a.log.read_bytes()
    assert b"{this is not json\n" in data and data.endswith(b'{"v": 1, "id": "torn-in-the-midd')
    assert report.kept_unreadable == 1 and report.reduced == {"context.set": 1}


def test_a_repeated_line_is_kept_once(pair):
    a, _ = pair
    app = a.open()
    app.store.append("note", {"text": "twice", "session_id": "s"})
    with open(a.log, "ab") as handle:
        handle.write(a.log.read_bytes())
    report = compact(app.store, app.unneeded())
    assert report.duplicates == 1 and len(lines_of(a.log)) == 1


def test_sequence_numbers_carry_on_after_compaction(pair):
    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    app.store.append("context.delete", {"key": "k"})
    compact(app.store, app.unneeded())
    assert [line["seq"] for line in lines_of(a.log)] == [4]
    assert app.store.append("note", {"text": "next", "session_id": "s"}).seq == 5
    assert a.open(shares_state=False).store.append("note", {"text": "again", "session_id": "s"}).seq == 6


def test_a_dry_run_writes_nothing(pair):
    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    before = a.log.read_bytes()
    report = compact(app.store, app.unneeded(), dry_run=True)
    assert report.changed and report.lines_after == 3 and a.log.read_bytes() == before


def test_the_old_generation_can_be_archived_outside_the_store(pair, tmp_path):
    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    before = a.log.read_bytes()
    report = compact(app.store, app.unneeded(), archive=tmp_path / "archive")
    assert report.archive is not None
    assert gzip.decompress(Path(report.archive).read_bytes()) == before
    assert stat.S_IMODE(Path(report.archive).stat().st_mode) == 0o600


def test_an_archive_folder_inside_the_store_is_refused(pair):
    a, _ = pair
    app = a.open()
    app.store.append("context.set", {"key": "k", "value": {"n": 1}})
    before = a.log.read_bytes()
    with pytest.raises(InputError, match="inside the synced store"):
        compact(app.store, app.unneeded(), archive=a.folder / "archive")
    assert a.log.read_bytes() == before


def test_a_projection_that_cannot_answer_keeps_everything(pair, monkeypatch):
    from contextflow import features

    original = features.all_unneeded
    monkeypatch.setattr(features, "all_unneeded", lambda: {**original(), "opaque": None})
    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    before = a.log.read_bytes()
    report = compact(app.store, app.unneeded())
    assert report.blocked_by == ["opaque"] and not report.changed and a.log.read_bytes() == before


def test_a_log_replaced_by_a_sync_tool_mid_rewrite_is_left_alone(pair):
    a, _ = pair
    app = a.open()
    app.store.append("note", {"text": "x", "session_id": "s"})
    stale = signature(a.log)
    app.store.append("note", {"text": "y", "session_id": "s"})
    current = a.log.read_bytes()
    with pytest.raises(StoreError, match="changed while it was being rewritten"):
        replace_log(a.log, b"", stale)
    assert a.log.read_bytes() == current
    assert not list(a.folder.glob(".*.tmp"))


def test_compacting_a_store_without_a_log_yet_does_nothing(pair):
    a, _ = pair
    opened = a.open()
    report = compact(opened.store, opened.unneeded())
    assert not report.changed and report.bytes_before == 0


# -- the command -------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_compact_command_reports_what_it_dropped(app, store_dir, capsys):
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    app.store.append("context.delete", {"key": "k"})
    code, out, _ = cli(capsys, "compact", "--format", "json")
    shown = orjson.loads(out)
    assert code == 0 and shown["dropped"] == {"context.set": 3} and shown["changed"]
    code, out, _ = cli(capsys, "compact")
    assert code == 0 and "nothing to compact" in out


def test_the_compact_command_in_text_with_an_archive(app, store_dir, tmp_path, capsys):
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    code, out, _ = cli(capsys, "compact", "--archive", "--dry-run")
    assert code == 0 and "would compact" in out and "reduced: context.set 2" in out
    code, out, _ = cli(capsys, "compact", "--archive")
    assert code == 0 and "old log archived at" in out and str(tmp_path / "state") in out


def test_the_compact_command_refuses_an_archive_inside_the_store(app, store_dir, capsys):
    app.store.append("note", {"text": "x", "session_id": "s"})
    code, _, err = cli(capsys, "compact", "--archive-dir", str(store_dir / "old"))
    assert code == 2 and "inside the synced store" in err


def test_the_compact_command_rejects_unknown_options(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["compact", "--everything"])
    assert exited.value.code == 2


def test_a_temp_file_left_by_a_killed_compaction_is_cleaned_up_next_time(pair):
    import subprocess
    import sys

    a, _ = pair
    app = a.open()
    for n in range(3):
        app.store.append("context.set", {"key": "k", "value": {"n": n}})
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    stale = a.folder / f".{a.log.name}.{int(dead.stdout)}.123.tmp"
    alive = a.folder / f".{a.log.name}.{os.getppid()}.456.tmp"
    stale.write_bytes(b"half a rewrite")
    alive.write_bytes(b"another process is still writing this")
    compact(app.store, app.unneeded())
    assert not stale.exists() and alive.exists()
