"""Every `attnlab predict` command that README.md and the command-line page of the docs
(docs/command-line.md) show runs as shown against a small trained store: a command followed by an
`attnlab: error:` line is refused with exactly that line (exit 2), the others answer every input
(exit 0)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from _flowkit import TINY, point_at, run_flow

from attnlab.flows.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
#: The pages whose code blocks show ``attnlab predict`` commands.
PAGES = (ROOT / "README.md", ROOT / "docs" / "command-line.md")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_predictions(text: str) -> list[tuple[list[str], str | None]]:
    """(arguments after ``attnlab``, the error line shown after it or None) for each line of a
    fenced code block that runs ``attnlab predict`` (``$ `` prompts and ``#`` comments dropped)."""
    found = []
    for block in _FENCE.findall(text):
        lines = block.splitlines()
        for line, after in zip(lines, [*lines[1:], ""]):
            command = line.removeprefix("$ ")
            if command.startswith("attnlab predict "):
                error = after if after.startswith("attnlab: error: ") else None
                found.append((shlex.split(command, comments=True)[1:], error))
    return found


def page_predictions(page: Path) -> list[tuple[list[str], str | None]]:
    return readme_predictions(page.read_text(encoding="utf-8"))


#: Each command once (the README repeats some of the page's).
COMMANDS = list({(tuple(args), error): (args, error) for page in PAGES for args, error in page_predictions(page)}.values())


def test_the_docs_show_predict_commands_and_a_refusal():
    assert len(COMMANDS) >= 4, COMMANDS
    assert any(error for _, error in COMMANDS) and any(error is None for _, error in COMMANDS)
    page = page_predictions(PAGES[1])
    assert len(page) >= 4 and any(error for _, error in page), page


@pytest.fixture(scope="module")
def reverse_store(tmp_path_factory, prefect_harness) -> Path:
    """A store whose attnlab-reverse experiment has a champion (a tiny model: it learns nothing)."""
    folder = tmp_path_factory.mktemp("reverse") / "mlflow"
    run_flow(folder, task="reverse", **TINY)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("args,error", COMMANDS, ids=[" ".join(args) for args, _ in COMMANDS])
def test_readme_predict_command_runs_as_shown(args, error, request, tmp_path, monkeypatch, capsys):
    """Date commands run against the session's learned date model, ``--task reverse`` ones
    against a tiny reverse model; written files land in a temporary folder."""
    if "reverse" in args:
        store = request.getfixturevalue("reverse_store")
    else:
        store = request.getfixturevalue("learned_store")[0]
    point_at(store, monkeypatch)
    monkeypatch.chdir(tmp_path)
    code = main(args)
    out, err = capsys.readouterr()
    if error is not None:
        assert (code, out, err.strip()) == (2, "", error)
        return
    assert code == 0, err
    inputs = [a for a in args[1:] if re.fullmatch(r"[0-9][0-9-]*", a)]
    assert [line.split(" -> ")[0] for line in out.splitlines()] == inputs, out
