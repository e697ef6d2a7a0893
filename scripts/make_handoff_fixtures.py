#!/usr/bin/env python3
"""Write the handoff benchmark's fixtures (tests/fixtures/handoff/): each case's sessions as the
client records them (Claude Code transcripts, Gemini CLI chat files, Codex rollouts), and
`cases.json`: per case, its folders and machines (benchlib/handoff_cases.py), the sessions in
order with what happens around them (a handoff the agent writes through the server, a file edited
and committed, a branch switched, a session killed before its hooks ran, contextflow commands a
person runs), the client that starts next, and the facts its session start must carry (the fields
of a fact: benchlib/handoff_judge.py). Each recorded session gets a fixed session id (a UUID, as the
clients use), the number of lines its client writes before the first turn (`head`) and where each
turn ends (`turn_ends`).

    python scripts/make_handoff_fixtures.py [--out FOLDER]
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import handoff_cases
from benchlib.transcripts import WRITERS

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "handoff"
CALC = "def add(a, b):\n    return int(a) + int(b)\n"
# secrets are placeholders in the fixtures (no token-shaped text in the repository); the benchmark
# puts the real-shaped values (benchlib/transcripts.SECRETS) in before a session is captured
GITHUB_TOKEN, AWS_KEY, PASSWORD = "<<GITHUB_TOKEN>>", "<<AWS_KEY>>", "<<PASSWORD>>"
FAILED = (
    "F.                                   [100%]\n=== FAILURES ===\n    def test_add():\n"
    ">       assert add(1, 2) == 4\nE       assert 3 == 4\n1 failed, 1 passed"
)


def turn(prompt: str, final: str, *steps: dict[str, object]) -> dict[str, object]:
    return {"prompt": prompt, "steps": list(steps), "final": final}


CASES: list[dict[str, object]] = [
    {
        "name": "agent-handoff",
        "sessions": [
            {
                "client": "gemini-cli",
                "turns": [
                    turn("Write calc.py", "Wrote calc.py.", {"write": "calc.py", "content": CALC}),
                    turn(
                        "Hand off",
                        "Handed off.",
                        {"handoff": "Calc core done; parsing of CLI flags is next", "files": ["calc.py"]},
                    ),
                ],
                "server_handoff": {"turn": 1, "summary": "Calc core done; parsing of CLI flags is next"},
            }
        ],
        "next": "codex",
        "facts": [
            {
                "kind": "agent handoff",
                "shown": ["Calc core done; parsing of CLI flags is next"],
                "not_shown": ["[automatic handoff] Wrote calc.py"],
            },
        ],
    },
    {
        "name": "agent-handoff-cli",
        "sessions": [
            {
                "client": "codex",
                "turns": [
                    turn("Add subtract", "Added subtract.", {"write": "calc.py", "content": CALC}),
                    turn(
                        "Hand off with the CLI",
                        "Handed off with the CLI.",
                        {"run": "contextflow handoff --agent codex 'Subtract added; docs next'", "exit": 0},
                    ),
                ],
                "server_handoff": {"turn": 1, "summary": "Subtract added; docs next"},
            }
        ],
        "next": "claude-code",
        "facts": [{"kind": "agent handoff", "shown": ["Subtract added; docs next"], "not_shown": ["Added subtract."]}],
    },
    {
        "name": "closing-thanks",
        "sessions": [
            {
                "client": "claude-code",
                "turns": [
                    turn(
                        "Fix rounding",
                        "I decided to round each line to cents because the invoice total must match its lines.",
                        {"write": "invoice.py", "content": "ROUND = 'line'\n"},
                    ),
                    turn("Thanks, that's all", "Glad to help!"),
                ],
            }
        ],
        "next": "gemini-cli",
        "facts": [
            {
                "kind": "decision",
                "shown": ["round each line to cents", "the invoice total must match its lines"],
                "not_shown": ["Glad to help!"],
            },
        ],
    },
    {
        "name": "fail-then-pass",
        "sessions": [
            {
                "client": "codex",
                "turns": [
                    turn("Run the tests", "One test fails.", {"run": "pytest -q", "exit": 1, "output": FAILED}),
                    turn(
                        "Fix it",
                        "Fixed; the suite passes.",
                        {"edit": "calc.py"},
                        {"run": "python -m pytest tests/", "exit": 0, "output": "2 passed"},
                    ),
                ],
            }
        ],
        "next": "claude-code",
        "facts": [
            {
                "kind": "test outcome",
                "shown": ["python -m pytest tests/ -> ok"],
                "not_shown": ["assert 3 == 4", "pytest -q -> exit 1"],
            },
        ],
    },
    {
        "name": "early-decision",
        "sessions": [
            {
                "client": "gemini-cli",
                "turns": [
                    turn(
                        "How should totals round?",
                        "We decided to round per line rather than per invoice because per-invoice rounding hides "
                        "cents.",
                        {"write": "totals.py", "content": "PER = 'line'\n"},
                    ),
                    turn(
                        "Add tests", "Added tests.", {"write": "tests/test_totals.py", "content": "def test(): pass\n"}
                    ),
                    turn(
                        "Run them",
                        "They pass.",
                        {"run": "pytest tests/test_totals.py", "exit": 0, "output": "1 passed"},
                    ),
                ],
            }
        ],
        "next": "codex",
        "facts": [
            {"kind": "decision", "shown": ["round per line", "per-invoice rounding hides cents"]},
            {"kind": "rejected option", "shown": ["rejected: per invoice"]},
        ],
    },
    {
        "name": "todo-and-question",
        "sessions": [
            {
                "client": "claude-code",
                "turns": [
                    turn(
                        "Start the refunds module",
                        "Started refunds.py.\n\nTODO: add a refund CLI command\n\nOpen question: should refunds reuse "
                        "the invoice id?",
                        {"write": "refunds.py", "content": "def refund(): ...\n"},
                    ),
                ],
            }
        ],
        "next": "codex",
        "facts": [
            {"kind": "todo", "shown": ["add a refund CLI command"]},
            {"kind": "open question", "shown": ["should refunds reuse the invoice id?"]},
        ],
    },
    {
        "name": "after-unrelated-sessions",
        "sessions": [
            {
                "client": "codex",
                "turns": [
                    turn(
                        "Money type",
                        "We decided to store money as integer cents because floats drift.",
                        {"write": "money.py", "content": "CENTS = 100\n"},
                    ),
                ],
            },
            {
                "client": "claude-code",
                "turns": [turn("Fix the README", "README fixed.", {"write": "README.md", "content": "# calc\n"})],
            },
            {
                "client": "gemini-cli",
                "turns": [turn("Add a license", "License added.", {"write": "LICENSE", "content": "MIT\n"})],
            },
        ],
        "next": "claude-code",
        "facts": [{"kind": "decision", "shown": ["store money as integer cents", "floats drift"]}],
    },
    {
        "name": "file-changed-after",
        "sessions": [
            {
                "client": "gemini-cli",
                "turns": [
                    turn(
                        "Write calc and its test",
                        "calc.py written; its test fails for now.",
                        {"write": "calc.py", "content": CALC},
                        {"write": "tests/test_calc.py", "content": "def test_add(): assert False\n"},
                        {"run": "pytest tests/test_calc.py", "exit": 1, "output": FAILED},
                    ),
                ],
                "after": {"edit": ["calc.py", "tests/test_calc.py"], "commit": True},
            }
        ],
        "next": "claude-code",
        "facts": [
            {"kind": "file changed", "shown": ["calc.py changed since (1 commit later)"]},
            {"kind": "failure in a changed file", "shown": ["re-run to know"], "not_shown": ["failing now"]},
        ],
    },
    {
        "name": "secrets",
        "sessions": [
            {
                "client": "claude-code",
                "turns": [
                    turn(
                        f"Deploy with password: {PASSWORD} and token {GITHUB_TOKEN}",
                        f"Deployed. I used the key {AWS_KEY} as you asked.",
                        {"run": f"git push https://{GITHUB_TOKEN}@example.invalid/r.git", "exit": 0},
                    ),
                ],
            }
        ],
        "next": "codex",
        "facts": [
            {"kind": "secret", "secret": GITHUB_TOKEN},
            {"kind": "secret", "secret": AWS_KEY},
            {"kind": "secret", "secret": PASSWORD},
        ],
    },
    {
        "name": "stop-before-last-result",
        "sessions": [
            {
                "client": "claude-code",
                "turns": [
                    turn(
                        "Run the suite",
                        "The suite fails on add.",
                        {"write": "calc.py", "content": "def add(a, b):\n    return a - b\n"},
                        {"run": "pytest -q", "exit": 1, "output": FAILED},
                    ),
                ],
                "cut_before_last_result": True,
            }
        ],
        "next": "gemini-cli",
        "facts": [{"kind": "test outcome", "shown": ["pytest -q -> exit 1", "assert 3 == 4"]}],
    },
]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write (default: the repository's)")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl"):
        old.unlink()
    cases = []
    every: list[dict[str, Any]] = [*CASES, *handoff_cases.CASES]
    for case in every:
        sessions = []
        for n, session in enumerate(case["sessions"]):
            if "client" not in session:  # a person at the terminal: no transcript
                sessions.append(session)
                continue
            name = f"{case['name']}-{n + 1}-{session['client']}.jsonl"
            sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-handoff/{case['name']}/{n + 1}"))
            writer = WRITERS[session["client"]]
            turns = session["turns"]
            (out / name).write_text("".join(writer(turns, sid)))
            kept = {k: v for k, v in session.items() if k != "turns"}
            sessions.append(
                {
                    **kept,
                    "session_id": sid,
                    "transcript": name,
                    "finals": [t["final"] for t in turns],
                    "prompts": [t["prompt"] for t in turns],
                    "head": len(writer([], sid)),
                    "turn_ends": [len(writer(turns[: k + 1], sid)) for k in range(len(turns))],
                }
            )
        cases.append({**case, "sessions": sessions})
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    total = sum(len(c["sessions"]) for c in cases)
    print(f"{len(cases)} cases, {total} sessions written to {out}")


if __name__ == "__main__":
    main()
