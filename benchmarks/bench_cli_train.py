"""Wall time of `attnlab train` on the defaults, and the share that is not training.

Runs the real command (a fresh process each time, against a temporary embedded MLflow store) and
splits its time with the summary's own timings: imports, config check, Prefect start, the flow's
steps, and the whole process as the shell sees it. Beside it, the floor of any such command: a
fresh process that only imports what every run needs (torch with the part its optimizers import,
MLflow with its SQLite store, Prefect's flow engine, matplotlib), taking turns with the command.
With ``--before PATH``, the ``attnlab`` executable of another checkout (e.g. an earlier commit
set up with ``make setup`` in a git worktree) takes turns too, in a column of its own; with
``--without-explanations``, this checkout with ``-o explain_examples=0`` (what scoring the
explanations and drawing them on the explorer page cost a run).

Run: python benchmarks/bench_cli_train.py [--repeats 5] [--before OTHER/.venv/bin/attnlab] [--without-explanations]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(attnlab: Path, store: Path, options: tuple[str, ...] = ()) -> dict[str, float]:
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store)}
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.perf_counter()
    out = subprocess.run([str(attnlab), "train", "--json", *options], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    summary = json.loads(out.stdout)
    timings = summary["timings"]
    return {
        "wall": wall,
        "training (optimisation steps)": summary["train_seconds"],
        "imports": timings["imports"],
        "config and tracking-store check": timings["check"],
        "Prefect start": timings["prefect_start"],
        **{f"flow step: {name}": seconds for name, seconds in timings["steps"].items()},
    }


#: What every `attnlab train` imports, whatever the code around it does.
FLOOR_IMPORTS = "import torch, torch._dynamo, mlflow, mlflow.store.tracking.sqlalchemy_store, prefect.flows, matplotlib.figure"


def import_floor() -> dict[str, float]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR_IMPORTS], check=True)
    return {"wall": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="the attnlab executable of another checkout, run in turn with this one")
    parser.add_argument("--without-explanations", action="store_true", help="this checkout with -o explain_examples=0 too")
    args = parser.parse_args()
    here = Path(sys.executable).with_name("attnlab")
    commands: dict[str, tuple[Path, tuple[str, ...]]] = {"this checkout": (here, ())}
    if args.before is not None:
        commands["--before"] = (args.before, ())
    if args.without_explanations:
        commands["no explanations"] = (here, ("-o", "explain_examples=0"))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in [*commands, "floor"]}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeats):
            for name, (attnlab, options) in commands.items():
                runs[name].append(one_run(attnlab, Path(folder) / name.strip("-").replace(" ", "-") / "mlflow", options))
            runs["floor"].append(import_floor())
    for results in runs.values():
        for r in results:
            if "training (optimisation steps)" in r:
                r["not training (wall - training)"] = r["wall"] - r["training (optimisation steps)"]
    keys = list(dict.fromkeys(key for results in runs.values() for r in results for key in r))
    print(f"`attnlab train` on the defaults, median of {args.repeats} runs taking turns (seconds)")
    print(f"  {'':<36}" + "".join(f"{name:>16}" for name in runs))
    for key in keys:
        cells = [statistics.median(r[key] for r in results) if key in results[0] else None for results in runs.values()]
        print(f"  {key:<36}" + "".join(f"{'-' if c is None else f'{c:.2f}':>16}" for c in cells))
    print(f"  floor: a fresh process that runs only: {FLOOR_IMPORTS}")


if __name__ == "__main__":
    main()
