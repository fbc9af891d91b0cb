"""The attention explorer's documents (schema: :mod:`attnlab.viz.explorer_document`) built from
trained models.

- :func:`model_views` (:mod:`attnlab.viz.explorer_views`) — one explorer example per input: the
  greedy output and the weights of every view;
- :func:`run_examples` — a run's test examples to show: every wrong one first, then right ones,
  capped, and a note saying what was sampled;
- :class:`SnapshotRecorder` (:mod:`attnlab.viz.explorer_snapshots`) — the attention of fixed probe
  examples as training goes, and the alignment curve;
- :func:`run_document`, :func:`inputs_document` — the page of one run (the examples its
  explanation measures sampled explained by every gradient attribution method besides attention),
  and of a model's outputs on given sources (``attnlab predict --html``; its first
  :data:`EXPLAINED_EXAMPLES` explained, when asked);
- :func:`sweep_document` (:mod:`attnlab.viz.explorer_sweeps`) — the page of a sweep comparing
  every combination on the same sources, opening on the best model with attention
  (:func:`opening_model`).

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attnlab.data.splits import encode_examples
from attnlab.evaluation.attribution import AttributionOptions
from attnlab.evaluation.metrics import decode_texts
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.metric_catalogue import EXPLORER, shown_in
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example
from attnlab.viz import explorer_views
from attnlab.viz.explorer_document import SCHEMA_VERSION
from attnlab.viz.explorer_snapshots import FIRST_EPOCH_SNAPSHOTS, SnapshotRecorder, first_epoch_steps, snapshot_label
from attnlab.viz.explorer_sweeps import SWEEP_EXAMPLES, opening_model, sweep_document, sweep_examples, sweep_note, with_answers
from attnlab.viz.explorer_views import (
    AVERAGE,
    DECIMALS,
    WEIGHT_BUDGET,
    GivenScores,
    methods_of,
    model_views,
    views_of,
    weight_count,
    within_budget,
)

__all__ = [
    "AVERAGE",
    "BUDGET_BATCH",
    "CURVE_EXAMPLES",
    "DECIMALS",
    "EXPLAINED_EXAMPLES",
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
    "methods_of",
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
#: Inputs of a ``predict --html`` page, and of a sweep's shared sources, explained by the gradient
#: attribution methods (the first ones): integrated gradients costs ~10x a training pass over
#: them. A run's page shows the scores its explanation measures computed, on their sample.
EXPLAINED_EXAMPLES = 20
#: Examples viewed first while filling a page; their size says how many more fit the budget.
BUDGET_BATCH = 50


def run_examples(
    model: Seq2Seq, examples: Sequence[Example], limit: int = RUN_EXAMPLES, correct: Sequence[bool] | None = None,
    explained: GivenScores | None = None,
) -> tuple[list[dict[str, Any]], str]:  # fmt: skip
    """The test examples a run's page shows and the note saying which: every example the model
    gets wrong (greedy decoding) first, then right ones, in test order, ``limit`` in all and no
    more than :data:`WEIGHT_BUDGET` weights. ``correct``: whether greedy decoding answers each
    example right, when known (an evaluation that decoded greedily); else decoded here.
    ``explained``: the gradient methods' scores of the examples the explanation measures sampled
    (:attr:`attnlab.evaluation.explanations.Explanation.scores`): those examples come first among
    the wrong ones and among the right ones, and show them."""
    if correct is None:
        device = next(model.parameters()).device
        data = encode_examples(list(examples), model.src_vocab, model.tgt_vocab).to(device)
        outputs = decode_texts(model, data) if examples else []
        correct = [text == ex.target for ex, text in zip(examples, outputs)]
    if len(correct) != len(examples):
        raise ValueError(f"{len(correct)} verdicts for {len(examples)} examples")
    given = explained or {}
    wrong = [ex for ex, right in zip(examples, correct) if not right]
    right = [ex for ex, right in zip(examples, correct) if right]
    chosen = (sorted(wrong, key=lambda ex: ex.source not in given) + sorted(right, key=lambda ex: ex.source not in given))[:limit]
    # A first small batch, then as many as its examples' size says fit, until the budget is spent.
    shown = model_views(model, chosen[:BUDGET_BATCH], given=given)
    counts = [weight_count(example) for example in shown]
    while within_budget(counts) == len(counts) < len(chosen):
        room = (explorer_views.WEIGHT_BUDGET - sum(counts)) * len(counts) // max(1, sum(counts))
        more = model_views(model, chosen[len(shown) : len(shown) + max(room + 1, BUDGET_BATCH // 5)], given=given)
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
        "methods": methods_of(examples),
        "examples": examples,
        "snapshots": snapshots,
    }


def run_document(
    model: Seq2Seq,
    test_examples: Sequence[Example],
    name: str,
    subtitle: str | None = None,
    metrics: Mapping[str, float] | None = None,
    snapshots: dict[str, Any] | None = None,
    limit: int = RUN_EXAMPLES,
    correct: Sequence[bool] | None = None,
    explained: GivenScores | None = None,
) -> dict[str, Any]:
    """The page of run ``name``: its test examples (:func:`run_examples`, ``correct`` and
    ``explained`` as there) and ``snapshots`` (:meth:`SnapshotRecorder.snapshots`); ``metrics``
    of the evaluation (see :func:`shown_metrics`)."""
    examples, note = run_examples(model, test_examples, limit, correct, explained)
    count = sum(bool(example["attributions"]) for example in examples)
    if count:
        note += f"; the {count:,} examples the explanation measures sampled come first (among the wrong ones and among the right ones), explained"
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab run {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples, metrics, snapshots)],
    }


def inputs_document(
    model: Seq2Seq, sources: Sequence[str], name: str, subtitle: str | None = None, explain: AttributionOptions | None = None
) -> dict[str, Any]:
    """The page of model ``name``'s outputs on ``sources`` (``attnlab predict --html``): no
    target, no gold, no snapshots; ``explain``: the first :data:`EXPLAINED_EXAMPLES` get
    attributions with these options."""
    examples = model_views(model, list(sources), explain=explain, explained=EXPLAINED_EXAMPLES)
    count = len(examples)
    note = f"{count} input{'s' * (count != 1)} given to predict; no known answers"
    return {
        "version": SCHEMA_VERSION,
        "title": f"attnlab predict: {name}",
        "subtitle": subtitle,
        "note": note,
        "models": [model_entry(name, examples)],
    }
