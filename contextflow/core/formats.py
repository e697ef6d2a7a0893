"""Derived formats: an explicit version per format of machine-local derived state, and the guard
that keeps it honest.

A derived format (a set of tables on disk, an index) is kept across upgrades while its `version`
is unchanged, so the version must change exactly when what fills it changes. Each format names its
code closure: the modules whose code decides what it holds. `closure_hash` hashes their source;
`RECORDED` (`formats.json` beside this module) holds, per format, the version and the hash it was
recorded with, and a test fails when the hash moved while the version did not. After changing such
code: raise the format's version if what it holds changes (else nothing is rebuilt), then run
`python -m contextflow.core.formats --write` to record the new hash.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

RECORD_FILE = Path(__file__).with_name("formats.json")


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    version: int
    closure: tuple[str, ...]  # modules whose code fills it (dotted names; never imported to hash)


def closure_hash(fmt: Format) -> str:
    """A hash of the source of every module of the format's closure (found, not imported)."""
    digest = hashlib.blake2b(digest_size=8)
    for module in sorted(fmt.closure):
        spec = find_spec(module)
        if spec is None or spec.origin is None:
            raise LookupError(f"format {fmt.name}: module {module} of its closure is not found")
        digest.update(module.encode() + b"\0" + Path(spec.origin).read_bytes() + b"\0")
    return digest.hexdigest()


def recorded() -> dict[str, list[object]]:
    """{format: [version, closure hash]} as last recorded."""
    try:
        found = json.loads(RECORD_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def unrecorded(formats: list[Format]) -> list[str]:
    """Why each format whose code changed without its version changing is wrong (empty when none is)."""
    known, problems = recorded(), []
    for fmt in formats:
        version, digest = (known.get(fmt.name) or [None, None])[:2]
        current = closure_hash(fmt)
        if digest != current and version == fmt.version:
            problems.append(
                f"the code that fills derived format {fmt.name!r} changed but its version is still {fmt.version}: "
                "raise the version if what it holds changes, then run `python -m contextflow.core.formats --write`"
            )
        elif digest != current or version != fmt.version:
            problems.append(
                f"derived format {fmt.name!r} is not recorded at version {fmt.version}: "
                "run `python -m contextflow.core.formats --write`"
            )
    return problems


def write(formats: list[Format]) -> None:
    record = {fmt.name: [fmt.version, closure_hash(fmt)] for fmt in sorted(formats, key=lambda f: f.name)}
    RECORD_FILE.write_text(json.dumps(record, indent=1) + "\n")


def main(argv: list[str]) -> int:
    from contextflow.features import all_formats

    if argv[1:] == ["--write"]:
        write(all_formats())
        return 0
    problems = unrecorded(all_formats())
    print("\n".join(problems) or "every derived format is recorded")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
