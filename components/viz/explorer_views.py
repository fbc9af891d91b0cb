"""Explorer examples of a model: per input, the greedy output and the attention weights of every
view (``average``; ``head k`` of a multi-head scorer; ``layer k`` of a decoder with several
attention layers), all from one teacher-forced pass of the model over its own greedy output (SOS
and the decoded tokens), which gives the weights greedy decoding used (:func:`model_views`); and,
for the first inputs asked, the scores of every gradient attribution method on those same outputs
(:mod:`attnlab.evaluation.attribution`), each output token's scores normalised to sum to 1, as
attention's weights do. How many weights a page holds at most: :data:`WEIGHT_BUDGET`.

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from attnlab.data.vocab import pad_batch
from attnlab.evaluation.attribution import GRADIENT_METHODS, AttributionOptions
from attnlab.evaluation.explanations import gradient_problem, method_scores
from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import OwnOutputs, own_outputs
from attnlab.plugins import Example

#: Decimals kept of each weight in the documents built here (the page keeps 3).
DECIMALS = 4
AVERAGE = "average"
#: Weights a page holds at most (over its examples, views, methods and models; snapshots apart):
#: about 6 bytes each in the page, so the examples of a model with many heads or layers are cut
#: before the page passes 1 MB. The default run's 200 examples hold ~26,000 attention weights.
WEIGHT_BUDGET = 120_000


def within_budget(counts: Sequence[int], budget: int | None = None) -> int:
    """How many of the leading items, holding ``counts`` weights each, fit in ``budget``
    (default :data:`WEIGHT_BUDGET`, looked up when called; at least one item)."""
    budget = WEIGHT_BUDGET if budget is None else budget
    total = 0
    for kept, count in enumerate(counts):
        total += count
        if total > budget:
            return max(kept, 1)
    return len(counts)


def rounded(matrix: Tensor) -> list[list[float]]:
    """[Lt, Ls] -> nested lists rounded to :data:`DECIMALS`."""
    return [[round(value, DECIMALS) for value in row] for row in matrix.tolist()]


def weight_views(weights: Tensor | None, heads: Tensor | None, layers: Tensor | None) -> dict[str, Tensor]:
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


def gold_positions(example: Example | None, steps: int) -> list[list[int]] | None:
    """The gold source positions of the first ``steps`` target characters, or None."""
    if example is None or example.alignment is None:
        return None
    return [list(positions) for positions in example.alignment[:steps]]


#: Scores of the gradient methods already computed: source -> method -> [output tokens, source tokens].
GivenScores = Mapping[str, Mapping[str, Sequence[Sequence[float]]]]


def model_views(
    model: Seq2Seq, items: Sequence[Example | str], max_length: int | None = None, batch_size: int = 256,
    explain: AttributionOptions | None = None, explained: int = 0, given: GivenScores | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """One explorer example per item (an Example, or a bare source string), in order.

    Each has ``source`` and ``output`` (the texts), ``source_tokens``, ``output_tokens`` (the
    greedy output, "<eos>" last when emitted),
    ``target``/``correct``/``gold`` (None for a bare string; gold per target character, cut to
    the output's length), ``weights``: view name -> [len(output_tokens), len(source_tokens)]
    and ``attributions``: method name -> a matrix of the same shape, rows summing to 1, for the
    first ``explained`` items when ``explain`` is given, and for the items whose source ``given``
    has scores of the output's shape for (the explanation measures', computed once); else {}.
    A model that does not attend has ``weights`` {}. ``max_length`` bounds the decoding steps
    (default: :func:`attnlab.model.decode.default_max_length`).
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    explain = explain if explain is not None and explained > 0 and gradient_problem(model) is None else None
    out: list[dict[str, Any]] = []
    try:
        for start in range(0, len(items), batch_size):
            rows = max(0, min(explained - start, batch_size)) if explain is not None else 0
            out.extend(_batch_views(model, items[start : start + batch_size], max_length, device, explain, rows, given or {}))
    finally:
        model.train(was_training)
    return out


