"""Transformer against recurrent decoding of the same cmudict words, greedy and beam 5, in one run.

Two models of the CMUdict study's setting (benchmarks/cmudict_study.yaml: embedding 64, hidden
128, batch 64, length bucketing 20) are trained briefly, untimed, so that their outputs end where
a trained model's do: the transformer pair (transformer encoder and decoder, multihead attention,
learning rate 0.001 as in the study) and the recurrent model (bigru encoder, rnn decoder, additive
attention). Then ``--words`` words drawn from the 12,000 held-out test words (seed 0) are decoded
the way the evaluation decodes them (:func:`attnlab.evaluation.metrics.decode_texts`, batches of
1,024 words), greedy and with beam 5, by:

- the recurrent model;
- the transformer with its cache (each step runs the new position over the cached keys and
  values of every layer);
- the same transformer without it (``use_cache`` False: each step runs the whole prefix again,
  as before the cache), with the same outputs (checked, and printed). It steps through this
  checkout's decoding loops (finished rows dropped, a source stopped once its best is decided),
  so it is not the time of the checkout before the cache: see the next paragraph for that.

Run by the interpreter of a checkout from before the cache (its ``.venv/bin/python``, with
``--models`` naming the folder a run of this checkout filled), the script times that checkout's
decoding of the same models and words: the transformer rows are then its own (no cache).

Each round times every setup once, taking turns, after one untimed pass of each; the figures are
medians over ``--rounds`` rounds, with every round's time beside them, each over the recurrent
model's median with the same beam.

Run: python benchmarks/bench_beam_decoding.py [--words 2000] [--rounds 3] [--train-words 20000] [--threads N]
     [--models DIR]  (DIR keeps the trained models: a second run with it skips the training)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch

from attnlab.data.splits import encode_examples
from attnlab.evaluation.edit_distance import sequence_error_rate
from attnlab.evaluation.metrics import decode_texts
from attnlab.lab.config import ExperimentConfig
from attnlab.model.bundle import load_bundle, save_bundle
from attnlab.training.experiment import prepare_data, train_model

STUDY = dict(
    task="cmudict", validation_size=200, test_size=12_000, epochs=1, batch_size=64, length_bucketing=20,
    learning_rate=0.002, target_exact_match=None, device="cpu",
)  # fmt: skip
MODELS = {
    "recurrent (bigru, rnn, additive)": dict(encoder="bigru", decoder="rnn", scorer="additive"),
    "transformer pair (multihead)": dict(encoder="transformer", decoder="transformer", scorer="multihead", learning_rate=0.001),
}


def trained(train_words: int, setting: dict, folder: Path | None) -> tuple[object, list]:
    """A model of ``setting`` trained one epoch on ``train_words`` words (or the one saved in
    ``folder`` by an earlier run with the same config), and the test examples."""
    config = ExperimentConfig(**{**STUDY, "train_size": train_words, **setting})
    task, splits = prepare_data(config)
    saved = folder / f"{config.encoder}-{config.decoder}-{config.scorer}-{train_words}" if folder else None
    started = time.perf_counter()
    if saved is not None and (saved / "weights.pt").exists():
        saved_config, _, model = load_bundle(saved)
        assert saved_config == config, f"{saved} holds another config; remove it"
        how = f"loaded from {saved}"
    else:
        model, _ = train_model(config, task, splits)
        if saved is not None:
            save_bundle(saved, config, model)
        how = f"trained in {time.perf_counter() - started:.0f} s"
    params = sum(p.numel() for p in model.parameters())
    print(f"  {config.encoder}/{config.decoder}/{config.scorer}: {params:,} parameters, {how}")
    model.eval()
    return model, splits.test


def setups(models: dict, examples: list, beam: int) -> dict:
    """label -> a function decoding ``examples`` with ``beam`` (1: greedy) as the evaluation does."""
    (r_name, (recurrent, _)), (t_name, (transformer, _)) = models.items()
    caches = hasattr(transformer.decoder, "use_cache")  # False in a checkout from before the cache

    def run(model, use_cache: bool = True):
        data = encode_examples(examples, model.src_vocab, model.tgt_vocab)

        def decode() -> list[str]:
            if caches:
                model.decoder.use_cache = use_cache
            return decode_texts(model, data, beam_size=beam)

        return decode

    runs = {f"recurrent, beam {beam}": run(recurrent)}
    if not caches:
        return {**runs, f"transformer (no cache), beam {beam}": run(transformer)}
    return {**runs, f"transformer, cached, beam {beam}": run(transformer), f"transformer, uncached, beam {beam}": run(transformer, False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2000, help="test words decoded per pass")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-words", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--models", type=Path, default=None, help="keep the trained models in this folder, for later runs")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; the models (training untimed):")
    models = {name: trained(args.train_words, setting, args.models) for name, setting in MODELS.items()}
    by_source: dict[str, list] = {}
    for example in next(iter(models.values()))[1]:
        by_source.setdefault(example.source, []).append(example)
    words = random.Random(0).sample(sorted(by_source), args.words)
    examples = [by_source[word][0] for word in words]
    timed = {**setups(models, examples, 1), **setups(models, examples, 5)}
    outputs = {label: decode() for label, decode in timed.items()}  # the untimed pass
    times: dict[str, list[float]] = {label: [] for label in timed}
    for _ in range(args.rounds):
        for label, decode in timed.items():
            started = time.perf_counter()
            decode()
            times[label].append(time.perf_counter() - started)

    references = [[ex.target for ex in by_source[word]] for word in words]
    print(f"\n{args.words} cmudict test words, batches of 1,024 words; median of {args.rounds} rounds (each round's seconds)")
    for beam in (1, 5):
        base = statistics.median(times[f"recurrent, beam {beam}"])
        for label in (label for label in timed if label.endswith(f"beam {beam}")):
            median = statistics.median(times[label])
            wer = sequence_error_rate(outputs[label], references)
            each = ", ".join(f"{t:.2f}" for t in times[label])
            print(f"  {label:<38} {median:8.2f} s  {median / base:5.2f}x recurrent   WER {wer:.2%}   ({each})")
        cached, uncached = (outputs.get(f"transformer, {kind}, beam {beam}") for kind in ("cached", "uncached"))
        if cached is not None:
            print(f"  transformer outputs cached vs uncached, beam {beam}: {'identical' if cached == uncached else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
