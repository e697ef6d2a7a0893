"""This store's page address: the port and token `contextflow ui` reuses on every start.

Kept in the state folder (`ui.json`, mode 0600, this machine only), so a bookmarked URL and the page's
cookie keep working across restarts. Without `--port` the server listens on the port it used last
(8766 the first time); when that port is taken it picks a free one and keeps that. A file that is not a
private regular file with a well-formed token (damaged, too big, a FIFO, readable by others) is replaced
by a fresh token: its token may have been read. Deleting the file gives a new token on the next start.
"""

from __future__ import annotations

import os
import secrets
import socket
import stat
from pathlib import Path
from typing import NamedTuple

from contextflow.core import jsonio, regexes
from contextflow.core.errors import InputError

HOST = "127.0.0.1"
FILE = "ui.json"
DEFAULT_PORT = 8766
MAX_BYTES = 4096
TOKEN = regexes.compile(r"[A-Za-z0-9_-]{32,128}")


class Address(NamedTuple):
    token: str
    port: int | None  # the port kept for starts without --port; None: none yet


def load(state_dir: Path) -> Address:
    """The kept address, or a fresh token (and no port) when there is none to trust."""
    fresh = Address(secrets.token_urlsafe(32), None)
    try:
        fd = os.open(state_dir / FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return fresh
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_size > MAX_BYTES:
            return fresh
        try:
            data = jsonio.loads(file.read(MAX_BYTES))
        except (OSError, jsonio.DecodeError):
            return fresh
    if not isinstance(data, dict) or not isinstance(data.get("token"), str) or not TOKEN.fullmatch(data["token"]):
        return fresh
    port = data.get("port")
    return Address(data["token"], port if isinstance(port, int) and 0 < port < 65536 else None)


def save(state_dir: Path, address: Address) -> None:
    """Write the address, readable by its owner only (a new file, renamed over the old one)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    temporary = state_dir / f".{FILE}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(jsonio.dumps(address._asdict()))
    os.replace(temporary, state_dir / FILE)


def bind(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {HOST}:{port}: {exc.strerror}; pick another --port (0: any free one)"
        ) from None
    sock.listen(64)
    return sock


def listen(state_dir: Path, port: int | None) -> tuple[socket.socket, str]:
    """A listening socket and a note for the terminal ("" when none): on `port` when given (0: any free
    one, not kept), else on the port kept for this store, or a free one kept from now on when it is taken."""
    if port is not None:
        return bind(port), ""
    kept = load(state_dir)
    wanted = kept.port or DEFAULT_PORT
    note = ""
    try:
        sock = bind(wanted)
    except InputError:
        sock = bind(0)
        note = f"port {wanted} is taken: serving on {sock.getsockname()[1]}, kept for the next start"
    if sock.getsockname()[1] != kept.port:
        save(state_dir, kept._replace(port=sock.getsockname()[1]))
    return sock, note


def token(state_dir: Path) -> str:
    """This store's page token, kept (0600) for the next start."""
    kept = load(state_dir)
    if load(state_dir).token != kept.token:  # a fresh one (none kept, or none to trust): keep it
        save(state_dir, kept)
    return kept.token
