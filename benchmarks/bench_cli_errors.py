"""How long `attnlab` takes to report a user mistake, beside the time of `attnlab --help`.

Runs each mistake as a fresh process through the virtualenv's `attnlab` script, against an
empty temporary MLflow store and cache (or, with --store, an existing store: then `predict` finds
the champion of the date task), and prints per command: the median wall time, the median CPU
time of the process, the exit status and the first line on stderr (a mistake is one line, exit
status 2). Wall time counts whatever else runs on the cores; on a busy machine the CPU time is
closer to what a quiet machine shows.

Run: python benchmarks/bench_cli_errors.py [--repeats 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LONG_INPUT = "1" * 5000
#: (label, arguments after `attnlab`); --help first, as the reference.
COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("train --scorer cosine", ["train", "--scorer", "cosine"]),
    ("train -o hidden_size=abc", ["train", "-o", "hidden_size=abc"]),
    ("train --epochs -3", ["train", "--epochs", "-3"]),
    ("predict 99-99-2023", ["predict", "99-99-2023"]),
    ("predict <5,000 characters>", ["predict", LONG_INPUT]),
    ("predict --model nosuch 25-12-2023", ["predict", "--model", "nosuch", "25-12-2023"]),
    ("sweep --scorer dot,nosuch", ["sweep", "--scorer", "dot,nosuch"]),
    ('schedule --cron "bad"', ["schedule", "--cron", "bad"]),
    ("plugins --nosuchflag", ["plugins", "--nosuchflag"]),
]


def attnlab_script() -> Path:
    """The `attnlab` console script: the repository's .venv, else beside this interpreter."""
    venv = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "attnlab"
    return venv if venv.exists() else Path(sys.executable).with_name("attnlab")


def one_run(args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, exit status, first stderr line) of one fresh `attnlab` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(attnlab_script()), *args], env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""]
    return wall, cpu, done.returncode, lines[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--store", type=Path, help="an existing embedded MLflow store folder (default: a new empty one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = args.store.resolve() if args.store else Path(folder) / "mlflow"
        env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store), "ATTNLAB_CACHE_DIR": str(Path(folder) / "cache")}
        env.pop("MLFLOW_TRACKING_URI", None)
        rows = []
        for label, command in COMMANDS:
            runs = [one_run(command, env) for _ in range(args.repeats)]
            wall, cpu = (statistics.median(r[k] for r in runs) for k in (0, 1))
            rows.append((label, wall, cpu, runs[-1][2], runs[-1][3]))
    where = f"store {args.store}" if args.store else "an empty store"
    print(f"attnlab user mistakes against {where}: median of {args.repeats} fresh processes")
    width = max(len(label) for label, *_ in rows)
    print(f"  {'command':<{width}}  {'wall s':>6}  {'cpu s':>6}  exit  first stderr line")
    for label, wall, cpu, code, line in rows:
        shown = line if len(line) <= 140 else line[:137] + "..."
        print(f"  {label:<{width}}  {wall:6.2f}  {cpu:6.2f}  {code:>4}  {shown}")


if __name__ == "__main__":
    main()
