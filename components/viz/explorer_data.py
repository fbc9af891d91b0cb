"""The attention explorer's documents (schema: :mod:`attnlab.viz.explorer`) built from trained models.

- :func:`model_views` — one explorer example per input: the greedy output and the weights of
  every view (``average``; ``head k`` of a multi-head scorer; ``layer k`` of a decoder with
  several attention layers), all from one teacher-forced pass of the model over its own greedy
  output (SOS and the decoded tokens), which gives the weights greedy decoding used;
- :func:`run_examples` — a run's test examples to show: every wrong one first, then right ones,
  capped, and a note saying what was sampled;
- :class:`SnapshotRecorder` — the average weights of fixed probe examples (teacher-forced on their
  gold targets) before training, at :func:`first_epoch_steps` inside the first epoch and after
  every epoch, so the page can show alignment forming even when training stops after one epoch;
  with each, the exact match and alignment of a few validation examples (the alignment curve);
- :func:`run_document`, :func:`sweep_document` — the page of one run, and of a sweep comparing
  every combination on the same sources, opening on the best model with attention
  (:func:`opening_model`).

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

from attnlab.lab.config import ExperimentConfig
from attnlab.data.splits import encode_examples
from attnlab.model.decode import default_max_length, greedy_decode
from attnlab.evaluation.metrics import AttentionTally, decode_texts, exact_match, teacher_forced_attention
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example
from attnlab.training.progress import StepProgress
from attnlab.data.vocab import EOS, PAD, SOS, pad_batch

#: Test examples shown on a run's page at most (wrong ones first).
RUN_EXAMPLES = 200
#: Probe examples whose attention is recorded after every epoch.
PROBE_EXAMPLES = 3
#: Snapshots taken inside the first epoch, about (where alignment forms; see first_epoch_steps).
FIRST_EPOCH_SNAPSHOTS = 8
#: Validation examples whose exact match and alignment are measured with every snapshot.
CURVE_EXAMPLES = 100
#: Sources every combination of a sweep is shown on.
SWEEP_EXAMPLES = 20
#: Decimals kept of each weight in the documents built here (the page keeps 3).
DECIMALS = 4
#: Weights a page holds at most (over its examples, views and models; snapshots apart): about
#: 6 bytes each in the page, so the examples of a model with many heads or layers are cut
#: before the page passes 1 MB. The default run's 200 examples hold ~26,000.
WEIGHT_BUDGET = 120_000
#: Examples viewed first while filling a page; their size says how many more fit the budget.
BUDGET_BATCH = 50
#: Metrics shown beside a model's name, when the evaluation has them.
SHOWN_METRICS = ("exact_match", "char_accuracy", "alignment_accuracy", "alignment_within_one")
AVERAGE = "average"
SCHEMA_VERSION = 1


def _rounded(matrix: Tensor) -> list[list[float]]:
    """[Lt, Ls] -> nested lists rounded to :data:`DECIMALS`."""
    return [[round(value, DECIMALS) for value in row] for row in matrix.tolist()]


def _views(weights: Tensor | None, heads: Tensor | None, layers: Tensor | None) -> dict[str, Tensor]:
    """Every view of a batch: name -> [B, Lt, Ls]. weights [B, Lt, Ls]; heads [B, H, Lt, Ls];
    layers [B, layers, Lt, Ls] (a single layer is the average itself, not a view of its own)."""
    if weights is None:
        return {}
    views = {AVERAGE: weights}
    if heads is not None:
        views.update({f"head {h + 1}": heads[:, h] for h in range(heads.shape[1])})
    if layers is not None and (layers.dim() != 4 or layers.shape[:1] + layers.shape[2:] != weights.shape):
        raise ValueError(
            f"the decoder's layer_weights has shape {list(layers.shape)}; expected [B, layers, Lt, Ls] "
            f"with [B, Lt, Ls] = {list(weights.shape)}, the shape of its weights"
        )
    if layers is not None and layers.shape[1] > 1:
        views.update({f"layer {k + 1}": layers[:, k] for k in range(layers.shape[1])})
    return views


def _gold(example: Example | None, steps: int) -> list[list[int]] | None:
    """The gold source positions of the first ``steps`` target characters, or None."""
    if example is None or example.alignment is None:
        return None
    return [list(positions) for positions in example.alignment[:steps]]


@torch.inference_mode()
def model_views(
    model: Seq2Seq, items: Sequence[Example | str], max_length: int | None = None, batch_size: int = 256
) -> list[dict[str, Any]]:
    """One explorer example per item (an Example, or a bare source string), in order.

    Each has ``source_tokens``, ``output_tokens`` (the greedy output, "<eos>" last when emitted),
    ``target``/``correct``/``gold`` (None for a bare string; gold per target character, cut to
    the output's length) and ``weights``: view name -> [len(output_tokens), len(source_tokens)].
    A model that does not attend has ``weights`` {}. ``max_length`` bounds the decoding steps
    (default: :func:`attnlab.model.decode.default_max_length`).
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out: list[dict[str, Any]] = []
    try:
        for start in range(0, len(items), batch_size):
            out.extend(_batch_views(model, items[start : start + batch_size], max_length, device))
    finally:
        model.train(was_training)
    return out


def _batch_views(model: Seq2Seq, items: Sequence[Example | str], max_length: int | None, device) -> list[dict[str, Any]]:
    sources = [item.source if isinstance(item, Example) else item for item in items]
    src, mask = pad_batch([model.src_vocab.encode(text) for text in sources])
    src, mask = src.to(device), mask.to(device)
    tokens = greedy_decode(model, src, mask, max_length or default_max_length(src.shape[1])).tokens  # [B, T]
    # Teacher-forced on its own output: step t reads the token greedy decoding fed it.
    tgt_in = torch.cat([torch.full_like(tokens[:, :1], SOS), tokens[:, :-1]], dim=1)
    decoded = model(src, mask, tgt_in, need_weights=True)
    views = _views(decoded.weights, decoded.head_weights, decoded.layer_weights)
    views = {name: view.float().cpu() for name, view in views.items()}
    out = []
    for row, (item, text) in enumerate(zip(items, sources)):
        ids = tokens[row].tolist()
        steps = next((t + 1 for t, tok in enumerate(ids) if tok == EOS), len(ids))
        output = model.tgt_vocab.decode(ids)
        example = item if isinstance(item, Example) else None
        out.append(
            {
                "source_tokens": list(text),
                "output_tokens": [model.tgt_vocab.token(tok) for tok in ids[:steps]],
                "target": None if example is None else example.target,
                "correct": None if example is None else output == example.target,
                "gold": _gold(example, steps),
                "weights": {name: _rounded(view[row, :steps, : len(text)]) for name, view in views.items()},
            }
        )
    return out


def views_of(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The view names of a model's explorer examples ("average" first; [] without attention)."""
    return list(examples[0]["weights"]) if examples else []


def weight_count(example: Mapping[str, Any]) -> int:
    """How many weights an explorer example holds (over all its views)."""
    return sum(len(matrix) * len(matrix[0]) for matrix in example["weights"].values() if matrix)


def _budget() -> int:
    return WEIGHT_BUDGET  # looked up when called: tests lower it


def within_budget(counts: Sequence[int], budget: int | None = None) -> int:
    """How many of the leading items, holding ``counts`` weights each, fit in ``budget``
    (default :data:`WEIGHT_BUDGET`; at least one item)."""
    budget = _budget() if budget is None else budget
    total = 0
    for kept, count in enumerate(counts):
        total += count
        if total > budget:
            return max(kept, 1)
    return len(counts)


def run_examples(
    model: Seq2Seq, examples: Sequence[Example], limit: int = RUN_EXAMPLES, correct: Sequence[bool] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """The test examples a run's page shows and the note saying which: every example the model
    gets wrong (greedy decoding) first, then right ones, in test order, ``limit`` in all and no
    more than :data:`WEIGHT_BUDGET` weights. ``correct``: whether greedy decoding answers each
    example right, when known (an evaluation that decoded greedily); else decoded here."""
    if correct is None:
        device = next(model.parameters()).device
        data = encode_examples(list(examples), model.src_vocab, model.tgt_vocab).to(device)
        outputs = decode_texts(model, data) if examples else []
        correct = [text == ex.target for ex, text in zip(examples, outputs)]
    if len(correct) != len(examples):
        raise ValueError(f"{len(correct)} verdicts for {len(examples)} examples")
    wrong = [ex for ex, right in zip(examples, correct) if not right]
    chosen = (wrong + [ex for ex, right in zip(examples, correct) if right])[:limit]
    # A first small batch, then as many as its examples' size says fit, until the budget is spent.
    shown = model_views(model, chosen[:BUDGET_BATCH])
    counts = [weight_count(example) for example in shown]
    while within_budget(counts) == len(counts) < len(chosen):
        room = (_budget() - sum(counts)) * len(counts) // max(1, sum(counts))
        more = model_views(model, chosen[len(shown) : len(shown) + max(room + 1, BUDGET_BATCH // 5)])
        shown.extend(more)
        counts.extend(weight_count(example) for example in more)
    shown = shown[: within_budget(counts)]
    shown.sort(key=lambda example: bool(example["correct"]))  # stable; given verdicts may differ from these
    return shown, sample_note(len(examples), len(wrong), len(shown), len(shown) < len(chosen))


def sample_note(total: int, wrong: int, shown: int, budget: bool = False) -> str:
    """What a run's page shows of ``total`` test examples, ``wrong`` of them wrong; ``budget``:
    fewer were kept than asked for, to keep the page small."""
    cut = " (fewer, to keep the page small)" if budget else ""
    if shown >= total:
        return f"all {total:,} test examples ({wrong:,} wrong), wrong ones first"
    if wrong == 0:
        return f"{shown:,} of {total:,} test examples, all answered right: the first {shown:,} in test order{cut}"
    if wrong >= shown:
        return f"{shown:,} of {total:,} test examples: the first {shown:,} of the {wrong:,} wrong ones, in test order{cut}"
    return f"{shown:,} of {total:,} test examples: every wrong one ({wrong:,}), then right ones in test order{cut}"


def first_epoch_steps(steps: int, count: int = FIRST_EPOCH_SNAPSHOTS) -> list[int]:
    """The steps of the first epoch (of ``steps``) after which a snapshot is taken: every
    ``ceil(steps / count)`` steps, the epoch's last step left to the end-of-epoch snapshot."""
    every = max(1, math.ceil(steps / max(1, count)))
    return list(range(every, steps, every))


def snapshot_label(epoch: int, step: int, end_of_epoch: bool) -> str:
    """How the page names a snapshot taken at optimisation ``step`` of the run, in ``epoch``."""
    if step == 0:
        return "before training"
    if end_of_epoch:
        return f"after epoch {epoch} (step {step})"
    return f"step {step}, in epoch {epoch}"


class SnapshotRecorder:
    """The average attention of a few fixed probe examples as training goes.

    ``watch(model)`` names the model (it fits ``train_model``'s ``on_model``) and, with
    ``from_start``, records it untrained (step 0; not for a run resumed from a checkpoint).
    ``step(progress)``, called after every optimisation step, records at the
    :func:`first_epoch_steps`; ``record(epoch)``, called after each epoch, records the model as
    it is then. Each record runs one teacher-forced pass over the probes' gold targets (SOS, the
    target; the rows are the target characters and EOS) without gradients, in eval mode, and
    leaves the model's mode and the random state as they were; with ``measured`` examples it
    also measures their greedy exact match and alignment, appended to ``curve``. ``seconds`` is
    the time spent. ``snapshots()`` is the document's ``snapshots`` entry.
    """

    def __init__(self, probes: Sequence[Example], measured: Sequence[Example] = (), from_start: bool = False) -> None:
        self.probes = list(probes)
        self.measured = list(measured)
        self.from_start = from_start
        self.model: Seq2Seq | None = None
        self.epochs: list[int] = []
        self.steps: list[int] = []
        self.labels: list[str] = []
        self.weights: list[list[list[list[float]]]] = [[] for _ in self.probes]  # [probe][snapshot] -> [Lt, Ls]
        #: One point per record: step, epoch, end_of_epoch, exact_match, alignment_accuracy,
        #: alignment_within_one.
        self.curve: list[dict[str, float]] = []
        self.attends = True
        self.seconds = 0.0
        self._global_step = 0

    def watch(self, model: Seq2Seq) -> None:
        """Record ``model`` from now on (and now, with ``from_start``)."""
        self.model = model
        if self.from_start:
            self.record(0, end_of_epoch=False)

    def step(self, progress: StepProgress) -> bool:
        """Hear of one optimisation step; record when it is one of :func:`first_epoch_steps`.
        Whether it recorded."""
        self._global_step = progress.global_step
        if progress.epoch != 1 or progress.step not in first_epoch_steps(progress.steps):
            return False
        self.record(progress.epoch, end_of_epoch=False)
        return True

    @torch.inference_mode()
    def record(self, epoch: int, end_of_epoch: bool = True) -> None:
        """The probes' weights of the watched model as they are now, in (or after) ``epoch``."""
        model = self.model
        if model is None:
            raise RuntimeError("SnapshotRecorder.record before watch(model)")
        started = time.perf_counter()
        was_training, rng = model.training, torch.get_rng_state()
        model.eval()
        try:
            if self.measured:
                point = _curve_point(model, self.measured)
                self.curve.append({"step": self._global_step, "epoch": epoch, "end_of_epoch": end_of_epoch, **point})
            if self.probes and self.attends:
                self._snapshot(model, epoch, end_of_epoch)
        finally:
            model.train(was_training)
            torch.set_rng_state(rng)
        self.seconds += time.perf_counter() - started

    def _snapshot(self, model: Seq2Seq, epoch: int, end_of_epoch: bool) -> None:
        device = next(model.parameters()).device
        data = encode_examples(self.probes, model.src_vocab, model.tgt_vocab).to(device)
        weights = model(data.src, data.src_mask, data.tgt[:, :-1], need_weights=True).weights
        if weights is None:
            self.attends = False
            return
        weights = weights.float().cpu()  # [probes, Lt + 1, Ls]
        for row, probe in enumerate(self.probes):
            self.weights[row].append(_rounded(weights[row, : len(probe.target) + 1, : len(probe.source)]))
        self.epochs.append(int(epoch))
        self.steps.append(self._global_step)
        self.labels.append(snapshot_label(epoch, self._global_step, end_of_epoch))

    def snapshots(self) -> dict[str, Any] | None:
        """``{"epochs", "steps", "labels", "examples"}`` for the document, or None (nothing
        recorded, or a model that does not attend)."""
        if not self.epochs:
            return None
        return {
            "epochs": list(self.epochs),
            "steps": list(self.steps),
            "labels": list(self.labels),
            "examples": [
                {
                    "source_tokens": list(probe.source),
                    "output_tokens": [*probe.target, "<eos>"],
                    "gold": _gold(probe, len(probe.target)),
                    "weights": weights,
                }
                for probe, weights in zip(self.probes, self.weights)
            ],
        }


def _curve_point(model: Seq2Seq, examples: Sequence[Example]) -> dict[str, float]:
    """Greedy exact match and teacher-forced alignment (accuracy, within one; NaN without
    attention or gold) of ``model`` on ``examples``."""
    device = next(model.parameters()).device
    data = encode_examples(list(examples), model.src_vocab, model.tgt_vocab).to(device)
    texts = decode_texts(model, data)
    tally = AttentionTally()
    weights, step_mask = teacher_forced_attention(model, data)  # [N, Lt + 1, Ls], [N, Lt + 1]
    tally.add(weights, step_mask, data.src_mask, list(examples))
    alignment = tally.metrics()
    return {
        "exact_match": exact_match(texts, [example.target for example in examples]),
        "alignment_accuracy": alignment["alignment_accuracy"],
        "alignment_within_one": alignment["alignment_within_one"],
    }


def describe(config: ExperimentConfig) -> str:
    """A page's subtitle: what model this is, e.g. "date task, gru encoder, rnn decoder,
    additive scorer, seed 0"."""
    return f"{config.task} task, {config.encoder} encoder, {config.decoder} decoder, {config.scorer} scorer, seed {config.seed}"


def shown_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """The metrics shown beside a model's name (:data:`SHOWN_METRICS`, finite ones; a ``test_``
    prefix is dropped)."""
    plain = {name.removeprefix("test_"): value for name, value in metrics.items()}
    return {name: float(plain[name]) for name in SHOWN_METRICS if name in plain and math.isfinite(float(plain[name]))}


def model_entry(
    name: str, examples: list[dict[str, Any]], metrics: Mapping[str, float] | None = None, snapshots: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One entry of a document's ``models``."""
    return {"name": name, "metrics": shown_metrics(metrics or {}), "views": views_of(examples), "examples": examples, "snapshots": snapshots}


def run_document(
    model: Seq2Seq,
    test_examples: Sequence[Example],
    name: str,
    subtitle: str | None = None,
    metrics: Mapping[str, float] | None = None,
    snapshots: dict[str, Any] | None = None,
    limit: int = RUN_EXAMPLES,
    correct: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """The page of run ``name``: its test examples (:func:`run_examples`, ``correct`` as there)
    and ``snapshots`` (:meth:`SnapshotRecorder.snapshots`); ``metrics`` of the evaluation (see
    :func:`shown_metrics`)."""
    examples, note = run_examples(model, test_examples, limit, correct)
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab run {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples, metrics, snapshots)],
    }


def inputs_document(model: Seq2Seq, sources: Sequence[str], name: str, subtitle: str | None = None) -> dict[str, Any]:
    """The page of model ``name``'s outputs on ``sources`` (``attnlab predict --html``): no
    target, no gold, no snapshots."""
    examples = model_views(model, list(sources))
    count = len(examples)
    note = f"{count} input{'s' * (count != 1)} given to predict; no known answers"
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab predict: {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples)],
    }


def with_answers(view: Mapping[str, Any], example: Example) -> dict[str, Any]:
    """A :func:`model_views` example of a bare source given ``example``'s target and gold."""
    output = "".join(token for token in view["output_tokens"] if token != "<eos>")
    steps = len(view["output_tokens"])
    return {**view, "target": example.target, "correct": output == example.target, "gold": _gold(example, steps)}


def sweep_document(title: str, models: Sequence[Mapping[str, Any]], examples: Sequence[Example], note: str | None = None) -> dict[str, Any]:
    """The page of a sweep: ``models`` are :func:`model_entry` dicts whose examples are
    :func:`model_views` of the sources of ``examples``, in that order (every combination on the
    same inputs). Targets and gold come from ``examples``; the examples most models got wrong
    come first, the same order for every model, as many as :data:`WEIGHT_BUDGET` allows. Raises
    ValueError when a model's sources differ.
    """
    sources = [example.source for example in examples]
    answered = []
    for model in models:
        got = ["".join(view["source_tokens"]) for view in model["examples"]]
        if got != sources:
            raise ValueError(f"model {model['name']!r} was shown other sources than the sweep's {len(sources)} examples")
        answered.append([with_answers(view, example) for view, example in zip(model["examples"], examples)])
    misses = [sum(not views[i]["correct"] for views in answered) for i in range(len(sources))]
    order = sorted(range(len(sources)), key=lambda i: -misses[i])  # stable: test order among equals
    order = order[: within_budget([sum(weight_count(views[i]) for views in answered) for i in order])]
    if len(order) < len(sources):
        note = f"{note + '; ' if note else ''}the first {len(order)} of them shown, to keep the page small"
    entries = [{**model, "examples": [views[i] for i in order]} for model, views in zip(models, answered)]
    return {"version": SCHEMA_VERSION, "title": title, "note": note, "models": entries, "opens_on": opening_model(entries)}


def opening_model(models: Sequence[Mapping[str, Any]]) -> int:
    """The index of the model a comparison page opens on: the best one with attention weights
    to show (views), by test exact match, then alignment accuracy (a missing or NaN one counts
    as lowest), then the first in ``models``' order; 0 when no model has attention weights."""

    def rank(index: int) -> tuple[float, float, int]:
        metrics = models[index].get("metrics") or {}
        found = [float(metrics.get(key, math.nan)) for key in ("exact_match", "alignment_accuracy")]
        return (*(value if math.isfinite(value) else -math.inf for value in found), -index)

    attending = [index for index, model in enumerate(models) if model.get("views")]
    return max(attending, key=rank, default=0)


def sweep_examples(test: Sequence[Example], probe: Sequence[str] | None = None, count: int = SWEEP_EXAMPLES) -> list[Example]:
    """The examples a sweep shows every combination on: the test example of ``probe`` (the
    ``[source, target]`` of :func:`attnlab.data.examples.pick_probe`, drawn under every combination
    as well) first, then the first ``count`` test examples; no source twice."""
    chosen = [ex for ex in test if probe is not None and [ex.source, ex.target] == list(probe)][:1]
    for example in test[:count]:
        if all(example.source != other.source for other in chosen):
            chosen.append(example)
    return chosen


def sweep_note(count: int, data_seed: int, seeds: int) -> str:
    """What a sweep's page shows: ``count`` test examples of the data of seed ``data_seed``,
    under ``seeds`` seeds."""
    note = f"every combination on the same {count} test examples (of the seed-{data_seed} data), the ones most runs got wrong first"
    if seeds > 1:
        note += "; runs of other seeds drew other splits and may have trained on some of them"
    return note
