"""Bearer tokens for the HTTP bridge: where they come from, what each may do, how they are checked.

    {"tokens": [
      {"name": "laptop", "token": "<32+ random chars>", "read": ["*"], "write": ["*"]},
      {"name": "ci", "sha256": "<hex digest of the token>", "read": ["web"], "write": []}
    ]}

`"*"` is every project; writing a project implies reading it; `project` (optional) is the default
project, else the first writable (or readable) one. First match wins: `--tokens FILE`,
`CONTEXTFLOW_HTTP_TOKENS_FILE`, `CONTEXTFLOW_HTTP_TOKENS` (the same JSON inline),
`CONTEXTFLOW_HTTP_TOKEN` (one token, full access). A file holding plain tokens must not be readable
by other users. Presented tokens are hashed and compared with every grant's digest in constant
time; token values are never logged or echoed.
"""

from __future__ import annotations

import hmac
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from contextflow.core import hashing, jsonio, regexes
from contextflow.core.errors import InputError

ALL = "*"
MIN_TOKEN_CHARS = 16
_NAME = regexes.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HEX64 = regexes.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Grant:
    name: str
    digest: bytes
    read: frozenset[str] | None  # None: every project
    write: frozenset[str] | None
    project: str | None = None

    @property
    def read_only(self) -> bool:
        return self.write is not None and not self.write

    @property
    def reads_everything(self) -> bool:
        return self.read is None

    def can_read(self, project: str) -> bool:
        return self.read is None or project in self.read

    def can_write(self, project: str) -> bool:
        return self.write is None or project in self.write

    def default_project(self, fallback: str) -> str:
        """Its own default project, else its first writable (or readable) one, else `fallback`."""
        return self.project or next((min(projects) for projects in (self.write, self.read) if projects), fallback)

    def describe(self) -> str:
        def show(projects: frozenset[str] | None) -> str:
            return "all projects" if projects is None else (", ".join(sorted(projects)) or "nothing")

        return f"{self.name} (reads {show(self.read)}; writes {show(self.write)})"


def digest(token: str) -> bytes:
    return hashing.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _projects(value: Any, where: str) -> frozenset[str] | None:
    if value is None:
        return frozenset()
    if value == ALL or (isinstance(value, list) and ALL in value):
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) and p.strip() for p in value):
        raise InputError(f'{where} must be a list of project names, or ["*"] for every project')
    return frozenset(p.strip() for p in value)


def parse_grant(entry: Any, index: int) -> Grant:
    where = f"tokens[{index}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be an object with name, token (or sha256), read and write")
    unknown = sorted(set(entry) - {"name", "token", "sha256", "read", "write", "project"})
    if unknown:
        raise InputError(
            f"{where} has unknown field(s) {', '.join(unknown)}; allowed: name, token, sha256, read, write, project"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"{where}.name must be 1-64 letters, digits, '.', '_' or '-'")
    token, hashed = entry.get("token"), entry.get("sha256")
    if (token is None) == (hashed is None):
        raise InputError(f"{where} ({name}) needs exactly one of token or sha256")
    if token is not None:
        if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS or token != token.strip():
            raise InputError(
                f"{where} ({name}): token must be a string of at least {MIN_TOKEN_CHARS} characters "
                'without surrounding spaces; make one with `python -c "import secrets; '
                'print(secrets.token_urlsafe(32))"`'
            )
        token_digest = digest(token)
    elif not isinstance(hashed, str) or not _HEX64.match(hashed.lower()):
        raise InputError(f"{where} ({name}): sha256 must be 64 hex digits (sha256 of the token)")
    else:
        token_digest = bytes.fromhex(hashed)
    read, write = _projects(entry.get("read"), f"{where}.read"), _projects(entry.get("write"), f"{where}.write")
    if read is not None and write is not None:
        read = read | write  # writing a project implies reading it
    elif write is None:
        read = None
    if read is not None and not read:
        raise InputError(f'{where} ({name}) may read nothing: give it read and/or write projects, or ["*"]')
    project = entry.get("project")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise InputError(f"{where}.project must be a project name")
    grant = Grant(name, token_digest, read, write, project.strip() if project else None)
    if grant.project and not grant.can_read(grant.project):
        raise InputError(f"{where}.project {grant.project!r} is not among the projects it may read")
    return grant


def parse_grants(text: str, source: str) -> list[Grant]:
    try:
        document = jsonio.loads(text)
    except jsonio.DecodeError as exc:
        raise InputError(f"{source} is not valid JSON ({exc}); see docs/http-bridge.md for the format") from None
    entries = document.get("tokens") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(f'{source} must be {{"tokens": [...]}} with at least one token; see docs/http-bridge.md')
    grants = [parse_grant(entry, index) for index, entry in enumerate(entries)]
    names = [grant.name for grant in grants]
    if len(set(names)) != len(names):
        raise InputError(f"{source}: token names must be unique")
    if len({grant.digest for grant in grants}) != len(grants):
        raise InputError(f"{source}: two grants use the same token")
    return grants


def _read_file(path: Path) -> str:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the tokens file {path}: {exc}") from None
    if mode & 0o077 and '"token"' in text:
        raise InputError(f"the tokens file {path} is readable by other users (mode {mode:o}); run chmod 600 {path}")
    return text


def load_grants(env: Mapping[str, str], tokens_file: str | None = None) -> list[Grant]:
    """The grants from the first configured source; an error when none is."""
    from contextflow.core.settings import read

    settings = read(env)
    chosen = tokens_file or settings.http_tokens_file
    if chosen:
        path = Path(os.path.expanduser(chosen))
        return parse_grants(_read_file(path), str(path))
    if settings.http_tokens:
        return parse_grants(settings.http_tokens, "CONTEXTFLOW_HTTP_TOKENS")
    single = settings.http_token
    if single:
        return [parse_grant({"name": "default", "token": single, "read": [ALL], "write": [ALL]}, 0)]
    raise InputError(
        "serve --http needs bearer tokens: pass --tokens FILE, or set CONTEXTFLOW_HTTP_TOKENS_FILE, "
        "CONTEXTFLOW_HTTP_TOKENS (JSON) or CONTEXTFLOW_HTTP_TOKEN. See docs/http-bridge.md"
    )


class GrantVerifier:
    """The SDK's TokenVerifier: a presented token -> the access of the grant it matches, or None."""

    def __init__(self, grants: list[Grant]) -> None:
        self.by_name = {grant.name: grant for grant in grants}

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = digest(token)
        # every grant is compared, so the time taken does not depend on which matched
        matched = [grant for grant in self.by_name.values() if hmac.compare_digest(presented, grant.digest)]
        if not matched:
            return None
        grant = matched[0]
        return AccessToken(
            token=f"grant:{grant.name}", client_id=grant.name, scopes=["read"] if grant.read_only else ["read", "write"]
        )
