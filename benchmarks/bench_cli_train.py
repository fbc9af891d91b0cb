"""Wall time of `attnlab train` on the defaults, and the share that is not training.

Runs the real command (a fresh process each time, against a temporary embedded MLflow store) and
splits its time with the summary's own timings: imports, config check, Prefect start, the flow's
steps, and the whole process as the shell sees it.

Run: python benchmarks/bench_cli_train.py [--repeats 5]
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


def one_run(store: Path) -> dict[str, float]:
    attnlab = Path(sys.executable).with_name("attnlab")
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store)}
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.perf_counter()
    out = subprocess.run([str(attnlab), "train", "--json"], env=env, capture_output=True, text=True, check=True)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runs = [one_run(Path(folder) / "mlflow") for _ in range(args.repeats)]
    print(f"`attnlab train` on the defaults, median of {args.repeats} runs (seconds)")
    for key in runs[0]:
        print(f"  {key:<36} {statistics.median(r[key] for r in runs):6.2f}")
    overhead = statistics.median(r["wall"] - r["training (optimisation steps)"] for r in runs)
    print(f"  {'not training (wall - training)':<36} {overhead:6.2f}")


if __name__ == "__main__":
    main()
