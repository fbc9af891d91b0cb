"""The house rules that keep the source readable: small modules, short functions, packages that
say what they hold, and every core package under the type checker."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SOURCES = sorted(path for folder in ("components", "flows", "plugins") for path in (ROOT / folder).rglob("*.py"))
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def long_functions(path: Path) -> list[str]:
    """Functions of ``path`` longer than the limit, counted from the first line of the body (the
    docstring included): a signature with one parameter per line, as the formatter writes Typer
    commands and flows, does not count."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.body[0].lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_module_is_over_300_lines():
    long = {str(p.relative_to(ROOT)): n for p in SOURCES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_function_is_over_60_lines():
    assert not [line for path in SOURCES for line in long_functions(path)]


@pytest.mark.parametrize("package", sorted(p.parent.relative_to(ROOT) for p in SOURCES if p.name == "__init__.py"), ids=str)
def test_every_package_says_what_it_holds(package: Path):
    assert ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text())), package


def test_every_core_package_is_type_checked():
    """mypy reads the core through typecheck/attnlab (links to components/ and plugins/, see
    pyproject's [tool.mypy]); a new package without its link would go unchecked."""
    linked = {path.name: path.resolve() for path in (ROOT / "typecheck" / "attnlab").iterdir()}
    for package in sorted(p.parent for p in (ROOT / "components").glob("*/__init__.py")):
        assert linked.get(package.name) == package.resolve(), f"typecheck/attnlab/{package.name} -> {package} is missing"
    assert linked.get("plugins") == (ROOT / "plugins").resolve()


def test_the_files_started_first_exist_and_make_test_keeps_their_order():
    """A renamed test file would silently fall back to xdist's order; xdist's reordering by test
    count would undo LONGEST_FIRST."""
    (assignment,) = [
        node for node in ast.parse((ROOT / "tests" / "conftest.py").read_text()).body
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["LONGEST_FIRST"]
    ]  # fmt: skip
    first = ast.literal_eval(assignment.value)
    assert first and [name for name in first if not (ROOT / "tests" / name).is_file()] == []
    test_recipe = (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "--dist loadfile --no-loadscope-reorder" in test_recipe
