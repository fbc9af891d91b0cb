"""Is attention an explanation? Attention beside gradient attributions, measured the same way.

A *method* gives a score matrix [T, Ls] per example: how much each source token mattered to each
output token. The methods: ``attention`` (the decoder's weights), the gradient attributions of
:mod:`attnlab.evaluation.attribution` (``saliency``, ``input_x_gradient``,
``integrated_gradients``) and ``random`` (uniform noise: the chance level of every measure).
Every one is measured on the same outputs: for a fixed sample of the test examples
(:func:`attnlab.evaluation.erasure.sample_indices`, seed 0), the model's greedy output,
teacher-forced on its own prefix.

- **Alignment** with the gold alignment (:class:`attnlab.evaluation.alignment.AlignmentTally`:
  within one, shifted by the mode, AER, ...): the argmax of each output step's scores, at the
  steps of the output that still agree with the target (the gold says where target token t
  comes from; after the first wrong token the outputs are no longer the target's).
- **Faithfulness** by erasure at the input (:func:`attnlab.evaluation.erasure.erase_inputs`), at
  every output token but EOS: ``flip_top``, the share whose prediction changes when the
  top-scored source token is erased; ``comprehensiveness``, the probability of the output token
  minus that with the top-k tokens erased; ``sufficiency``, minus that with all but the top-k
  erased (DeYoung et al. 2020, ERASER: high comprehensiveness and low sufficiency are faithful).
- **Agreement with attention**: Kendall's tau-b between attention's and the method's scores of
  each output token over the source tokens, averaged (Jain & Wallace 2019).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import pandas as pd
import torch
from torch import Tensor

from attnlab.data.vocab import EOS, pad_batch
from attnlab.evaluation.alignment import AlignmentTally, Gold
from attnlab.evaluation.attribution import BASELINES, GRADIENT_METHODS, AttributionOptions, gradient_scores, source_embedding
from attnlab.evaluation.erasure import SAMPLE_SEED, ErasureTally, erase_inputs, sample_indices
from attnlab.evaluation.metrics import Evaluation
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import OwnOutputs, own_outputs
from attnlab.plugins import Example, PluginError

#: Every explanation method, in the order of every table; ``random`` is the reference.
METHODS = ("attention", *GRADIENT_METHODS, "random")
#: Test examples sampled by default.
EXAMPLES = 50
#: The faithfulness probes: the top-1 source token erased, the top-k erased, all but the top-k.
PROBES = ("top", "top_k", "keep_k")
#: The measures of each method, the columns of the table after ``method``.
MEASURES = (
    "alignment_within_one", "alignment_shifted_accuracy", "alignment_error_rate", "alignment_offset_mode",
    "alignment_accuracy", "comprehensiveness", "sufficiency", "flip_top", "kendall_tau", "aligned_steps", "probed_steps",
)  # fmt: skip


@dataclass(frozen=True)
class ExplainOptions:
    """``examples``: test examples sampled (seed ``seed``); ``top_k``: source tokens erased (or
    kept) by comprehensiveness and sufficiency; ``attribution``: the gradient methods' options."""

    examples: int = EXAMPLES
    top_k: int = 1
    attribution: AttributionOptions = field(default_factory=AttributionOptions)
    seed: int = SAMPLE_SEED
    batch_size: int = 64


def explain_options(config: ExperimentConfig) -> ExplainOptions:
    """The options of a run's explanation measures, from its config's ``explain_*`` keys."""
    attribution = AttributionOptions(config.explain_steps, config.explain_baseline)
    return ExplainOptions(config.explain_examples, config.explain_top_k, attribution)


def attribution_options(config: ExperimentConfig) -> AttributionOptions | None:
    """The gradient methods' options of a model's explorer pages, None when its ``explain`` is off."""
    return explain_options(config).attribution if config.explain else None


@dataclass
class MethodTally:
    """Running counts of one method's measures, so batches combine exactly."""

    alignment: AlignmentTally = field(default_factory=AlignmentTally)
    erasure: ErasureTally = field(default_factory=lambda: ErasureTally(probes=PROBES))
    tau_sum: float = 0.0
    tau_steps: int = 0

    def row(self) -> dict[str, float]:
        """The method's measures (:data:`MEASURES`); NaN where they do not apply."""
        alignment = self.alignment.metrics()
        return {
            **{name: alignment[name] for name in MEASURES if name.startswith("alignment_")},
            "comprehensiveness": self.erasure.mean_drop("top_k"),
            "sufficiency": self.erasure.mean_drop("keep_k"),
            "flip_top": self.erasure.flip_rate("top"),
            "kendall_tau": self.tau_sum / self.tau_steps if self.tau_steps else math.nan,
            "aligned_steps": float(self.alignment.steps),
            "probed_steps": float(self.erasure.steps["top"]),
        }


