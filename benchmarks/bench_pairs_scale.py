"""A large file of your own through ``attnlab train``: peak memory and the longest silence.

Writes a TSV of ``--rows`` distinct (word, spelled-out phonemes) pairs (kept in ``--folder`` for
the next run), then runs ``attnlab train --task pairs`` on it in a fresh store and prints, beside
the command's exit status and wall time, the peak resident memory of its process and of its
whole tree (with the temporary Prefect server it starts; sampled every 0.1 s) and the longest time the command printed nothing, with the line before it.

    python bench_pairs_scale.py                                  # 1,000,000 rows, sizes 20,000/2,000/20,000
    python bench_pairs_scale.py --rows 5000 --sizes default      # 80/10/10 of the file
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def write_lexicon(path: Path, rows: int, seed: int = 0) -> Path:
    """``rows`` distinct lower-case words of 3-12 letters, each with its letters spelled as
    whitespace-separated tokens (``cab`` -> ``C A B``); written once, reused after."""
    if path.exists():
        return path
    rng, words = random.Random(seed), set()
    while len(words) < rows:
        words.add("".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 12))))
    with open(path, "w") as out:
        out.write("word\tphonemes\n")
        for word in sorted(words):
            out.write(f"{word}\t{' '.join(word.upper())}\n")
    return path


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of ``process`` and its children."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


@dataclass
class Sampled:
    """One command's run under :func:`run_sampled`: its exit status, stdout, resident memory over
    time (``samples``: seconds since start, the process's bytes, its tree's bytes; every 0.1 s)
    and its stderr lines (seconds since start, the line, the process's peak since the line before)."""

    returncode: int
    stdout: str
    seconds: float
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    lines: list[tuple[float, str, int]] = field(default_factory=list)

    @property
    def peak(self) -> int:
        """The process's peak resident bytes."""
        return max((rss for _, rss, _ in self.samples), default=0)

    @property
    def tree_peak(self) -> int:
        """The peak resident bytes of the process with its children (e.g. Prefect's server)."""
        return max((tree for _, _, tree in self.samples), default=0)


def run_sampled(command: list[str], env: dict[str, str], every: float = 0.1) -> Sampled:
    """Run ``command``, sampling the resident memory of its process and of its whole tree every
    ``every`` seconds and timing each line it writes on stderr."""
    begun = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process, since = psutil.Process(child.pid), [0]  # the process's peak since the last line
    run = Sampled(0, "", 0.0, lines=[(0.0, "(start)", 0)])
    out: list[str] = []

    def sample() -> None:
        while child.poll() is None:
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                break
            since[0] = max(since[0], rss)
            run.samples.append((time.perf_counter() - begun, rss, tree_rss(process)))
            time.sleep(every)

    def read_stdout() -> None:
        assert child.stdout is not None
        out.append(child.stdout.read())

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=read_stdout, daemon=True)]
    for thread in threads:
        thread.start()
    assert child.stderr is not None
    for line in child.stderr:
        run.lines.append((time.perf_counter() - begun, line.rstrip(), since[0]))
        since[0] = 0
    child.wait()
    for thread in threads:
        thread.join()
    run.seconds = time.perf_counter() - begun
    run.lines.append((run.seconds, "(end)", since[0]))
    run.returncode, run.stdout = child.returncode, "".join(out)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="20000,2000,20000", help="train,validation,test sources, or 'default' (80/10/10)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--folder", default=tempfile.gettempdir())
    args = parser.parse_args()
    started = time.perf_counter()
    path = write_lexicon(Path(args.folder) / f"lexicon-{args.rows}.tsv", args.rows)
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB, {args.rows:,} rows) ready in {time.perf_counter() - started:.1f} s")
    sizes = [] if args.sizes == "default" else args.sizes.split(",")
    flags = [f"--train-size={sizes[0]}", f"-ovalidation_size={sizes[1]}", f"-otest_size={sizes[2]}"] if sizes else []
    with tempfile.TemporaryDirectory() as store:
        env = {**os.environ, "ATTNLAB_MLFLOW_DIR": store, "ATTNLAB_CACHE_DIR": f"{store}/cache"}
        command = [str(Path(sys.executable).with_name("attnlab")), "train", "--task", "pairs", f"-otask.path={path}",
                   "-otask.source_column=word", "-otask.target_column=phonemes", "-otask.target_tokenization=whitespace",
                   "--epochs", str(args.epochs), *flags]  # fmt: skip
        run = run_sampled(command, env)
    gap, after = max((b[0] - a[0], a[1]) for a, b in zip(run.lines, run.lines[1:]))
    print(f"exit {run.returncode}; {run.seconds:.1f} s; peak resident memory: attnlab train {run.peak / 2**30:.2f} GiB, "
          f"with its Prefect server {run.tree_peak / 2**30:.2f} GiB")  # fmt: skip
    print(f"longest silence {gap:.1f} s, after: {after[:160]}")
    print("each line, with the process's peak memory since the line before:")
    for when, line, rss in run.lines[1:]:
        if not line.startswith("  "):
            print(f"  {when:7.1f} s  {rss / 2**30:5.2f} GiB  {line[:130]}")


if __name__ == "__main__":
    main()
