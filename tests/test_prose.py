"""How a turn's prose is read (capture/prose.py): each chosen and each rejected option keeps its own
reason, in the phrasings people and models use; what states no decision gives none."""

from __future__ import annotations

import pytest

from contextflow.capture import prose, substance

C, R = "chosen", "rejected"

# (prose, [(status, words the option holds, words its reason holds or None for no reason), ...])
DECISIONS: list[tuple[str, list[tuple[str, str, str | None]]]] = [
    (
        "We keep the JSONL log because it merges on sync; rejected SQLite as the source of truth because it "
        "conflicts when two machines write.",
        [(C, "keep the JSONL log", "merges on sync"), (R, "SQLite as the source of truth", "two machines write")],
    ),
    ("Rejected: Postgres, because it needs a server.", [(R, "Postgres", "needs a server")]),
    ("Rejected: a daemon (startup cost is fine).", [(R, "a daemon", "startup cost is fine")]),
    (
        "We went with SQLite over Postgres since it ships in the standard library.",
        [(C, "went with SQLite", "standard library"), (R, "Postgres", "standard library")],
    ),
    (
        "SQLite, not Postgres, because it is embedded.",
        [(C, "SQLite", "embedded"), (R, "Postgres", "embedded")],
    ),
    (
        "I chose tantivy instead of whoosh because it is ten times faster.",
        [(C, "chose tantivy", "ten times faster"), (R, "whoosh", "ten times faster")],
    ),
    ("We decided against a background daemon (startup cost is fine).", [(R, "background daemon", "startup cost")]),
    (
        "Looked at both. We decided to round per line rather than per invoice because per-invoice rounding "
        "hides cents.",
        [(C, "round per line", "hides cents"), (R, "per invoice", "hides cents")],
    ),
    (
        "Decisions:\n- Store money as integer cents because floats drift\n- Keep the CLI flat\n\n"
        "Rejected:\n- Decimal type: too slow for the hot path\n- A plugin system, because nobody asked for one",
        [
            (C, "integer cents", "floats drift"),
            (C, "Keep the CLI flat", None),
            (R, "Decimal type", "hot path"),
            (R, "plugin system", "nobody asked"),
        ],
    ),
    (
        "## Rejected alternatives\n1. Postgres — needs a server\n2. **DuckDB** (too large a wheel)",
        [(R, "Postgres", "needs a server"), (R, "DuckDB", "too large a wheel")],
    ),
    (
        "We dropped the idea of a cache in favour of a bloom filter because memory is tight.",
        [(R, "a cache", "memory is tight"), (C, "bloom filter", "memory is tight")],
    ),
    ("Redis was rejected because it needs a server.", [(R, "Redis", "needs a server")]),
    ("Redis was ruled out: it needs a server.", [(R, "Redis", "needs a server")]),
    ("We won't use Celery since the jobs are tiny.", [(R, "Celery", "jobs are tiny")]),
    ("Going with httpx; requests lacks async.", [(C, "httpx", "lacks async")]),
    ("Decision: per-line rounding (per-invoice hides cents).", [(C, "per-line rounding", "per-invoice hides cents")]),
    (
        "I'll use orjson rather than json, since it's 5x faster.",
        [(C, "orjson", "5x faster"), (R, "json", "5x faster")],
    ),
    (
        "Use tantivy, not sqlite FTS, because ranking matters.",
        [(C, "tantivy", "ranking matters"), (R, "sqlite FTS", "ranking matters")],
    ),
    (
        "After benchmarking, we picked msgpack over protobuf because no schema step is needed.",
        [(C, "msgpack", "no schema step"), (R, "protobuf", "no schema step")],
    ),
    (
        "We're sticking with pip; ruled out poetry because the lock file fights the monorepo.",
        [(C, "sticking with pip", None), (R, "poetry", "fights the monorepo")],
    ),
    (
        "Decided not to vendor the parser, since upstream releases weekly.",
        [(R, "vendor the parser", "upstream releases weekly")],
    ),
    (
        "- Chose argparse over click because it adds no dependency\n- Decided against colour output (pipes)",
        [(C, "argparse", "no dependency"), (R, "click", "no dependency"), (R, "colour output", "pipes")],
    ),
    (
        "We use integer ids, not UUIDs, because they sort by time.",
        [(C, "integer ids", "sort by time"), (R, "UUIDs", "sort by time")],
    ),
    (
        "We opted for Redis instead of Memcached because we need persistence.",
        [(C, "Redis", "persistence"), (R, "Memcached", "persistence")],
    ),
    ("Picked uv over pip-tools: faster resolution.", [(C, "uv", "faster resolution"), (R, "pip-tools", "faster")]),
    ("Went with option B (smaller diff).", [(C, "option B", "smaller diff")]),
    (
        "Instead of Kafka, we use a Postgres queue because it's simpler.",
        [(C, "Postgres queue", "simpler"), (R, "Kafka", "simpler")],
    ),
    ("Decided: keep the monolith. Reason: one deploy.", [(C, "keep the monolith", "one deploy")]),
    (
        "Switched from npm to pnpm because installs were slow.",
        [(C, "pnpm", "installs were slow"), (R, "npm", "installs were slow")],
    ),
    (
        "Replaced requests with httpx since we need HTTP/2.",
        [(C, "httpx", "HTTP/2"), (R, "requests", "HTTP/2")],
    ),
    ("- Postgres: rejected, needs a server", [(R, "Postgres", "needs a server")]),
    ("Option A — rejected (too slow).", [(R, "Option A", "too slow")]),
    ("We avoided global state because tests run in parallel.", [(R, "global state", "run in parallel")]),
    ("Not using Celery, since the jobs are tiny.", [(R, "Celery", "jobs are tiny")]),
    ("The decision was to use pydantic v2.", [(C, "pydantic v2", None)]),
    ("We'll go with option 2 — it keeps the API stable.", [(C, "option 2", "API stable")]),
    (
        "Decision: SQLite over Postgres because it is embedded.",
        [(C, "SQLite", "embedded"), (R, "Postgres", "embedded")],
    ),
    (
        "Rejected alternatives: Postgres (needs a server), DuckDB (wheel size).",
        [(R, "Postgres", "needs a server"), (R, "DuckDB", "wheel size")],
    ),
    (
        "Alternatives considered: gRPC (too heavy) and GraphQL (no caching).",
        [(R, "gRPC", "too heavy"), (R, "GraphQL", "no caching")],
    ),
    ("Didn't go with Yarn because of lockfile churn.", [(R, "Yarn", "lockfile churn")]),
    ("Memcached was considered but rejected because it loses data.", [(R, "Memcached", "loses data")]),
    (
        "We're keeping the monolith rather than moving to microservices, because the team is small.",
        [(C, "keeping the monolith", "team is small"), (R, "microservices", "team is small")],
    ),
    (
        "Settled on JSON lines (not SQLite) for the log because it merges.",
        [(C, "JSON lines", "merges"), (R, "SQLite", "merges")],
    ),
    ("Final decision: ship the CLI first.", [(C, "ship the CLI first", None)]),
    (
        "Going forward we'll use ruff instead of flake8 because it is faster.",
        [(C, "ruff", "faster"), (R, "flake8", "faster")],
    ),
    (
        "Key decisions:\n- tokens in the keyring, not in a file, since files leak\n- retries capped at 3",
        [(C, "keyring", "files leak"), (R, "in a file", "files leak"), (C, "retries capped at 3", None)],
    ),
]

