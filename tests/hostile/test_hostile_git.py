"""A hostile `.git` (FIFOs, links out, refs out of `refs/`, huge files, bad paths from another
machine): every hook and command returns within 2 s of CPU and 300 MB, and nothing outside the
repository is read or stored."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from contextflow.capture import filestate
from contextflow.core import gitrepo

ROOT = Path(__file__).resolve().parents[2]
SECRET = "AWS_SECRET=not-for-you-0123456789abcdef"
CPU_SECONDS = 2
MAX_RSS_BYTES = 300 << 20
COMMIT = "1" * 40


def fake_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository folder with a plausible `.git` (HEAD on main, a commit id in a loose ref) and a
    secret file beside it, outside the repository."""
    repo = tmp_path / "app"
    (repo / ".git" / "refs" / "heads").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "refs" / "heads" / "main").write_text(COMMIT + "\n")
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (repo / "calc.py").write_text("x = 1\n")
    secret = tmp_path / "outside-secret.txt"
    secret.write_text(SECRET + "\n")
    return repo, secret


def fifo(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)


# A small parent that runs the command and reports the child's own CPU and peak memory: a child forked
# from this (large) test process would count this process's memory in its peak, whatever it used itself.
MEASURE = """
import os, resource, sys
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[2]), int(sys.argv[2])))  # killed past it
    os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
"""


def run_cli(args: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`contextflow ARGS` in a child bounded in CPU; it must end (a hang fails the test at 60 s of
    waiting), within CPU_SECONDS of CPU and MAX_RSS_BYTES of memory, measured for that child alone."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "usage"
        measured = [sys.executable, "-c", MEASURE, str(report), str(CPU_SECONDS + 1), "-m", "contextflow", *args]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        with subprocess.Popen(measured, cwd=cwd, env=env, start_new_session=True, **pipes) as proc:
            try:
                out, err = proc.communicate(stdin, timeout=60)
            finally:  # a hang: the command and its parent go, whatever else fails
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        code, cpu, peak = report.read_text().split()
    done = subprocess.CompletedProcess(args, int(code), out, err)
    assert done.returncode >= 0, f"killed by signal {-done.returncode} (CPU past {CPU_SECONDS} s?)"
    assert float(cpu) <= CPU_SECONDS, f"{args} took {float(cpu):.2f} s of CPU"
    assert int(peak) * 1024 <= MAX_RSS_BYTES, f"{args} used {int(peak) // 1024} MB"
    return done


def child_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "CONTEXTFLOW_WRITER": "writer-a",
        "PYTHONPATH": str(ROOT),
    }


def claude_transcript(tmp_path: Path, repo: Path, *edited: str) -> Path:
    """A Claude Code transcript of one turn that edited calc.py (its Stop hook records the file's state)."""
    import importlib.util

    path = ROOT / "scripts" / "benchlib" / "transcripts.py"
    spec = importlib.util.spec_from_file_location("bench_transcripts", path)
    assert spec is not None and spec.loader is not None
    writer = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_transcripts", writer)
    spec.loader.exec_module(writer)
    steps = [{"edit": path} for path in edited or ("calc.py",)]
    turn = {"prompt": "edit calc", "steps": steps, "final": "We decided to keep x at one."}
    transcript = tmp_path / "home" / ".claude" / "projects" / "s1.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("".join(writer.claude([turn], "s1")).replace(writer.ROOT, str(repo)))
    return transcript


