"""What a sweep run costs besides its training, against real servers, and what it sends them.

Starts a real MLflow tracking server (SQLite, served artifacts, access log) and a real Prefect
server on 127.0.0.1, then runs the same 6-run sweep (`attnlab sweep --scorer dot,additive
--seeds 0,1,2`, two at a time on the process runner) once per variant, taking turns:

- `--log-models --example-plots`: every run logs its pyfunc model and draws the heatmaps of 4
  test examples besides the probe's (what every sweep run did before);
- default: runs log no model and draw the probe's heatmap only (the flags' defaults).

Per variant it prints, as medians over the rounds:

- per run, MLflow run duration minus training seconds (the work of a run that is not training:
  data, evaluation, plots, logging), over all runs and over the runs on a warm worker (a worker
  process's second and later runs: its first also pays the imports and the store set-up), and
  the sweep's wall time against 1.5 x the sum of its training seconds plus one start-up (command
  start to the first run's start);
- tracking requests per run (the server's access log during the sweep, divided by the runs:
  the parent's own requests included) and artifact bytes per run (what the sweep added to the
  served artifact store, logged models included, less the parent's folder, divided by the runs),
  and the parent's bytes once.

Run: python benchmarks/bench_sweep_cost.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnlab.flows.services.servers import Server, prefect_command, stop_all, wait_healthy

SWEEP = ["sweep", "--scorer", "dot,additive", "--seeds", "0,1,2", "--max-parallel", "2", "--json"]
VARIANTS = {"--log-models --example-plots (before)": ["--log-models", "--example-plots"], "default (after)": []}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_servers(folder: Path) -> tuple[list[Server], str, str]:
    mlflow_port, prefect_port = free_port(), free_port()
    mlflow = Server(
        "MLflow",
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{folder}/mlflow.db",
         "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(mlflow_port),
         "--workers", "1", "--uvicorn-opts", "--access-log --log-level info"],
        f"http://127.0.0.1:{mlflow_port}/health",
        folder / "mlflow.log",
    )  # fmt: skip
    prefect_env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_UI_ENABLED": "0"}
    prefect = Server(
        "Prefect", prefect_command(prefect_port), f"http://127.0.0.1:{prefect_port}/api/health", folder / "prefect.log", prefect_env
    )
    servers = [mlflow.start(), prefect.start()]
    wait_healthy(servers, timeout=600)
    return servers, f"http://127.0.0.1:{mlflow_port}", f"http://127.0.0.1:{prefect_port}/api"


def requests_logged(log: Path) -> int:
    return sum('HTTP/1.1"' in line and "GET /health" not in line for line in log.read_text(errors="replace").splitlines())


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def one_sweep(folder: Path, tracking: str, prefect_api: str, flags: list[str]) -> dict[str, float]:
    from mlflow import MlflowClient

    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking, "PREFECT_API_URL": prefect_api, "PREFECT_HOME": str(folder / "prefect")}
    attnlab = Path(sys.executable).with_name("attnlab")
    before = requests_logged(folder / "mlflow.log")
    bytes_before = folder_bytes(folder / "artifacts")
    started = time.time()
    out = subprocess.run([str(attnlab), *SWEEP, *flags], env=env, capture_output=True, text=True, cwd=folder)
    wall = time.time() - started
    if out.returncode != 0:
        raise SystemExit(f"the sweep failed ({out.returncode}):\n{out.stderr[-3000:]}")
    summary = json.loads(out.stdout)
    time.sleep(1.0)  # the access log is written by the server process
    requests = requests_logged(folder / "mlflow.log") - before
    client = MlflowClient(tracking)
    parent = client.get_run(summary["parent_run_id"])
    children = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    # Logged models live beside the runs (<experiment>/models/<id>), so bytes are counted as what
    # the whole sweep added to the artifact store, less the parent's own folder.
    parent_bytes = folder_bytes(folder / "artifacts" / parent.info.experiment_id / parent.info.run_id)
    added = folder_bytes(folder / "artifacts") - bytes_before - parent_bytes
    train = [run.data.metrics["train_seconds"] for run in children]
    not_training = {
        run.info.run_id: (run.info.end_time - run.info.start_time) / 1000 - run.data.metrics["train_seconds"] for run in children
    }
    # A worker process's first run also pays its imports and store set-up; the later ones ran on
    # a warm worker (the worker is the run's owner process, tag attnlab.pid).
    first_of_worker = {}
    for run in sorted(children, key=lambda r: r.info.start_time):
        first_of_worker.setdefault(run.data.tags.get("attnlab.pid"), run.info.run_id)
    warm = [seconds for run_id, seconds in not_training.items() if run_id not in first_of_worker.values()]
    startup = min(run.info.start_time for run in children) / 1000 - started
    finish = started + wall - max(run.info.end_time for run in children) / 1000
    return {
        "runs": len(children),
        "wall": wall,
        "startup": startup,
        "finish": finish,
        "train_sum": sum(train),
        "not_training_per_run": statistics.median(not_training.values()),
        "not_training_warm": statistics.median(warm) if warm else float("nan"),
        "warm_runs": len(warm),
        "bound": 1.5 * sum(train) + startup,
        "requests_per_run": requests / len(children),
        "child_bytes_per_run": added / len(children),
        "parent_bytes": parent_bytes,
    }


#: The report's rows: label | the measure's key in one_sweep's results | its format.
REPORT = """
runs per sweep                   | runs                 | {:.0f}
sweep wall (s)                   | wall                 | {:.1f}
start-up to first run (s)        | startup              | {:.1f}
last run's end to exit (s)       | finish               | {:.1f}
sum of training (s)              | train_sum            | {:.1f}
1.5 x training + start-up (s)    | bound                | {:.1f}
not training, per run (s)        | not_training_per_run | {:.2f}
  runs on a warm worker          | warm_runs            | {:.0f}
  not training, warm worker (s)  | not_training_warm    | {:.2f}
tracking requests per run        | requests_per_run     | {:.0f}
artifact bytes per run           | child_bytes_per_run  | {:,.0f}
artifact bytes of the parent     | parent_bytes         | {:,.0f}
"""


def report_rows() -> list[tuple[str, str, str]]:
    """(label, key, format) of each row of :data:`REPORT` (a label keeps its leading spaces)."""
    rows = []
    for line in REPORT.strip("\n").splitlines():
        label, key, fmt = line.split("|")
        rows.append((label.rstrip(), key.strip(), fmt.strip()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-") as tmp:
        folder = Path(tmp)
        servers, tracking, prefect_api = start_servers(folder)
        try:
            for round_ in range(args.rounds):
                for name, flags in VARIANTS.items():
                    results[name].append(one_sweep(folder, tracking, prefect_api, flags))
                    print(f"round {round_ + 1}/{args.rounds} {name}: {results[name][-1]['wall']:.1f} s wall", file=sys.stderr)
        finally:
            stop_all(servers)
    names = list(VARIANTS)
    print(f"{results[names[0]][0]['runs']:.0f}-run sweep ({' '.join(SWEEP[1:-1])}) against real servers, median of {args.rounds} rounds")
    width = max(len(name) for name in names) + 2
    print(f"  {'':<32}" + "".join(f"{name:>{width}}" for name in names))
    for label, key, fmt in report_rows():
        print(f"  {label:<32}" + "".join(f"{fmt.format(statistics.median(r[key] for r in results[name])):>{width}}" for name in names))


if __name__ == "__main__":
    main()
