"""One way to declare a flag of the ``attnlab`` command: a parameter typed ``Annotated[type,
typer.Option(...)]`` with its default after ``=``, and a flag several commands take declared once
in ``flows/cli/options.py``, so that it reads the same in every ``--help``."""

from __future__ import annotations

import ast
from pathlib import Path

import typer.main

from attnlab.flows.cli.app import app

CLI = Path(__file__).parents[1] / "flows" / "cli"
SHARED_FLAGS = ("--json", "--verbose")


def typer_calls(node: ast.AST) -> list[ast.Call]:
    """The ``typer.Option(...)`` and ``typer.Argument(...)`` calls under ``node``."""
    return [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "typer"
        and call.func.attr in ("Option", "Argument")
    ]


def test_no_flag_is_declared_as_a_default():
    found = []
    for path in sorted(CLI.glob("*.py")):
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defaults = [*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None)]
                found += [f"{path.name}:{call.lineno}" for default in defaults for call in typer_calls(default)]
    assert not found, f"declare these as 'name: Annotated[type, typer.Option(...)] = default': {found}"


def test_shared_flags_are_declared_in_options_only():
    found = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "options.py":
            continue
        for call in typer_calls(ast.parse(path.read_text())):
            names = {arg.value for arg in call.args if isinstance(arg, ast.Constant)}
            found += [f"{path.name}:{call.lineno} {flag}" for flag in SHARED_FLAGS if flag in names]
    assert not found, f"use the aliases of flows/cli/options.py (JsonOutput, Verbose): {found}"


def test_each_shared_flag_has_one_help_text():
    helps: dict[str, dict[str, str]] = {flag: {} for flag in SHARED_FLAGS}

    def walk(command, path: str) -> None:
        for param in getattr(command, "params", []):
            for flag in SHARED_FLAGS:
                if flag in param.opts:
                    helps[flag][path] = param.help
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    assert len(helps["--json"]) >= 6 and len(helps["--verbose"]) >= 8, helps
    for flag, by_command in helps.items():
        assert len(set(by_command.values())) == 1, (flag, by_command)
