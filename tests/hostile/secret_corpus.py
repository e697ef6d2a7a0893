"""Generated corpora for redaction by evidence: credential forms for every context rule (each must be
redacted), and ordinary code, shell and prose (each finding there is a false positive).

A credential value here is built around a core (`CORE`, unique per value) so a test can tell whether
any part of it reached the store in clear. Values carry the characters a shape-based placeholder test
took for references (`( [ $ # % < > }}`, dotted words) and are written before a tag or punctuation.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

CORE = "Q9zK7w"  # the core of the docker auth value

# one template per context rule (and per form of a rule); {v} is the credential
TEMPLATES = {
    "URL password": "psql postgres://app:{v}@db.internal/app",
    "URL password, empty user": "redis-cli -u redis://:{v}@cache:6379/0",
    "env assignment": "export DB_PASSWORD={v}",
    "dotenv assignment": "API_TOKEN={v}",
    "code, double quotes": 'password = "{v}"',
    "code, single quotes": "client_secret: '{v}'",
    "code or yaml, bare": "password: {v}",
    "code, bare with =": "secret_key={v}",
    "--password=": "app --password={v} --verbose",
    "--token quoted": "tool --token '{v}'",
    "mysql -p": "mysql -u root -p{v} shop",
    "sshpass -p": "sshpass -p {v} ssh deploy@host",
    "curl -u": "curl -u admin:{v} https://api.example.com",
    "docker login -p": "docker login -u ci -p {v} registry.example.com",
    "netrc": "machine api.example.com login deploy password {v}",
    "pgpass": "db.internal:5432:shop:app:{v}",
    "API key header": "curl -H 'X-API-Key: {v}' https://api.example.com",
    "registry token": '{{"identitytoken": "{v}"}}',
}

# shapes a placeholder test took for references; {c} is the core, unique per generated text
VALUES = {
    "paren after a letter": "Tr0ub4dor(3){c}",
    "bracket after a letter": "pa[55]w0rd{c}",
    "leading $": "$3cr{c}",
    "leading $ then letters": "$ecret{c}!",
    "leading #": "#S3c{c}",
    "leading %": "%A1b{c}",
    "inner %": "A1%b{c}%",
    "leading <": "<S3c{c}",
    "trailing >": "S3c{c}>",
    "trailing }}": "S3c{c}}}}}",
    "leading backtick": "`S3c{c}",
    "dotted words": "correct.horse.{c}.staple",
    "dotted with digits": "v1.S3c.{c}",
    "plain": "S3cr{c}x",
}

# what may follow a credential in a text (none of it may shield it)
AFTER = {
    "nothing": "",
    "a closing tag": "</ctx:remember>",
    "an opening tag": "<ctx:remember>",
    "a full stop": ".",
    "a comma and prose": ", then restart",
    "a parenthesis": ")",
}


def _core(n: int) -> str:
    """A unique core of letters only (a dotted value holds no digits): `qz` and n in base 26, `kw`."""
    letters = ""
    for _ in range(4):
        n, digit = divmod(n, 26)
        letters += chr(ord("a") + digit)
    return f"qz{letters}kw"


def credential_texts() -> Iterator[tuple[str, str, str, str, str]]:
    """(rule, value shape, what follows, the value's core, text) for every combination."""
    n = 0
    for rule, template in TEMPLATES.items():
        for shape, value in VALUES.items():
            for after, suffix in AFTER.items():
                if rule == "registry token" and after != "nothing":
                    continue  # inside a JSON string: nothing can follow it there
                n += 1
                core = _core(n)
                yield rule, shape, after, core, template.format(v=value.format(c=core)) + suffix


def docker_auth() -> str:
    token = base64.b64encode(f"ci:Tr0ub4dor(3){CORE}".encode()).decode()
    return f'{{"auths": {{"registry.example.com": {{"auth": "{token}"}}}}}}'


# -- ordinary text: code, shell, prose (anything found here is a false positive) -----------------

_PROSE_FILES = ("README", "README.md", "README.txt", "NEWS", "changelog", "copyright")


def benign_files(limit_bytes: int = 4_000_000) -> Iterator[tuple[str, Path]]:
    """(what, file) from this machine: the Python standard library (code; tests left out), shell
    scripts, and the packages' documentation (prose), up to about `limit_bytes` each, in a stable order."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    yield from _bounded("code", sorted(p for p in stdlib.glob("*.py")), limit_bytes)
    shell = [
        *sorted(Path("/usr/bin").glob("*")),
        *sorted(Path("/etc").glob("*.sh")),
        *sorted(Path("/etc/profile.d").glob("*")),
    ]
    yield from _bounded("shell", [p for p in shell if _is_script(p)], limit_bytes)
    docs = sorted(p for p in Path("/usr/share/doc").glob("*/*") if p.name in _PROSE_FILES)
    yield from _bounded("prose", docs, limit_bytes)


def _is_script(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return head.startswith(b"#!") and (b"sh" in head.split(b"\n", 1)[0])


def _bounded(what: str, paths: list[Path], limit_bytes: int) -> Iterator[tuple[str, Path]]:
    total = 0
    for path in paths:
        try:
            if not path.is_file() or path.is_symlink():
                continue
            size = path.stat().st_size
        except OSError:
            continue
        if total + size > limit_bytes:
            continue
        total += size
        yield what, path
