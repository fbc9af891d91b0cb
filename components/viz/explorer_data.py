"""The attention explorer's documents (schema: :mod:`attnlab.viz.explorer_document`) built from
trained models.

- :func:`model_views` (:mod:`attnlab.viz.explorer_views`) — one explorer example per input: the
  greedy output and the weights of every view;
- :func:`run_examples` — a run's test examples to show: every wrong one first, then right ones,
  capped, and a note saying what was sampled;
- :class:`SnapshotRecorder` (:mod:`attnlab.viz.explorer_snapshots`) — the attention of fixed probe
  examples as training goes, and the alignment curve;
- :func:`run_document`, :func:`sweep_document` — the page of one run, and of a sweep comparing
  every combination on the same sources, opening on the best model with attention
  (:func:`opening_model`).

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attnlab.data.splits import encode_examples
from attnlab.evaluation.attribution import DEFAULT_STEPS
from attnlab.evaluation.metrics import decode_texts
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.metric_catalogue import EXPLORER, shown_in
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example
from attnlab.viz.explorer_snapshots import FIRST_EPOCH_SNAPSHOTS, SnapshotRecorder, first_epoch_steps, snapshot_label
from attnlab.viz.explorer_views import (
    AVERAGE,
    DECIMALS,
    explained_note,
    explanations_of,
    gold_positions,
    model_views,
    views_of,
    weight_count,
)

__all__ = [
    "AVERAGE",
    "BUDGET_BATCH",
    "CURVE_EXAMPLES",
    "DECIMALS",
    "FIRST_EPOCH_SNAPSHOTS",
    "PROBE_EXAMPLES",
    "RUN_EXAMPLES",
    "SCHEMA_VERSION",
    "SWEEP_EXAMPLES",
    "WEIGHT_BUDGET",
    "SnapshotRecorder",
    "describe",
    "first_epoch_steps",
    "inputs_document",
    "model_entry",
    "model_views",
    "opening_model",
    "run_document",
    "run_examples",
    "sample_note",
    "shown_metrics",
    "snapshot_label",
    "sweep_document",
    "sweep_examples",
    "sweep_note",
    "views_of",
    "weight_count",
    "with_answers",
    "within_budget",
]

#: Test examples shown on a run's page at most (wrong ones first).
RUN_EXAMPLES = 200
#: Probe examples whose attention is recorded after every epoch.
PROBE_EXAMPLES = 3
#: Validation examples whose exact match and alignment are measured with every snapshot.
CURVE_EXAMPLES = 100
#: Sources every combination of a sweep is shown on.
SWEEP_EXAMPLES = 20
#: Weights a page holds at most (over its examples, views and models; snapshots apart): about
#: 6 bytes each in the page, so the examples of a model with many heads or layers are cut
#: before the page passes 1 MB. The default run's 200 examples hold ~26,000.
WEIGHT_BUDGET = 120_000
#: Examples viewed first while filling a page; their size says how many more fit the budget.
BUDGET_BATCH = 50
SCHEMA_VERSION = 1


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
    model: Seq2Seq, examples: Sequence[Example], limit: int = RUN_EXAMPLES, correct: Sequence[bool] | None = None,
    explain: int = 0, steps: int = DEFAULT_STEPS,
) -> tuple[list[dict[str, Any]], str]:  # fmt: skip
    """The test examples a run's page shows and the note saying which: every example the model
    gets wrong (greedy decoding) first, then right ones, in test order, ``limit`` in all and no
    more than :data:`WEIGHT_BUDGET` weights. ``correct``: whether greedy decoding answers each
    example right, when known (an evaluation that decoded greedily); else decoded here. The first
    ``explain`` (at most :data:`BUDGET_BATCH`) are explained by the gradient attributions too
    (:func:`model_views`)."""
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
    shown = model_views(model, chosen[:BUDGET_BATCH], explain=min(explain, BUDGET_BATCH), steps=steps)
    counts = [weight_count(example) for example in shown]
    while within_budget(counts) == len(counts) < len(chosen):
        room = (_budget() - sum(counts)) * len(counts) // max(1, sum(counts))
        more = model_views(model, chosen[len(shown) : len(shown) + max(room + 1, BUDGET_BATCH // 5)])
        shown.extend(more)
        counts.extend(weight_count(example) for example in more)
    shown = shown[: within_budget(counts)]
    # The evaluation's verdicts win: an output may equal another of a source's targets than this one.
    verdicts = {ex.source: bool(right) for ex, right in zip(examples, correct)}
    for view in shown:
        view["correct"] = verdicts.get(view["source"], view["correct"])
    shown.sort(key=lambda example: bool(example["correct"]))  # stable
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


def describe(config: ExperimentConfig) -> str:
    """A page's subtitle: what model this is, e.g. "date task, gru encoder, rnn decoder,
    additive scorer, seed 0"."""
    return f"{config.task} task, {config.encoder} encoder, {config.decoder} decoder, {config.scorer} scorer, seed {config.seed}"