NONE: list[str] = [
    "Thanks, that's all!",
    "It failed on CI, not locally, because the env differs.",
    "I ran the tests again since the first run was flaky.",
    "We iterate over the list because it is short.",
    "Would you like me to run the tests?",
    "The parser handles unicode now.",
    "```\nDecision: in a code block\n```",
    "To avoid a race, the lock is taken first.",
    "The pull request was rejected by CI.",
    "I moved from the old API docs to the new ones.",
]


def _matches(item: dict[str, str], status: str, option: str, reason: str | None) -> bool:
    said = item.get("reasoning")
    return (
        item["status"] == status
        and option.lower() in item["decision"].lower()
        and (said is None if reason is None else said is not None and reason.lower() in said.lower())
    )


@pytest.mark.parametrize(("text", "expected"), DECISIONS, ids=[text[:40] for text, _ in DECISIONS])
def test_each_option_keeps_its_own_reason(text: str, expected: list[tuple[str, str, str | None]]) -> None:
    found = prose.extract(text).get("decisions", [])
    assert len(found) == len(expected), found
    for status, option, reason in expected:
        assert any(_matches(item, status, option, reason) for item in found), (status, option, reason, found)
    for item in found:  # a rejected option's name never carries the reason, nor a chosen one the rejected option
        assert " because " not in item["decision"] and " since " not in item["decision"]
        if item["status"] == C:
            rejected = [other["decision"].lower() for other in found if other["status"] == R]
            assert not any(f" {name}" in f" {item['decision'].lower()}" for name in rejected), found