@dataclass(frozen=True)
class Explanation:
    """metrics: ``explain_<method>_<measure>`` and ``explain_examples``; table: one row per
    method measured (``method`` and :data:`MEASURES`); note: why methods are missing, or None;
    scores: per sampled source, each gradient method's scores [output tokens, source tokens]
    (nested lists; what the explorer shows of them)."""

    metrics: dict[str, float]
    table: pd.DataFrame
    note: str | None = None
    scores: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)


def with_explanation(evaluation: Evaluation, explanation: Explanation) -> Evaluation:
    """``evaluation`` with the explanation's metrics among its own and its table as
    ``explanations``."""
    return replace(evaluation, metrics={**evaluation.metrics, **explanation.metrics}, explanations=explanation.table)


def gradient_problem(model: Seq2Seq) -> str | None:
    """Why the gradient methods cannot explain ``model`` (its encoder has no single token
    embedding), or None."""
    try:
        source_embedding(model)
    except PluginError as exc:
        return str(exc)
    return None


def method_scores(
    model: Seq2Seq, outputs: OwnOutputs, methods: tuple[str, ...], options: AttributionOptions, generator: torch.Generator | None = None
) -> dict[str, Tensor]:
    """Scores [B, T, Ls] (CPU) of each of ``methods`` on ``outputs``. ``attention``: the weights
    of the model teacher-forced on its own outputs, left out for a model that does not attend;
    ``random``: uniform noise on the real source positions, drawn from ``generator``."""
    scores: dict[str, Tensor] = {}
    for method in methods:
        if method == "attention":
            with torch.inference_mode():
                weights = model(outputs.src, outputs.src_mask, outputs.tgt_in, need_weights=True).weights
            if weights is not None:
                scores[method] = weights.float().cpu()
        elif method == "random":
            noise = torch.rand(outputs.tokens.shape + outputs.src.shape[1:], generator=generator)
            scores[method] = noise * outputs.src_mask.cpu().unsqueeze(1)
        else:
            scores[method] = gradient_scores(model, method, outputs, options)
    return scores


def agreeing_golds(model: Seq2Seq, outputs: OwnOutputs, examples: list[Example]) -> list[Gold | None]:
    """Each example's gold alignment cut to the output tokens that agree with its target (None
    when unknown)."""
    golds: list[Gold | None] = []
    tokens = outputs.tokens.tolist()
    for row, example in enumerate(examples):
        if example.alignment is None:
            golds.append(None)
            continue
        target = model.tgt_vocab.encode(example.target)
        agree = 0
        while agree < min(len(target), len(tokens[row])) and target[agree] == tokens[row][agree]:
            agree += 1
        golds.append(list(example.alignment[:agree]))
    return golds


def probed_steps(outputs: OwnOutputs) -> Tensor:
    """bool [B, T]: the output tokens the faithfulness and agreement measures look at (every one
    a row emitted before its EOS)."""
    steps = torch.arange(outputs.tokens.shape[1], device=outputs.tokens.device)
    return (steps < outputs.lengths.unsqueeze(1)) & (outputs.tokens != EOS)


def kendall_tau_b(x: Tensor, y: Tensor, valid: Tensor) -> Tensor:
    """Kendall's tau-b of each row of x and y [R, L] over its ``valid`` (bool [R, L]) entries:
    (concordant - discordant pairs) / sqrt(pairs untied in x * pairs untied in y); NaN for a row
    where x or y is constant. Vectorised over the rows (scipy's ``kendalltau``, one call a row,
    took 15 s for the 2,200 rows of the default run's sample on a busy machine)."""
    upper = torch.ones(valid.shape[1], valid.shape[1], dtype=torch.bool, device=valid.device).triu(1)  # i < j
    pairs = valid.unsqueeze(2) & valid.unsqueeze(1) & upper
    sx = (x.unsqueeze(2) - x.unsqueeze(1)).sign() * pairs
    sy = (y.unsqueeze(2) - y.unsqueeze(1)).sign() * pairs
    both = (sx * sy).sum(dim=(1, 2))
    untied = (sx.abs().sum(dim=(1, 2)) * sy.abs().sum(dim=(1, 2))).sqrt()
    return both / untied  # 0 / 0: NaN


def add_taus(tallies: dict[str, MethodTally], scores: dict[str, Tensor], probed: Tensor, src_mask: Tensor) -> None:
    """Kendall's tau-b of attention's and each other method's scores at every probed step
    (bool [B, T]) over the real source positions (a step where either is constant has none)."""
    attention = scores.get("attention")
    if attention is None:
        return
    rows, steps = probed.nonzero(as_tuple=True)
    valid = src_mask.cpu()[rows]
    for method, matrix in scores.items():
        if method != "attention":
            taus = kendall_tau_b(attention[rows, steps].double(), matrix[rows, steps].double(), valid)
            finite = taus[taus.isfinite()]
            tallies[method].tau_sum += float(finite.sum())
            tallies[method].tau_steps += int(finite.numel())


