"""Training cost on real data (cmudict, 100,000 training words) beside the date task, in one run.

For each task at the default model (GRU encoder, RNN decoder, scaled-dot attention, embedding
64, hidden 128, batch 64):

1. Data: the seconds to read and split the task's examples and to encode them into tensors (done
   once per run; the lab caches the splits as a file keyed by the data's digest).
2. Throughput: rounds of ``--steps`` optimisation steps per task, the tasks taking turns (after
   one untimed warm-up round), with the trainer's batches (shuffled, trimmed to the longest row
   of each batch; ``--bucketing`` pools them by source length as ``length_bucketing`` does).
   Reported as medians over rounds: samples/s and target tokens/s (phonemes or characters, EOS
   included: what the decoder steps through).
3. Peak resident memory of the process (ru_maxrss), after everything.
4. With ``--wer-target``: the time to a word error rate on cmudict. The study's setting
   (benchmarks/cmudict_study.yaml: bidirectional GRU, additive attention by default, batch 64,
   length bucketing 20, learning rate 0.002 on a cosine schedule over ``--max-epochs``) trains
   from scratch; after every epoch (untimed) greedy decoding of all 12,000 held-out test words is
   scored, each against all its pronunciations, until the WER is at most the target (the same
   measure as the study's ``test_greedy_sequence_error_rate``; the test split is in alphabetical
   order, so its first words are no fair sample).

Run: python benchmarks/bench_g2p.py [--rounds 5] [--steps 100] [--bucketing 1]
     [--wer-target 0.40 --max-epochs 3 --scorer additive]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch
from train_until import train_until

from attnlab.data.splits import EncodedExamples, encode_examples, make_splits
from attnlab.data.vocab import PAD
from attnlab.evaluation.edit_distance import sequence_error_rate
from attnlab.evaluation.metrics import decode_texts, with_references
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.training.experiment import prepare_data
from attnlab.training.loop import length_bucketed_batches, train_step

SIZES = {"date": (3000, 500, 1000), "cmudict": (100_000, 2000, 12_000)}


def prepared(task_name: str, bucketing: int) -> tuple[float, float, object, EncodedExamples, ExperimentConfig]:
    """(seconds to split, seconds to encode, the model, the encoded training split, its config)."""
    train, validation, test = SIZES[task_name]
    config = ExperimentConfig(task=task_name, train_size=train, validation_size=validation, test_size=test, length_bucketing=bucketing)
    started = time.perf_counter()
    task = build_task(config)
    splits = make_splits(task, (train, validation, test), config.seed)
    split_seconds = time.perf_counter() - started
    model = build_model(config, task)
    started = time.perf_counter()
    data = encode_examples(splits.train, model.src_vocab, model.tgt_vocab)
    return split_seconds, time.perf_counter() - started, model, data, config


def one_round(model, data: EncodedExamples, config: ExperimentConfig, optimizer, steps: int, generator) -> tuple[float, float]:
    """samples/s and target tokens/s of ``steps`` optimisation steps."""
    batches = length_bucketed_batches(data.source_lengths, config.batch_size, generator, config.length_bucketing)[:steps]
    rows = tokens = 0
    started = time.perf_counter()
    for index in batches:
        batch = data.rows(index).trimmed()
        train_step(model, batch, optimizer, config)
        rows += len(batch)
        tokens += int((batch.tgt[:, 1:] != PAD).sum())
    seconds = time.perf_counter() - started
    return rows / seconds, tokens / seconds


def time_to_wer(target: float, max_epochs: int, scorer: str) -> dict:
    """Train the study's setting with ``scorer`` until greedy WER on the test words is at most
    ``target``; :func:`train_until`'s clocks, with ``wer``."""
    config = ExperimentConfig(
        task="cmudict", train_size=100_000, validation_size=1000, test_size=12_000, epochs=max_epochs, batch_size=64,
        length_bucketing=20, learning_rate=0.002, lr_schedule="cosine", target_exact_match=None, scorer=scorer, encoder="bigru",
    )  # fmt: skip
    task, splits = prepare_data(config)
    model = build_model(config, task)
    firsts, references = with_references(splits.test)
    data = encode_examples(firsts, model.src_vocab, model.tgt_vocab)
    split = model.tgt_vocab.split

    def score(model) -> float:
        outputs = [split(text) for text in decode_texts(model, data)]
        return 1 - sequence_error_rate(outputs, [[split(ref) for ref in refs] for refs in references])

    result = train_until(model, splits, config, [], 1 - target, score=score)
    return {**result, "wer": 1 - result["score"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--bucketing", type=int, default=1, help="length_bucketing (1: plain shuffled batches)")
    parser.add_argument("--wer-target", type=float, default=None, help="also time training to this greedy WER (e.g. 0.40)")
    parser.add_argument("--max-epochs", type=int, default=3, help="epochs of the WER run (its cosine schedule's length)")
    parser.add_argument("--scorer", default="additive", help="attention scorer of the WER run")
    args = parser.parse_args()
    torch.manual_seed(0)
    setups = {}
    for name in SIZES:
        split_s, encode_s, model, data, config = prepared(name, args.bucketing)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
        model.train()
        mean_target = float((data.tgt[:, 1:] != PAD).sum()) / len(data)
        print(f"{name}: {len(data):,} training examples; split {split_s:.1f} s, encoded {encode_s:.1f} s; "
              f"{mean_target:.1f} target tokens per example (EOS included)", flush=True)  # fmt: skip
        setups[name] = (model, data, config, optimizer, torch.Generator().manual_seed(0), [])
    for round_ in range(args.rounds + 1):  # round 0 warms up, untimed
        for model, data, config, optimizer, generator, results in setups.values():
            measured = one_round(model, data, config, optimizer, args.steps, generator)
            if round_:
                results.append(measured)
    print(f"\nthroughput, median of {args.rounds} rounds of {args.steps} steps (batch 64, length_bucketing {args.bucketing}):")
    for name, (*_, results) in setups.items():
        samples, tokens = statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)
        print(f"  {name:8s} {samples:8,.0f} samples/s  {tokens:9,.0f} target tokens/s  "
              f"(rounds: {', '.join(f'{r[1]:,.0f}' for r in results)} tokens/s)")  # fmt: skip
    if args.wer_target is not None:
        result = time_to_wer(args.wer_target, args.max_epochs, args.scorer)
        verdict = "reached" if result["reached"] else "NOT reached"
        print(f"\ntime to WER <= {args.wer_target:.0%} on the 12,000 cmudict test words (greedy; bigru/{args.scorer}/rnn, "
              f"{torch.get_num_threads()} threads): {verdict} after epoch {result['epoch']} "
              f"(WER {result['wer']:.1%}): {result['train']:.0f} s of training steps, {result['wall']:.0f} s of whole epochs")  # fmt: skip
    print(f"\npeak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
