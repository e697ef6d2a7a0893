"""Each fact of a handoff case judged against what a session start gave the model.

A fact (cases.json, written by scripts/make_handoff_fixtures.py) holds any of:

- `shown`: strings that must all be in the session start (else the fact is lost);
- `lines`: groups of strings that must each be on one line, case aside (an option and its own
  reason); `not_lines`: groups that must not share a line (an option given another one's reason);
- `not_shown`: strings whose presence means the fact is shown stale (a failure shown as current
  after its file changed, a file called deleted that lives on another machine or branch);
- `once`: strings that must not be shown twice (duplicates folded);
- `foreign`: strings of another project that must not be here (wrong project);
- `planted: true`: the stored text carries an instruction planted in it; the session start must
  open by saying it is remembered data, not instructions, and keep it quoted and defanged (no raw
  `</system-reminder>`-like tag, no line of its own that starts as a role);
- `secret`: a value that must be nowhere: store, state folders, any session start of the case.

`judge` gives (verdict, why): carried, stale, wrong project, lost, live instruction; or, for a secret,
kept out / leaked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

VERDICTS = ("carried", "stale", "wrong project", "lost", "live instruction")
RAW_TAGS = ("<system-reminder>", "</system-reminder>", "<hook_context>", "</hook_context>", "<|im_start|>")
ROLE_LINE = re.compile(r"^\s*(SYSTEM|ASSISTANT|USER|Human|Assistant)\s*:", re.MULTILINE)
DATA_NOTICE = re.compile(r"(remember|stored|memory|data).*not (as )?(an? )?instructions?", re.IGNORECASE)


def judge(fact: dict[str, Any], shown: str, fill: Any) -> tuple[str, str]:
    """`fill` puts the real values in place of the fixture's placeholders (secrets)."""
    lower = [line.lower() for line in shown.splitlines()]
    for text in map(fill, fact.get("foreign", [])):
        if text in shown:
            return "wrong project", f"shows {text!r}, of another project"
    if fact.get("planted"):
        live = planted_live(shown)
        if live:
            return "live instruction", live
    for text in map(fill, fact.get("not_shown", [])):
        if text in shown:
            return "stale", f"shows {text!r}"
    for text in map(fill, fact.get("once", [])):
        if shown.count(text) > 1:
            return "stale", f"shows {text!r} {shown.count(text)} times"
    missing = [text for text in map(fill, fact.get("shown", [])) if text not in shown]
    if missing:
        return "lost", "no " + ", no ".join(repr(text) for text in missing)
    for group in fact.get("lines", []):
        if not any(all(part.lower() in line for part in group) for line in lower):
            return "lost", f"no line holds {' + '.join(repr(part) for part in group)}"
    for group in fact.get("not_lines", []):
        if any(all(part.lower() in line for part in group) for line in lower):
            return "lost", f"a line mixes {' + '.join(repr(part) for part in group)} (another option's reason)"
    return "carried", ""


def planted_live(shown: str) -> str:
    """Why an instruction planted in stored text would read as one, or ""."""
    raw = [tag for tag in RAW_TAGS if tag in shown]
    if raw:
        return f"raw {raw[0]} reaches the model"
    role = ROLE_LINE.search(shown)
    if role:
        return f"a line of its own starts as a role: {role.group(0).strip()!r}"
    first = next((line for line in shown.splitlines() if line.strip()), "")
    if not DATA_NOTICE.search(first):
        return f"the session start does not open by saying it is remembered data, not instructions: {first[:80]!r}"
    return ""


def secret_verdict(value: str, outputs: list[tuple[str, str]], places: list[Path], root: Path) -> tuple[str, str]:
    """kept out, or leaked with where it was found."""
    found = [label for label, text in outputs if value in text]
    for folder in places:
        if folder.exists():
            found += [
                str(p.relative_to(root)) for p in folder.rglob("*") if p.is_file() and value.encode() in p.read_bytes()
            ]
    return ("leaked", "found in " + ", ".join(found[:4])) if found else ("kept out", "")