def turn_states(tmp_path: Path) -> list[dict[str, object]]:
    found = []
    for log in (tmp_path / "store").glob("*.jsonl"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "capture.turn":
                found.append(event["data"]["turn"].get("state", {}))
    return found


def test_a_sane_repository_records_the_turns_file_state(tmp_path):
    """The control of the tests below: their Stop hook does record calc.py's state and HEAD."""
    repo, _ = fake_repo(tmp_path)
    every_entry_point(repo, tmp_path)
    (state,) = turn_states(tmp_path)
    assert state["commit"] == COMMIT and state["branch"] == "main" and "calc.py" in state["files"]  # type: ignore[operator]


def every_entry_point(repo: Path, tmp_path: Path) -> list[bytes]:
    """The Stop hook (with a turn that wrote calc.py), the session start and `contextflow note`, run in
    `repo`; returns their outputs (each must have returned within the bounds)."""
    env = child_env(tmp_path)
    transcript = claude_transcript(tmp_path, repo)
    stop = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop", "transcript_path": str(transcript)}
    outputs = [run_cli(["hook", "stop"], repo, env, json.dumps(stop).encode()).stdout]
    start = {"session_id": "s2", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    outputs.append(run_cli(["hook", "session-start"], repo, env, json.dumps(start).encode()).stdout)
    note = run_cli(["note", "a note here", "--session", "s1"], repo, env)
    assert note.returncode == 0, note.stderr[-500:]
    outputs.append(note.stdout)
    return outputs


def stored(tmp_path: Path) -> str:
    return "".join(p.read_text() for p in (tmp_path / "store").glob("*.jsonl")) + "".join(
        p.read_text(errors="replace") for p in (tmp_path / "state").rglob("*.json")
    )


@pytest.mark.parametrize("which", [".git", ".git/HEAD", ".git/config", ".git/commondir", ".git/refs/heads/main"])
def test_a_fifo_anywhere_in_git_never_blocks_a_hook_or_command(tmp_path, which):
    repo, _ = fake_repo(tmp_path)
    fifo(repo / which)
    every_entry_point(repo, tmp_path)


def test_head_linked_to_an_endless_device_or_a_huge_file_is_read_within_bounds(tmp_path):
    repo, _ = fake_repo(tmp_path)
    (repo / ".git" / "HEAD").unlink()
    (repo / ".git" / "HEAD").symlink_to("/dev/zero")
    every_entry_point(repo, tmp_path)
    (repo / ".git" / "HEAD").unlink()
    with open(repo / ".git" / "HEAD", "wb") as handle:  # 2 GB, sparse: costs no disk
        handle.write(b"ref: refs/heads/main")
        handle.truncate(2 << 30)
    every_entry_point(repo, tmp_path)
    assert gitrepo.head(gitrepo.open_repo(repo)) == (None, None)


def test_a_ten_million_line_packed_refs_is_scanned_only_up_to_its_cap(tmp_path):
    repo, _ = fake_repo(tmp_path)
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    line = b"%s refs/tags/t%%d\n" % (b"2" * 40)
    with open(repo / ".git" / "packed-refs", "wb") as handle:
        block = b"".join(line % n for n in range(100_000))
        for _ in range(100):
            handle.write(block)  # 10M lines, about 660 MB
        handle.write(b"%s refs/heads/main\n" % (b"3" * 40))
    every_entry_point(repo, tmp_path)
    assert gitrepo.head(gitrepo.open_repo(repo)) == ("main", None)  # past the cap: unknown, not read on
    last = b"3" * 40 + b" refs/heads/main"
    (repo / ".git" / "packed-refs").write_bytes(b"# pack-refs with: peeled\n" + line % 1 + last)
    assert gitrepo.head(gitrepo.open_repo(repo)) == ("main", "3" * 40)  # a last line without its newline


@pytest.mark.parametrize(
    "head",
    [
        "ref: ../../outside-secret.txt",
        "ref: refs/../../../outside-secret.txt",
        "ref: {secret}",
        "ref: refs/heads/linked",  # a loose ref that is a link out of the repository
        "ref: refs/heads/main\x00../../../outside-secret.txt",
    ],
)
def test_a_ref_out_of_refs_is_never_read_nor_stored_as_the_turns_commit(tmp_path, head):
    repo, secret = fake_repo(tmp_path)
    (repo / ".git" / "refs" / "heads" / "linked").symlink_to(secret)
    (repo / ".git" / "HEAD").write_text(head.format(secret=secret) + "\n")
    every_entry_point(repo, tmp_path)
    state = filestate.states(str(repo), ["calc.py"])
    assert state["commit"] == "" and SECRET not in json.dumps(state)
    assert "not-for-you" not in stored(tmp_path)


def test_a_loose_ref_that_is_not_a_commit_id_is_nothing(tmp_path):
    repo, _ = fake_repo(tmp_path)
    (repo / ".git" / "refs" / "heads" / "main").write_text("password=hunter2 and more text\n")
    assert gitrepo.head(gitrepo.open_repo(repo)) == ("main", None)
    (repo / ".git" / "refs" / "heads" / "main").write_text("ref: refs/heads/main\n")  # a loop
    assert gitrepo.head(gitrepo.open_repo(repo)) == ("main", None)


def test_a_cited_path_holding_a_nul_from_another_machine_is_skipped(tmp_path):
    repo, _ = fake_repo(tmp_path)
    bad = {"commit": COMMIT, "files": {"calc\x00.py": "x", "calc.py": "y", "/etc/passwd": "z", "a/../../b": "w"}}
    assert [c.path for c in filestate.changes(str(repo), bad)] == ["calc.py"]
    files = filestate.states(str(repo), ["calc\x00.py", "calc.py"])["files"]
    assert files == {"calc.py": filestate.blob_id(b"x = 1\n")}


def test_git_is_never_taken_from_a_relative_path_entry(tmp_path, monkeypatch):
    planted = tmp_path / "bin"
    planted.mkdir()
    (planted / "git").write_text("#!/bin/sh\necho planted > planted.txt\n")
    (planted / "git").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert gitrepo.git_executable(os.pathsep.join(["bin", "./bin", ""])) is None
    assert gitrepo.git_executable(os.pathsep.join(["bin", str(planted)])) == str(planted / "git")
    env = gitrepo.git_env("/r/.git")
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_PAGER"] == "cat"


def test_a_hook_in_a_hostile_repository_opens_nothing_outside_it(tmp_path):
    """strace records every file the Stop hook and the session start open: the secret beside the
    repository (the target of HEAD's link, a loose ref's link and a `../` ref) is never one."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (apt-get install strace): the open calls cannot be traced")
    repo, secret = fake_repo(tmp_path)
    (repo / ".git" / "refs" / "heads" / "linked").symlink_to(secret)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/linked\n")
    (repo / ".git" / "refs" / "heads" / "up").write_text(f"ref: ../../../{secret.name}\n")
    (repo / "link.py").symlink_to(secret)  # a cited file that is a link out
    env = child_env(tmp_path)
    trace = tmp_path / "trace.txt"
    transcript = claude_transcript(tmp_path, repo, "calc.py", "link.py")
    command = [sys.executable, "-m", "contextflow", "hook"]
    for hook, body in (
        ("stop", {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop", "transcript_path": str(transcript)}),
        ("session-start", {"session_id": "s2", "cwd": str(repo), "hook_event_name": "SessionStart"}),
    ):
        done = subprocess.run(
            [strace, "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(trace), *command, hook],
            cwd=repo,
            env=env,
            input=json.dumps(body).encode(),
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-800:]
        traced = trace.read_text()
        assert "openat(" in traced or "open(" in traced  # the trace did record the opens
        assert secret.name not in traced, [line for line in traced.splitlines() if secret.name in line]
    assert "not-for-you" not in stored(tmp_path)
