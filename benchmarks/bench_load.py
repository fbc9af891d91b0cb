"""Training speed on a busy machine: quiet and beside two busy loops (a load of about 4 on 2 cores
with the run itself), under attnlab's thread policies and torch's default.

Workloads: ``date``, one whole epoch of the default run; ``cmudict``, the CMUdict study's
recurrent model (bigru/rnn, additive, embedding 128, hidden 256, batches of 64 pooled by length);
``transformer``, the CMUdict recipe's transformer pair (multihead, hidden 256, dropout and label
smoothing 0.1). The two CMUdict ones train ``--cmudict-batches`` batches after one untimed batch.

Policies:

- **torch default**: one thread per core, OpenMP's default wait (idle threads spin about 3 ms
  before they sleep).
- **passive**: idle threads sleep at once (``OMP_WAIT_POLICY=PASSIVE``), one thread per core: a
  run whose machine got busy after it started, under attnlab's earlier policy.
- **attnlab**: attnlab's earlier policy: passive, and the cores the machine's other work leaves
  free, measured just before the run starts (``attnlab.ops.threads.chosen_threads``).
- **short spin**: idle threads spin about 10 us, then sleep (``GOMP_SPINCOUNT=1000``,
  ``attnlab.ops.threads.wait_settings``), one thread per core: a run whose machine got busy after
  it started, under attnlab's policy.
- **attnlab spin**: what ``attnlab train`` does: the short spin and the chosen cores.

Every measurement is a fresh process (OpenMP reads its settings when torch loads). The settings
take turns within each round, so all see the same machine. Prints the median samples/s of each,
and how many times slower each is beside the busy loops than quiet.

    python benchmarks/bench_load.py [--repeats 3] [--cmudict-batches 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

WORKLOADS = ("date", "cmudict", "transformer")
#: Each policy: (how idle threads wait: OpenMP's default, passive or attnlab's short spin; threads
#: chosen by the load).
POLICIES = {
    "torch default": ("default", False),
    "passive": ("passive", False),
    "attnlab": ("passive", True),
    "short spin": ("spin", False),
    "attnlab spin": ("spin", True),
}


def child(workload: str, policy: str, batches: int) -> dict[str, float]:
    """In a fresh process: (samples/s, threads) of ``workload`` trained under ``policy``."""
    wait, chosen = POLICIES[policy]
    os.environ.pop("OMP_WAIT_POLICY", None)
    os.environ.pop("GOMP_SPINCOUNT", None)
    if wait == "passive":
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    elif wait == "spin":
        from attnlab.ops.threads import wait_settings  # imports no torch

        os.environ.update(wait_settings(os.environ))
    import torch

    from attnlab.data.splits import encode_examples
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model
    from attnlab.ops.threads import chosen_threads
    from attnlab.training.experiment import prepare_data
    from attnlab.training.loop import length_bucketed_batches, train_step

    threads = chosen_threads()[0] if chosen else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if workload == "date":
        config = ExperimentConfig()
    elif workload == "transformer":
        config = ExperimentConfig(task="cmudict", train_size=5000, validation_size=200, test_size=200, encoder="transformer",
                                  decoder="transformer", scorer="multihead", embedding_dim=256, hidden_size=256, length_bucketing=20,
                                  dropout=0.1, label_smoothing=0.1)  # fmt: skip
    else:
        config = ExperimentConfig(task="cmudict", train_size=5000, validation_size=200, test_size=200, encoder="bigru",
                                  decoder="rnn", scorer="additive", embedding_dim=128, hidden_size=256, length_bucketing=20)  # fmt: skip
    task, splits = prepare_data(config)
    torch.manual_seed(0)
    model = build_model(config, task)
    data = encode_examples(splits.train, model.src_vocab, model.tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    model.train()
    generator = torch.Generator().manual_seed(config.seed * 100_003 + 1)
    order = length_bucketed_batches(data.source_lengths.cpu(), config.batch_size, generator, config.length_bucketing)
    train_step(model, data.rows(order[0]), optimizer, config)  # untimed: the first batch allocates
    timed = order if workload == "date" else order[1 : 1 + batches]
    started, seen = time.perf_counter(), 0
    for rows in timed:
        batch = data.rows(rows)
        train_step(model, batch, optimizer, config)
        seen += len(batch)
    return {"rate": seen / (time.perf_counter() - started), "threads": threads, "samples": seen}


def measure(workload: str, policy: str, batches: int) -> dict[str, float]:
    """:func:`child` run in a fresh process."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", workload, policy, "--cmudict-batches", str(batches)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` processes that keep a core busy each, ended on the way out."""
    loop = f"import os\nwhile os.getppid() == {os.getpid()}: pass"
    loops = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(count)]
    try:
        time.sleep(1.0)  # the loops are running before a run measures the load
        yield
    finally:
        for process in loops:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cmudict-batches", type=int, default=30)
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "POLICY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.cmudict_batches)))
        return
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    rates: dict[tuple[str, str, int], list[float]] = {}
    threads: dict[tuple[str, str, int], int] = {}
    for round_ in range(args.repeats):
        for loops in (0, 2):
            with busy_loops(loops):
                for workload in WORKLOADS:
                    for policy in POLICIES:
                        result = measure(workload, policy, args.cmudict_batches)
                        rates.setdefault((workload, policy, loops), []).append(result["rate"])
                        threads[(workload, policy, loops)] = int(result["threads"])
                        print(f"round {round_ + 1}: {workload:11} {policy:14} {loops} busy loops: "
                              f"{result['rate']:8.1f} samples/s ({int(result['threads'])} threads)", flush=True)  # fmt: skip
    print(f"\nmedians of {args.repeats}, samples/s; x: times slower beside the loops than the same policy quiet; "
          "x default: than torch's default quiet; threads: quiet / beside the loops")  # fmt: skip
    print(f"{'workload':13}{'policy':15}{'quiet':>10}{'2 busy loops':>14}{'x':>7}{'x default':>11}{'threads':>9}")
    for workload in WORKLOADS:
        fastest = statistics.median(rates[(workload, "torch default", 0)])
        for policy in POLICIES:
            quiet = statistics.median(rates[(workload, policy, 0)])
            busy = statistics.median(rates[(workload, policy, 2)])
            print(f"{workload:13}{policy:15}{quiet:10.1f}{busy:14.1f}{quiet / busy:7.1f}{fastest / busy:11.1f}"
                  f"{threads[(workload, policy, 0)]:>5} / {threads[(workload, policy, 2)]}")  # fmt: skip


if __name__ == "__main__":
    main()
