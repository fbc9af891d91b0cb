"""Scripts of benchmarks/ loaded as modules, for the tests of what they compute (the study
pages' tables, the length-normalised ranking)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[1]
BENCHMARKS = ROOT / "benchmarks"


def benchmark_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module, the study scripts beside it importable while it loads."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
