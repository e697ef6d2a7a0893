"""Two Syncthing daemons on this machine only, sharing one folder, for end-to-end sync tests.

Each daemon gets its own home with a generated key and a config written here from scratch:
GUI/REST and the sync listener on 127.0.0.1, the peer dialled at an explicit
`tcp://127.0.0.1:PORT`, and global discovery, local (LAN broadcast) discovery, relays, NAT
traversal (UPnP/NAT-PMP and STUN), usage reporting, crash reporting and auto-upgrade all off.
`SyncthingPair` is a context manager: leaving it (also on an exception) shuts both daemons
down through their REST API and kills them if they do not stop within seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from xml.sax.saxutils import escape

import orjson

SYNCTHING = shutil.which("syncthing")
FOLDER_ID = "contextflow-store"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
IGNORED_NAMES = (".stfolder", ".stversions", ".stignore")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Daemon:
    name: str
    home: Path
    folder: Path
    device_id: str = ""
    api_key: str = field(default_factory=lambda: secrets.token_hex(16))
    gui_port: int = field(default_factory=free_port)
    sync_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        return self.home / "syncthing.log"

    def generate(self) -> None:
        assert SYNCTHING is not None
        self.home.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [SYNCTHING, "generate", f"--home={self.home}", "--no-default-folder", "--skip-port-probing"],
            capture_output=True,
            timeout=60,
            check=True,
            env=_env(self.home),
        )
        done = subprocess.run(
            [SYNCTHING, "serve", f"--home={self.home}", "--device-id"],
            capture_output=True,
            timeout=60,
            check=True,
            env=_env(self.home),
        )
        self.device_id = done.stdout.decode().strip()

    def write_config(self, peer: Daemon) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / ".stfolder").mkdir(exist_ok=True)
        (self.home / "config.xml").write_text(config_xml(self, peer), encoding="utf-8")

    def start(self) -> None:
        assert SYNCTHING is not None
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child, closed when it stops
        try:
            self.process = subprocess.Popen(
                [
                    SYNCTHING,
                    "serve",
                    f"--home={self.home}",
                    "--no-browser",
                    "--no-restart",
                    "--no-upgrade",
                    "--no-default-folder",
                    f"--logfile={self.home / 'daemon.log'}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=_env(self.home),
            )
        finally:
            log.close()

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.api("POST", "/rest/system/shutdown", timeout=3.0)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def api(self, method: str, path: str, timeout: float = 5.0) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.gui_port}{path}", method=method, headers={"X-API-Key": self.api_key}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return orjson.loads(body) if body else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        texts = []
        for path in (self.log_file, self.home / "daemon.log"):
            try:
                texts.append(f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
            except OSError:
                continue
        return "\n".join(texts)


def _env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ST")}
    env.update(HOME=str(home), STNOUPGRADE="1", STNODEFAULTFOLDER="1", STNORESTART="1")
    return env


def config_xml(daemon: Daemon, peer: Daemon) -> str:
    """A complete config: loopback only, every way of reaching beyond this machine switched off."""
    folder = escape(str(daemon.folder))
    devices = "".join(
        f"""
    <device id="{d.device_id}" name="{d.name}" compression="metadata" introducer="false">
        <address>tcp://127.0.0.1:{d.sync_port}</address>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>"""
        for d in (daemon, peer)
    )
    return f"""<configuration version="36">
    <folder id="{FOLDER_ID}" label="contextflow" path="{folder}" type="sendreceive"
            rescanIntervalS="2" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false">
        <filesystemType>basic</filesystemType>
        <device id="{daemon.device_id}"></device>
        <device id="{peer.device_id}"></device>
        <markerName>.stfolder</markerName>
        <maxConflicts>10</maxConflicts>
    </folder>{devices}
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:{daemon.gui_port}</address>
        <apikey>{daemon.api_key}</apikey>
    </gui>
    <options>
        <listenAddress>tcp://127.0.0.1:{daemon.sync_port}</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunKeepaliveMinS>0</stunKeepaliveMinS>
        <announceLANAddresses>false</announceLANAddresses>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <crashReportingEnabled>false</crashReportingEnabled>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <startBrowser>false</startBrowser>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <setLowPriority>false</setLowPriority>
    </options>
</configuration>
"""


def folder_digest(folder: Path) -> dict[str, str]:
    """name -> sha256 of every file the sync tool carries (its own markers and temp files left out)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or relative.parts[0] in IGNORED_NAMES or path.name.startswith(".syncthing."):
            continue
        found[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class SyncthingPair:
    """Two daemons `a` and `b` syncing `root/a-store` and `root/b-store` over loopback."""

    def __init__(self, root: Path) -> None:
        self.a = Daemon("machine-a", root / "a-home", root / "a-store")
        self.b = Daemon("machine-b", root / "b-home", root / "b-store")

    def __enter__(self) -> SyncthingPair:
        try:
            self.a.generate()
            self.b.generate()
            self.a.write_config(self.b)
            self.b.write_config(self.a)
            self.a.start()
            self.b.start()
            self.wait_connected()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        for daemon in (self.a, self.b):
            daemon.stop()

    def diagnostics(self) -> str:
        return "\n".join(daemon.log_tail() for daemon in (self.a, self.b))

    def wait_connected(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for daemon in (self.a, self.b):
                if not daemon.alive():
                    raise RuntimeError(f"syncthing {daemon.name} exited early:\n{self.diagnostics()}")
            try:
                peers = self.a.api("GET", "/rest/system/connections")["connections"]
                if peers.get(self.b.device_id, {}).get("connected"):
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.3)
        raise TimeoutError(f"the two syncthing daemons did not connect within {timeout:.0f} s:\n{self.diagnostics()}")

    def rescan(self) -> None:
        for daemon in (self.a, self.b):
            with contextlib.suppress(OSError, ValueError):
                daemon.api("POST", f"/rest/db/scan?folder={FOLDER_ID}", timeout=30.0)

    def idle(self) -> bool:
        for daemon, peer in ((self.a, self.b), (self.b, self.a)):
            try:
                status = daemon.api("GET", f"/rest/db/status?folder={FOLDER_ID}")
                completion = daemon.api("GET", f"/rest/db/completion?folder={FOLDER_ID}&device={peer.device_id}")
            except (OSError, ValueError):
                return False
            if status.get("state") != "idle" or status.get("needTotalItems", 1) != 0:
                return False
            if completion.get("completion") != 100:
                return False
        return True

    def wait_converged(self, timeout: float) -> dict[str, str]:
        """Block until both folders hold the same files and both daemons are idle; return the digest."""
        deadline = time.monotonic() + timeout
        stable = 0
        last: dict[str, str] = {}
        while time.monotonic() < deadline:
            self.rescan()
            left, right = folder_digest(self.a.folder), folder_digest(self.b.folder)
            if left == right and self.idle():
                stable = stable + 1 if left == last else 1
                last = left
                if stable >= 2:
                    return left
            else:
                stable = 0
            time.sleep(0.5)
        raise TimeoutError(
            f"folders did not converge within {timeout:.0f} s: a has {sorted(folder_digest(self.a.folder))}, "
            f"b has {sorted(folder_digest(self.b.folder))}\n{self.diagnostics()}"
        )


def available() -> bool:
    return SYNCTHING is not None
