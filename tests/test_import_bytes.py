"""An import stores the same bytes from one version to the next: the same events (ids, kinds, data) for the
same file, whatever was made faster. Each event's stamp (`hlc`) and the batch frames that carry the
byte counts are left out; everything else is hashed and compared with the digest recorded before.

Re-record `RECORDED` only when what an import stores is meant to change (and say so in the changelog):
`python -c "from tests.test_import_bytes import stored_digest; print(stored_digest())"` with the store
pointed at a temporary folder, as the test does."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from contextflow.app import App
from contextflow.core import jsonio
from contextflow.imports.run import run_import
from tests.hostile.secret_corpus import credential_texts, docker_auth

# a memory.json of entities holding credentials (redacted on the way in), plain text, non-ASCII names,
# observations with line breaks, and relations between them; recorded on the version before the import
# was made faster
RECORDED = "72edab9f19d1809702ba881e2fbcb85dfef9bfdb00d8dff8ddba20b0d1cf3f23"

_WORDS = ("payments", "Zoë", "ledger", "ключ", "東京", "retry", "gateway", "cents", "a.b:c", "--flag")


def memory_json(folder: Path) -> Path:
    picked = random.Random(41)
    secrets = [*[text for *_, text in credential_texts()][::7], docker_auth()]
    lines = []
    for n in range(300):
        words = " ".join(picked.choice(_WORDS) for _ in range(picked.randint(1, 12)))
        observations = [f"{n}: {words}", f"line one\nline two {n}"][: picked.randint(1, 2)]
        if n % 3 == 0:
            observations.append(secrets[n // 3 % len(secrets)])
        entity_type = picked.choice(("decision", "service", "Person", "", "task"))
        lines.append({"type": "entity", "name": f"{picked.choice(_WORDS)} {n}", "entityType": entity_type,
                      "observations": observations})  # fmt: skip
    names = [line["name"] for line in lines]
    for _ in range(150):
        relation = picked.choice(("depends_on", "calls", "supersedes", "owns"))
        lines.append({"type": "relation", "from": picked.choice(names), "to": picked.choice(names),
                      "relationType": relation})  # fmt: skip
    path = folder / "memory.json"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines), encoding="utf-8")
    return path


def stored_digest(folder: Path | None = None) -> str:
    """The digest of the events a fresh store holds after importing `memory_json` (the store is the
    environment's: a test's temporary one)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        source = memory_json(folder or Path(tmp))
        app = App.open()
        try:
            report = run_import(app, str(source), fmt="server-memory")
            assert sum(report.stored.values()) > 300
            logs = sorted(app.store.folder.glob("*.jsonl"))
            raw = b"".join(path.read_bytes() for path in logs)
            assert raw.count(b"[REDACTED:") >= 90  # the credentials were found
            hashed = hashlib.sha256()
            for line in raw.splitlines():
                event = jsonio.loads(line)
                if "batch" not in event:
                    hashed.update(jsonio.dumps([event["id"], event["kind"], event["data"]], sort_keys=True) + b"\n")
            return hashed.hexdigest()
        finally:
            app.close()


def test_an_import_stores_the_same_events_as_before(tmp_path: Path) -> None:
    assert stored_digest(tmp_path) == RECORDED


def test_a_tag_value_is_the_same_remembered_or_not() -> None:
    """`tag_value` remembers short values' answers: each is what the rule gives, the first time and after."""
    import re

    from contextflow.imports.model import tag_value

    rule = re.compile(r"[^\w.:/@+-]+")
    picked = random.Random(7)
    letters = "aZ -_.:/@+é東İΣς\t\n!?x"
    values: list[object] = [None, 3, 2.5, True, ["a b"], "x" * 300, " " * 250 + "İ" * 50]
    values += ["".join(picked.choice(letters) for _ in range(picked.randint(0, 30))) for _ in range(5000)]
    for value in values + values:
        assert tag_value(value) == rule.sub("-", str(value).strip()).strip("-").lower()[:120]