def _batch_views(
    model: Seq2Seq, items: Sequence[Example | str], max_length: int | None, device: torch.device, explain: AttributionOptions | None,
    explained: int, given: GivenScores,
) -> list[dict[str, Any]]:  # fmt: skip
    sources = [item.source if isinstance(item, Example) else item for item in items]
    src, mask = pad_batch([model.src_vocab.encode(text) for text in sources])
    outputs = own_outputs(model, src.to(device), mask.to(device), max_length)
    with torch.inference_mode():
        decoded = model(outputs.src, outputs.src_mask, outputs.tgt_in, need_weights=True)
    views = weight_views(decoded.weights, decoded.head_weights, decoded.layer_weights)
    views = {name: view.float().cpu() for name, view in views.items()}
    scores = attribution_views(model, outputs, explained, explain) if explain is not None and explained else {}
    out = []
    for row, (item, text) in enumerate(zip(items, sources)):
        ids = outputs.tokens[row].tolist()
        steps = int(outputs.lengths[row])
        output = model.tgt_vocab.decode(ids)
        example = item if isinstance(item, Example) else None
        source_tokens = model.src_vocab.split(text)
        out.append(
            {
                "source_tokens": source_tokens,
                "output_tokens": [model.tgt_vocab.token(tok) for tok in ids[:steps]],
                "target": None if example is None else example.target,
                "correct": None if example is None else output == example.target,
                "gold": gold_positions(example, steps),
                "weights": {name: rounded(view[row, :steps, : len(source_tokens)]) for name, view in views.items()},
                "attributions": {name: rounded(view[row, :steps, : len(source_tokens)]) for name, view in scores.items()}
                if row < explained
                else given_views(given.get(text), steps, len(source_tokens)),
                "source": text,
                "output": output,
            }
        )
    return out


def normalised(scores: Tensor) -> Tensor:
    """[..., Ls] scores divided by their sum over the last axis (all 0 when they are)."""
    return scores / scores.sum(dim=-1, keepdim=True).clamp_min(1e-30)


def attribution_views(model: Seq2Seq, outputs: OwnOutputs, rows: int, options: AttributionOptions) -> dict[str, Tensor]:
    """Method name -> scores [rows, T, Ls] of the first ``rows`` rows of ``outputs``, each output
    token's scores divided by their sum (all 0 when they are)."""
    part = OwnOutputs(*(tensor[:rows] for tensor in outputs))
    return {name: normalised(matrix) for name, matrix in method_scores(model, part, GRADIENT_METHODS, options).items()}


def given_views(scores: Mapping[str, Sequence[Sequence[float]]] | None, rows: int, cols: int) -> dict[str, list[list[float]]]:
    """The explorer's matrices of already computed ``scores`` (method -> [rows, cols]), each row
    divided by its sum; {} when there are none or they are of another shape (another output)."""
    if not scores or any(len(matrix) != rows or any(len(row) != cols for row in matrix) for matrix in scores.values()):
        return {}
    return {name: rounded(normalised(torch.tensor(matrix, dtype=torch.float32))) for name, matrix in scores.items()}


def views_of(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The view names of a model's explorer examples ("average" first; [] without attention)."""
    return list(examples[0]["weights"]) if examples else []


def methods_of(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The attribution methods of a model's explorer examples, in :data:`GRADIENT_METHODS`'
    order ([] when none is explained)."""
    found = {name for example in examples for name in example.get("attributions") or {}}
    return [name for name in GRADIENT_METHODS if name in found]


def weight_count(example: Mapping[str, Any]) -> int:
    """How many weights an explorer example holds (over all its views and methods)."""
    matrices = [*example["weights"].values(), *(example.get("attributions") or {}).values()]
    return sum(len(matrix) * len(matrix[0]) for matrix in matrices if matrix)
