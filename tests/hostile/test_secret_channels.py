"""No secret reaches the store or the state folder in clear, whatever channel carries it.

Captured turns go through a real Claude Code transcript and the Stop hook; records, nodes and imports
through the features' own writes (`secret_channels.py`). Values are random, generated at run time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from tests.hostile import secret_channels
from tests.hostile.secret_kinds import forms, leaked, values

ROOT = Path(__file__).resolve().parents[2]


def on_disk(tmp_path: Path) -> str:
    return "\n".join(text for _, text in secret_channels.stored(tmp_path / "store", tmp_path / "state"))


def captured(tmp_path: Path, turns: list[list[str]], final: str, session: str = "s-1") -> list[dict[str, object]]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    transcript = work / f"{session}.jsonl"
    transcript.write_text("\n".join(line for turn in turns for line in turn) + "\n")
    secret_channels.run_stop_hook(main, transcript, session, work, final)
    transcript.unlink()
    logs = (tmp_path / "store").glob("events.*.jsonl")
    events = [json.loads(line) for path in logs for line in path.read_text().splitlines()]
    return [event["data"]["turn"] for event in events if event.get("kind") == "capture.turn"]


# -- a clip never leaves the head of a secret ----------------------------------------------------


@pytest.mark.parametrize("name", ["Stripe secret key", "Google API key", "GitHub classic token", "Slack bot token"])
def test_a_failing_command_cut_inside_its_quoted_secret_leaves_no_part_of_it(tmp_path, name):
    """The error line shows a failing command's first 80 characters: wherever that cut falls inside a
    quoted secret, no part of it is stored (it is redacted before it is cut)."""
    kind, value = next((k, v) for k, v in values(seed=3) if k.name == name)
    output = f"Error: Invalid API Key provided: '{value}'"
    turns = []
    for pad in range(30, 80, 3):
        for template in ('export KEY="{v}" && ./run', "stripe_key = '{v}'"):
            command = "x" * pad + " " + template.format(v=value)
            turn = secret_channels.claude_turn(len(turns), "charge it", command, output, 1, "It failed.", "")
            turns.append([line for line in turn if "handoff-" not in line])
    records = captured(tmp_path, turns, "It failed.")
    assert records and all(record["errors"] for record in records), records
    assert not leaked(kind, value, on_disk(tmp_path))


# -- a secret found anywhere in a turn is redacted wherever the turn repeats it -------------------

OPAQUE = "Zx8kPq2Lm9Rt4Vw7Yb3nQ1"


@pytest.mark.parametrize(
    ("prompt", "command", "output", "reply", "summary", "secret"),
    [
        pytest.param(
            "set up the deploy",
            f"export DEPLOY_TOKEN={OPAQUE} && ./deploy.sh",
            "",
            f"Deployed; it used {OPAQUE} for that.",
            f"Deployed via {OPAQUE}",
            OPAQUE,
            id="an exported token repeated in the reply and the handoff",
        ),
        pytest.param(
            "connect with mysql password hunter2x! please",
            "mysql -h db.internal shop < schema.sql",
            "",
            "Connected using hunter2x! and loaded the schema.",
            "",
            "hunter2x",
            id="a password named in the prompt repeated in the reply",
        ),
        pytest.param(
            f"deploy with {OPAQUE} now",
            f"API_TOKEN={OPAQUE} make deploy",
            "",
            "Done.",
            "",
            OPAQUE,
            id="an opaque value in the prompt that a command shows to be a token",
        ),
        pytest.param(
            "what is in the env file?",
            "cat .env",
            f"DEBUG=1\nSERVICE_API_KEY={OPAQUE}\nREGION=eu-west-1",
            f"The second value is {OPAQUE}, then the region.",
            "",
            OPAQUE,
            id="a token from a tool's output repeated in the reply",
        ),
    ],
)
def test_a_secret_found_anywhere_in_a_turn_is_redacted_wherever_it_repeats(
    tmp_path, prompt, command, output, reply, summary, secret
):
    turn = secret_channels.claude_turn(0, prompt, command, output, 0, reply, summary)
    records = captured(tmp_path, [turn if summary else [line for line in turn if "handoff-" not in line]], reply)
    assert records, "the turn was stored"
    assert secret not in on_disk(tmp_path), json.dumps(records)


# -- every kind through every channel: nothing in clear, in the store or the state folder ---------


def test_every_kind_through_every_channel_leaves_nothing_in_clear(tmp_path):
    """Every kind's first form goes through every channel, each other (kind, form) text through two
    (round robin), so every channel carries every kind and every form is written somewhere."""
    texts = [(kind, value, n, text) for kind, value in values(seed=5) for n, (_, text) in enumerate(forms(kind, value))]
    channels = secret_channels.CHANNELS
    by_channel: dict[str, list[str]] = {channel: [] for channel in channels}
    for at, (_, _, n, text) in enumerate(texts):
        for channel in channels if n == 0 else [channels[at % len(channels)], channels[(at + 3) % len(channels)]]:
            by_channel[channel].append(text)
    (tmp_path / "work").mkdir()
    for seed, (channel, batch) in enumerate(by_channel.items()):
        if channel in secret_channels.CAPTURE_CHANNELS:
            secret_channels.capture(main, tmp_path / "work", channel, batch, f"s-{seed}")
        else:
            app = App.open()
            try:
                secret_channels.store(app, channel, batch, tmp_path / "work")
            finally:
                app.close()
    disk = on_disk(tmp_path)
    assert '"capture.turn"' in disk and '"context.set"' in disk and '"graph.node"' in disk
    clear = sorted({kind.name for kind, value, _, _ in texts if leaked(kind, value, disk)})
    assert not clear, f"in clear: {clear}"


# -- the benchmark prints it --------------------------------------------------------------------


def test_the_secret_bench_prints_nothing_in_clear_on_any_channel(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("CONTEXTFLOW_STATE", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_secrets.py"), "--evidence-only", "--sample", "16"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "credential corpus: 1,442 texts, 0 in clear" in done.stdout
    assert "values in clear in the store: 0; in the state folder: 0" in done.stdout, done.stdout
    code = next(line for line in done.stdout.splitlines() if line.strip().startswith("code "))
    assert code.split()[-2] == "0", code  # findings in the standard library's code
