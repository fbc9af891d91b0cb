"""What the garbage collector costs a small `attnlab train`: at Python's default pace and at
attnlab's (attnlab.ops.collector), side by side.

Each repeat runs the same command twice in fresh processes, once per pace, alternating which goes
first: the `attnlab` entry point with only the collector's thresholds changed. It prints per pace
the medians of the process's own CPU seconds (not its Prefect server's), of the seconds spent in
collections and of their count. The command trains 1 epoch of 200 examples of the date task
(embedding and hidden size 16) into a temporary store, so imports and start-up dominate, as in
every short command.

Run: python benchmarks/bench_collector_pace.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

COMMAND = ["train", "-otrain_size=200", "-ovalidation_size=50", "-otest_size=50", "-oembedding_dim=16", "-ohidden_size=16", "-oepochs=1"]
PYTHONS_PACE = (700, 10, 10)

#: The child: attnlab's entry point at the given thresholds, reporting its own CPU and collections.
CHILD = """
import atexit, gc, json, os, resource, sys, time
import attnlab.ops.collector as collector
collector.THRESHOLDS = tuple(json.loads(os.environ["PACE"]))
spent, started = [0.0, 0], [0.0]
def clock(phase, info):
    if phase == "start":
        started[0] = time.process_time()
    else:
        spent[0] += time.process_time() - started[0]
        spent[1] += 1
gc.callbacks.append(clock)
def report():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["REPORT"], "w") as out:
        json.dump({"cpu": usage.ru_utime + usage.ru_stime, "gc": spent[0], "collections": spent[1]}, out)
atexit.register(report)
from attnlab.flows.cli.app import run
sys.argv = ["attnlab", *sys.argv[1:]]
run()
"""


def one_run(pace: tuple[int, int, int], folder: Path) -> dict[str, float]:
    report = folder / "report.json"
    env = {**os.environ, "PACE": json.dumps(pace), "REPORT": str(report), "ATTNLAB_MLFLOW_DIR": str(folder / "mlflow"),
           "ATTNLAB_CACHE_DIR": str(folder / "cache")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", CHILD, *COMMAND], env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.exit(f"attnlab train failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from attnlab.ops.collector import THRESHOLDS

    paces = {"Python's default": PYTHONS_PACE, "attnlab's": THRESHOLDS}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in paces}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            order = list(paces) if repeat % 2 == 0 else list(reversed(paces))
            for name in order:
                results[name].append(one_run(paces[name], Path(tmp)))
                print(f"repeat {repeat + 1}/{args.repeats}, {name}: {results[name][-1]}", file=sys.stderr)
    print(f"attnlab {' '.join(COMMAND)}: medians of {args.repeats} runs")
    print(f"{'pace':<18} {'thresholds':<18} {'CPU s':>7} {'GC s':>6} {'collections':>12}")
    for name, pace in paces.items():
        rows = results[name]
        cpu, spent, count = (statistics.median(row[key] for row in rows) for key in ("cpu", "gc", "collections"))
        print(f"{name:<18} {str(pace):<18} {cpu:>7.2f} {spent:>6.2f} {count:>12.0f}")


if __name__ == "__main__":
    main()
