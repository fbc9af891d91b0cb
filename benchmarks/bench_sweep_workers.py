"""What a sweep's worker processes cost to start: forked from one process that imported a run's
modules and did what a first run does once (attnlab's workers, :mod:`attnlab.flows.sweep.worker_warmup`),
forked from one that only imported the modules (attnlab's workers before the warm-up), and
spawned, each importing them itself (Prefect's process pool, which attnlab's workers were first).

Runs the same tiny sweep (`attnlab sweep --task reverse --scorer dot,additive --seeds 0,1`, 2
epochs of 300 examples, two at a time on the process runner; its own embedded store and cache)
once per variant per round, taking turns, and prints per variant the medians over the rounds of
the command's wall time and of the CPU time the whole machine spent meanwhile (read from
/proc/stat, so the workers count wherever they were reaped; run it on an otherwise quiet machine).
The other variants are the same command with ``worker_context`` returning the spawn context, or
with the warm-up left out of the modules the forkserver imports.

Run: python benchmarks/bench_sweep_workers.py [--rounds 3] [--max-parallel 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEP = ["sweep", "--task", "reverse", "--scorer", "dot,additive", "--seeds", "0,1", "--epochs", "2", "--train-size", "300",
         "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=40", "-o", "test_size=40", "--json"]  # fmt: skip
#: The command, with the workers spawned instead of forked.
SPAWNED = (
    "import multiprocessing, sys\n"
    "from attnlab.flows.sweep import worker_pool\n"
    "worker_pool.worker_context = lambda: multiprocessing.get_context('spawn')\n"
    "from attnlab.flows.cli.app import run\n"
    "sys.argv = ['attnlab', *sys.argv[1:]]\n"
    "run()\n"
)
#: The command, with the workers forked from a server that only imported the modules.
NO_WARMUP = (
    "import sys\n"
    "from attnlab.flows.sweep import worker_pool\n"
    "worker_pool.WORKER_MODULES.remove('attnlab.flows.sweep.worker_warmup')\n"
    "from attnlab.flows.cli.app import run\n"
    "sys.argv = ['attnlab', *sys.argv[1:]]\n"
    "run()\n"
)
#: How each variant is started.
PROGRAMS = {
    "spawned": [sys.executable, "-c", SPAWNED],
    "forked without warm-up": [sys.executable, "-c", NO_WARMUP],
    "forked": [str(Path(sys.executable).with_name("attnlab"))],
}


def machine_cpu_seconds() -> float:
    """CPU seconds spent by every core since boot, idle and waiting excluded."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def one_sweep(variant: str, folder: Path, max_parallel: int) -> tuple[float, float]:
    """(wall seconds, machine CPU seconds) of one sweep of ``variant`` in a fresh ``folder``."""
    folder.mkdir(parents=True)
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(folder / "mlflow"), "ATTNLAB_CACHE_DIR": str(folder / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [*PROGRAMS[variant], *SWEEP, "--max-parallel", str(max_parallel)]
    cpu, wall = machine_cpu_seconds(), time.monotonic()
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, check=False)
    wall, cpu = time.monotonic() - wall, machine_cpu_seconds() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{variant} sweep failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-parallel", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {variant: [] for variant in PROGRAMS}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-workers-") as scratch:
        for round_ in range(args.rounds):
            for variant in results:
                wall, cpu = one_sweep(variant, Path(scratch) / f"{variant.replace(' ', '-')}-{round_}", args.max_parallel)
                results[variant].append((wall, cpu))
                print(f"round {round_ + 1}/{args.rounds} {variant}: {wall:.1f} s wall, {cpu:.1f} CPU-s", flush=True)
    print(f"\n4-run sweep, {args.max_parallel} at a time, medians of {args.rounds} rounds (load {os.getloadavg()[0]:.2f} at the end):")
    for variant, rows in results.items():
        print(
            f"  {variant:22s} workers: {statistics.median(r[0] for r in rows):6.1f} s wall  {statistics.median(r[1] for r in rows):6.1f} CPU-s"
        )


if __name__ == "__main__":
    main()