def shown_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """The metrics shown beside a model's name (the metric catalogue's ``explorer`` place, finite
    ones), by name (a ``test_`` prefix is dropped)."""
    plain = {name.removeprefix("test_"): value for name, value in metrics.items()}
    names = [m.name for m in shown_in(EXPLORER)]
    return {name: float(plain[name]) for name in names if name in plain and math.isfinite(float(plain[name]))}


def model_entry(
    name: str, examples: list[dict[str, Any]], metrics: Mapping[str, float] | None = None, snapshots: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One entry of a document's ``models``."""
    return {
        "name": name,
        "metrics": shown_metrics(metrics or {}),
        "views": views_of(examples),
        "explanations": explanations_of(examples),
        "examples": examples,
        "snapshots": snapshots,
    }


def run_document(
    model: Seq2Seq, test_examples: Sequence[Example], name: str, subtitle: str | None = None,
    metrics: Mapping[str, float] | None = None, snapshots: dict[str, Any] | None = None, limit: int = RUN_EXAMPLES,
    correct: Sequence[bool] | None = None, explain: int = 0, steps: int = DEFAULT_STEPS,
) -> dict[str, Any]:  # fmt: skip
    """The page of run ``name``: its test examples (:func:`run_examples`, ``correct``, ``explain``
    and ``steps`` as there) and ``snapshots`` (:meth:`SnapshotRecorder.snapshots`); ``metrics`` of
    the evaluation (see :func:`shown_metrics`)."""
    examples, note = run_examples(model, test_examples, limit, correct, explain, steps)
    note += explained_note(examples)
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab run {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples, metrics, snapshots)],
    }


def inputs_document(
    model: Seq2Seq, sources: Sequence[str], name: str, subtitle: str | None = None, explain: int = 0, steps: int = DEFAULT_STEPS
) -> dict[str, Any]:
    """The page of model ``name``'s outputs on ``sources`` (``attnlab predict --html``): no
    target, no gold, no snapshots; the first ``explain`` explained by gradient attributions too
    (``steps``: integrated gradients' points)."""
    examples = model_views(model, list(sources), explain=explain, steps=steps)
    count = len(examples)
    note = f"{count} input{'s' * (count != 1)} given to predict; no known answers" + explained_note(examples)
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab predict: {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples)],
    }


def with_answers(view: Mapping[str, Any], example: Example, references: Sequence[str] = ()) -> dict[str, Any]:
    """A :func:`model_views` example of a bare source given ``example``'s target and gold: right
    when the output equals the target or any of ``references`` (every target of that source),
    and then shown with the reference it matched."""
    output = view["output"]
    steps = len(view["output_tokens"])
    correct = output == example.target or output in references
    return {**view, "target": output if correct else example.target, "correct": correct, "gold": gold_positions(example, steps)}


def sweep_document(
    title: str, models: Sequence[Mapping[str, Any]], examples: Sequence[Example], note: str | None = None,
    references: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The page of a sweep: ``models`` are :func:`model_entry` dicts whose examples are
    :func:`model_views` of the sources of ``examples``, in that order (every combination on the
    same inputs). Targets and gold come from ``examples`` (``references``: source -> all its
    targets, for sources with several); the examples most models got wrong come first, the
    same order for every model, as many as :data:`WEIGHT_BUDGET` allows. Raises ValueError when a
    model's sources differ.
    """
    sources = [example.source for example in examples]
    answered = []
    for model in models:
        got = [view["source"] for view in model["examples"]]
        if got != sources:
            raise ValueError(f"model {model['name']!r} was shown other sources than the sweep's {len(sources)} examples")
        refs = references or {}
        answered.append([with_answers(view, ex, refs.get(ex.source, ())) for view, ex in zip(model["examples"], examples)])
    misses = [sum(not views[i]["correct"] for views in answered) for i in range(len(sources))]
    order = sorted(range(len(sources)), key=lambda i: -misses[i])  # stable: test order among equals
    order = order[: within_budget([sum(weight_count(views[i]) for views in answered) for i in order])]
    if len(order) < len(sources):
        note = f"{note + '; ' if note else ''}the first {len(order)} of them shown, to keep the page small"
    entries = [{**model, "examples": [views[i] for i in order]} for model, views in zip(models, answered)]
    return {"version": SCHEMA_VERSION, "title": title, "note": note, "models": entries, "opens_on": opening_model(entries)}


def _finite_or_lowest(value: float) -> float:
    """``value``, or -inf when it is NaN or infinite (a measure that ranks last)."""
    return value if math.isfinite(value) else -math.inf


def opening_model(models: Sequence[Mapping[str, Any]]) -> int:
    """The index of the model a comparison page opens on: the best one with attention weights
    to show (views), by test exact match, then alignment accuracy (a missing or NaN one counts
    as lowest), then the first in ``models``' order; 0 when no model has attention weights."""

    def rank(index: int) -> tuple[float, float, int]:
        metrics = models[index].get("metrics") or {}
        exact, alignment = (float(metrics.get(key, math.nan)) for key in ("exact_match", "alignment_accuracy"))
        return (_finite_or_lowest(exact), _finite_or_lowest(alignment), -index)

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
