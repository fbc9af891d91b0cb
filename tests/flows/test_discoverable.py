"""Options are discoverable: ``attnlab plugins`` shows each plugin's options, ``attnlab train --help``
says where ``-o`` keys come from, and ``attnlab --help`` shows each command's whole first sentence."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from attnlab.lab.config import ExperimentConfig


def _attnlab(capsys, *args: str) -> tuple[int, str]:
    from attnlab.flows.cli import app as cli

    code = cli.main(list(args))
    return code, capsys.readouterr().out


def test_plugins_shows_each_plugins_options_with_default_and_type(capsys):
    code, out = _attnlab(capsys, "plugins")
    assert code == 0
    lines = out.splitlines()
    multihead = next(i for i, line in enumerate(lines) if line.split()[:1] == ["multihead"])
    assert lines[multihead + 1].split()[:1] == ["options:"]
    assert "heads: int = 4" in lines[multihead + 1] and "dropout: float = 0.0" in lines[multihead + 1]
    dot = next(i for i, line in enumerate(lines) if line.split()[:1] == ["dot"])
    assert lines[dot + 1].split() == ["options:", "none"]
    assert "-o GROUP.NAME=VALUE" in out and "scorer.heads=8" in out

    code, out = _attnlab(capsys, "plugins", "--json")
    table = json.loads(out)
    rows = {row["name"]: row for row in table["scorers"]}
    assert {"name": "heads", "default": 4, "type": "int"} in rows["multihead"]["options"]
    assert rows["dot"]["options"] == []
    reverse = next(row for row in table["tasks"] if row["name"] == "reverse")
    assert {"name": "max_length", "default": 20, "type": "int"} in reverse["options"]


def test_train_help_says_where_option_keys_come_from(capsys):
    code, out = _attnlab(capsys, "train", "--help")
    assert code == 0
    text = " ".join(out.split())
    listed = text.split("-o KEY=VALUE sets any config key:")[1].split("-o GROUP.NAME=VALUE")[0]
    assert [key.strip() for key in listed.split(",")] == list(ExperimentConfig.model_fields)
    assert "-o GROUP.NAME=VALUE sets option NAME" in text and "-o scorer.heads=8" in text
    assert "'attnlab plugins' lists every plugin's options" in text
    assert "--config" in text


def _first_sentences() -> dict[str, str]:
    import typer

    from attnlab.flows.cli import app as cli

    group = typer.main.get_command(cli.app)
    return {name: " ".join(command.get_short_help_str(limit=10**6).split()) for name, command in group.commands.items()}


def _help_in_terminal(columns: int) -> str:
    """``attnlab --help`` as the console script prints it in a terminal ``columns`` wide."""
    script = Path(sys.executable).with_name("attnlab")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    process = subprocess.Popen([str(script), "--help"], stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=120) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, None], ids=["terminal-80", "pipe"])
def test_top_level_help_shows_each_commands_whole_first_sentence(columns):
    if columns is None:
        done = subprocess.run([str(Path(sys.executable).with_name("attnlab")), "--help"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out = done.stdout
    else:
        out = _help_in_terminal(columns)
        assert max(len(line) for line in out.splitlines()) <= columns
    commands = out[out.index("Commands:") :]
    assert "..." not in commands, commands
    text = " ".join(commands.split())
    for name, sentence in _first_sentences().items():
        assert f"{name} {sentence}" in text, (name, sentence, commands)
