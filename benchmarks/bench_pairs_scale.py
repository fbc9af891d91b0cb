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
        begun = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        process, peak, lines = psutil.Process(child.pid), [0, 0], [(begun, "(start)", 0)]
        since = [0]  # the process's peak since the last line

        def sample() -> None:
            while child.poll() is None:
                try:
                    rss = process.memory_info().rss
                except psutil.Error:
                    break
                peak[0], since[0] = max(peak[0], rss), max(since[0], rss)
                peak[1] = max(peak[1], tree_rss(process))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for line in child.stderr:
            lines.append((time.perf_counter(), line.rstrip(), since[0]))
            since[0] = 0
        child.wait()
        sampler.join()
        ended = time.perf_counter()
    lines.append((ended, "(end)", since[0]))
    gap, after = max((b[0] - a[0], a[1]) for a, b in zip(lines, lines[1:]))
    print(f"exit {child.returncode}; {ended - begun:.1f} s; peak resident memory: attnlab train {peak[0] / 2**30:.2f} GiB, "
          f"with its Prefect server {peak[1] / 2**30:.2f} GiB")  # fmt: skip
    print(f"longest silence {gap:.1f} s, after: {after[:160]}")
    print("each line, with the process's peak memory since the line before:")
    for when, line, rss in lines[1:]:
        if not line.startswith("  "):
            print(f"  {when - begun:7.1f} s  {rss / 2**30:5.2f} GiB  {line[:130]}")


if __name__ == "__main__":
    main()