@pytest.mark.parametrize("text", NONE)
def test_prose_that_decides_nothing_gives_no_decision(text: str) -> None:
    assert "decisions" not in prose.extract(text)


def test_bullets_under_question_and_todo_headings_are_questions_and_todos() -> None:
    said = prose.extract(
        "Open questions:\n- TTL for the cache\n\nNext steps:\n- add the CLI flag\n- write docs\n\nDone."
    )
    assert said["questions"] == ["TTL for the cache"]
    assert said["todos_said"] == ["add the CLI flag", "write docs"]


def test_the_same_item_said_twice_in_other_spacing_case_or_punctuation_is_kept_once() -> None:
    said = prose.extract(
        "TODO: add the CLI flag.\nTODO:  Add the CLI flag\nDecision: keep cents.\n- decision: Keep  cents"
    )
    assert said["todos_said"] == ["add the CLI flag."]
    assert [d["decision"] for d in said["decisions"]] == ["keep cents."]
    assert substance.same("!!!", "!!!") and not substance.same("???", "!!!")


# -- noise: what a handoff should not carry -----------------------------------------------------


@pytest.mark.parametrize(
    ("command", "code", "error"),
    [
        ("pyflakes src/", 127, "bash: pyflakes: command not found"),
        ("python -m pyflakes src/", 1, "/usr/bin/python3: No module named pyflakes"),
        ("ruff check .", 1, "zsh: command not found: ruff"),
        ("npx eslint .", 127, ""),
    ],
)
def test_a_command_whose_tool_is_missing_is_not_a_failing_check(command: str, code: int, error: str) -> None:
    from contextflow.capture import digest

    folded = digest.fold_all([{"commands": [{"command": command, "exit": code, "error": error}]}])
    fields = digest.auto_handoff(folded)
    assert "failing" not in fields and "errors" not in fields, fields


def test_a_failure_of_the_code_itself_stays_failing() -> None:
    from contextflow.capture import digest

    error = "E   ModuleNotFoundError: No module named 'shop.totals'"
    folded = digest.fold_all([{"commands": [{"command": "python -m pytest -q", "exit": 1, "error": error}]}])
    assert [f["error"] for f in digest.auto_handoff(folded)["failing"]] == [error]


def test_a_git_commit_with_its_identity_flags_is_listed_by_its_message() -> None:
    from contextflow.capture import digest

    command = 'git -c user.name=Bot -c user.email=bot@example.invalid commit -am "Round per line\n\nLong body"'
    folded = digest.fold_all([{"commands": [{"command": command, "exit": 0}]}])
    assert digest.auto_handoff(folded)["commands"] == ["git commit: Round per line -> ok"]


def test_a_todo_said_twice_is_one_next_step() -> None:
    from contextflow.capture import digest

    turns = [
        {"todos_said": ["Add the CLI flag."], "files": {"edited": ["a.py"]}},
        {"todos_said": ["add  the cli flag"]},
    ]
    assert digest.auto_handoff(digest.fold_all(turns))["next_steps"] == ["add  the cli flag"]