def ranked_masks(scores: Tensor, src_mask: Tensor, top_k: int) -> tuple[Tensor, Tensor]:
    """bool [B, Ls] each: the top-scored real source position, and the ``top_k`` top-scored
    ones (all of a shorter source), from scores [B, Ls]."""
    order = scores.masked_fill(~src_mask, -math.inf).argsort(dim=-1, descending=True, stable=True)
    rank = order.argsort(dim=-1)
    return (rank == 0) & src_mask, (rank < top_k) & src_mask


@torch.inference_mode()
def add_faithfulness(
    model: Seq2Seq, outputs: OwnOutputs, scores: dict[str, Tensor], tallies: dict[str, MethodTally], options: ExplainOptions
) -> None:
    """Erase at the input, per output step, what each method ranks highest (:data:`PROBES`; with
    ``top_k`` 1 the top-k probe is the top one), every method and probe in one pass per step;
    into ``tallies``."""
    probs = model(outputs.src, outputs.src_mask, outputs.tgt_in).logits.softmax(dim=-1)  # [B, T, V]
    predicted = probs.argmax(dim=-1)
    before = probs.gather(-1, outputs.tokens.unsqueeze(-1)).squeeze(-1)  # [B, T]
    probed, real = probed_steps(outputs), outputs.src_mask
    run = ("top", "keep_k") if options.top_k == 1 else PROBES
    for step in range(outputs.tokens.shape[1]):
        if not bool(probed[:, step].any()):
            continue
        masks = []
        for matrix in scores.values():
            top, top_k = ranked_masks(matrix[:, step].to(real.device), real, options.top_k)
            masks += [{"top": top, "top_k": top_k, "keep_k": real & ~top_k}[probe] for probe in run]
        after = erase_inputs(model, outputs, step, torch.stack(masks), BASELINES[options.attribution.baseline])  # [methods x probes, B, V]
        token = outputs.tokens[:, step]
        dropped = before[:, step] - after.gather(-1, token.expand(after.shape[0], -1).unsqueeze(-1)).squeeze(-1)
        flipped = after.argmax(dim=-1) != predicted[:, step]
        for index, method in enumerate(scores):
            for probe in PROBES:
                at = index * len(run) + run.index("top" if probe == "top_k" and options.top_k == 1 else probe)
                tallies[method].erasure.add(probe, probed[:, step], flipped[at], dropped[at])


def explain_batch(model: Seq2Seq, examples: list[Example], methods: tuple[str, ...], tallies: dict[str, MethodTally], options: ExplainOptions,
                  generator: torch.Generator) -> dict[str, dict[str, list[list[float]]]]:  # fmt: skip
    """Every measure of ``methods`` on ``examples`` into ``tallies``; the gradient methods'
    scores per source (see :attr:`Explanation.scores`)."""
    device = next(model.parameters()).device
    src, mask = pad_batch([model.src_vocab.encode(example.source) for example in examples])
    outputs = own_outputs(model, src.to(device), mask.to(device))
    scores = method_scores(model, outputs, methods, options.attribution, generator)
    for method, matrix in scores.items():
        for row, gold in enumerate(agreeing_golds(model, outputs, examples)):
            tallies[method].alignment.add(matrix[row].argmax(dim=-1).tolist(), gold)
    add_taus(tallies, scores, probed_steps(outputs).cpu(), mask)
    add_faithfulness(model, outputs, scores, tallies, options)
    for method in scores:
        tallies[method].erasure.examples += len(examples)
    lengths, widths = outputs.lengths.tolist(), mask.sum(dim=1).tolist()
    return {
        example.source: {m: scores[m][row, : lengths[row], : widths[row]].tolist() for m in scores if m in GRADIENT_METHODS}
        for row, example in enumerate(examples)
    }


def explain_model(model: Seq2Seq, examples: list[Example], options: ExplainOptions | None = None) -> Explanation:
    """The measures of every method (see the module docstring) on a sample of ``examples``; the
    model is left in the mode it was in."""
    options = options or ExplainOptions()
    chosen = [examples[i] for i in sample_indices(len(examples), options.examples, options.seed)]
    problem = gradient_problem(model)
    methods = tuple(m for m in METHODS if problem is None or m not in GRADIENT_METHODS)
    tallies = {method: MethodTally() for method in methods}
    generator = torch.Generator().manual_seed(options.seed)
    was_training = model.training
    model.eval()
    shown: dict[str, dict[str, list[list[float]]]] = {}
    try:
        for start in range(0, len(chosen), options.batch_size):
            shown.update(explain_batch(model, chosen[start : start + options.batch_size], methods, tallies, options, generator))
    finally:
        model.train(was_training)
    measured = [method for method in methods if tallies[method].erasure.examples]
    table = pd.DataFrame([{"method": method, **tallies[method].row()} for method in measured], columns=["method", *MEASURES])
    metrics = {"explain_examples": float(len(chosen))}
    for row in table.to_dict("records"):
        metrics.update({f"explain_{row['method']}_{name}": float(row[name]) for name in MEASURES if not name.endswith("_steps")})
    note = None if problem is None else f"gradient methods left out: {problem}"
    return Explanation(metrics, table, note, shown)
