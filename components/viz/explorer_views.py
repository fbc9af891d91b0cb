"""Explorer examples of a model: per input, the greedy output and the attention weights of every
view (``average``; ``head k`` of a multi-head scorer; ``layer k`` of a decoder with several
attention layers), all from one teacher-forced pass of the model over its own greedy output (SOS
and the decoded tokens), which gives the weights greedy decoding used (:func:`model_views`); and,
for the first inputs asked, each gradient attribution of the same outputs
(:mod:`attnlab.evaluation.attribution`) as each output token's share of the absolute attribution
over the source tokens (:func:`attribution_shares`), drawn like attention weights.

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from attnlab.data.vocab import EOS, SOS, pad_batch
from attnlab.evaluation.attribution import DEFAULT_STEPS, METHODS, attribute_methods
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import default_max_length, greedy_decode
from attnlab.plugins import Example

#: Examples of a run's page (its first ones: wrong ones first) and of a predict page explained by
#: the gradient attributions as well, at most: on the default run, 10 add ~1 s.
EXPLAINED_EXAMPLES = 10
#: Decimals kept of each weight in the documents built here (the page keeps 3).
DECIMALS = 4
AVERAGE = "average"


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


def attribution_shares(scores: Tensor) -> Tensor:
    """float [B, T, Ls]: each output token's share of the absolute attribution ``scores`` [B, T, Ls]
    over the source tokens (rows sum to 1; a row without attribution stays 0)."""
    magnitude = scores.abs()
    total = magnitude.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, magnitude / total.clamp_min(torch.finfo(magnitude.dtype).tiny), magnitude)


def gold_positions(example: Example | None, steps: int) -> list[list[int]] | None:
    """The gold source positions of the first ``steps`` target characters, or None."""
    if example is None or example.alignment is None:
        return None
    return [list(positions) for positions in example.alignment[:steps]]


@torch.no_grad()  # not inference mode: the attributions take gradients through the same inputs
def model_views(
    model: Seq2Seq, items: Sequence[Example | str], max_length: int | None = None, batch_size: int = 256,
    explain: int = 0, steps: int = DEFAULT_STEPS,
) -> list[dict[str, Any]]:  # fmt: skip
    """One explorer example per item (an Example, or a bare source string), in order.

    Each has ``source`` and ``output`` (the texts), ``source_tokens``, ``output_tokens`` (the
    greedy output, "<eos>" last when emitted),
    ``target``/``correct``/``gold`` (None for a bare string; gold per target character, cut to
    the output's length) and ``weights``: view name -> [len(output_tokens), len(source_tokens)].
    A model that does not attend has ``weights`` {}. ``max_length`` bounds the decoding steps
    (default: :func:`attnlab.model.decode.default_max_length`). The first ``explain`` items also
    have ``explained``: method -> [len(output_tokens), len(source_tokens)] shares of each gradient
    attribution (:func:`attribution_shares`; ``steps``: integrated gradients' points).
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out: list[dict[str, Any]] = []
    try:
        for start in range(0, len(items), batch_size):
            out.extend(_batch_views(model, items[start : start + batch_size], max_length, device, max(0, explain - start), steps))
    finally:
        model.train(was_training)
    return out


def _batch_views(
    model: Seq2Seq, items: Sequence[Example | str], max_length: int | None, device: torch.device, explain: int, steps: int
) -> list[dict[str, Any]]:
    sources = [item.source if isinstance(item, Example) else item for item in items]
    src, mask = pad_batch([model.src_vocab.encode(text) for text in sources])
    src, mask = src.to(device), mask.to(device)
    tokens = greedy_decode(model, src, mask, max_length or default_max_length(src.shape[1])).tokens  # [B, T]
    # Teacher-forced on its own output: step t reads the token greedy decoding fed it.
    tgt_in = torch.cat([torch.full_like(tokens[:, :1], SOS), tokens[:, :-1]], dim=1)
    decoded = model(src, mask, tgt_in, need_weights=True)
    views = weight_views(decoded.weights, decoded.head_weights, decoded.layer_weights)
    views = {name: view.float().cpu() for name, view in views.items()}
    first = slice(0, min(explain, len(items)))
    found = attribute_methods(model, src[first], mask[first], tokens[first], METHODS, steps=steps) if explain else {}
    explained = {method: attribution_shares(scores) for method, scores in found.items()}
    out = []
    for row, (item, text) in enumerate(zip(items, sources)):
        ids = tokens[row].tolist()
        shown = next((t + 1 for t, tok in enumerate(ids) if tok == EOS), len(ids))
        output = model.tgt_vocab.decode(ids)
        example = item if isinstance(item, Example) else None
        source_tokens = model.src_vocab.split(text)
        out.append(
            {
                "source_tokens": source_tokens,
                "output_tokens": [model.tgt_vocab.token(tok) for tok in ids[:shown]],
                "target": None if example is None else example.target,
                "correct": None if example is None else output == example.target,
                "gold": gold_positions(example, shown),
                "weights": {name: rounded(view[row, :shown, : len(source_tokens)]) for name, view in views.items()},
                "source": text,
                "output": output,
            }
        )
        if row < first.stop:
            out[-1]["explained"] = {m: rounded(share[row, :shown, : len(source_tokens)]) for m, share in explained.items()}
    return out


def explained_on_page(config: ExperimentConfig) -> int:
    """How many of a page's first examples the gradient attributions explain for a model of
    ``config``: its ``explain_examples``, at most :data:`EXPLAINED_EXAMPLES` (0: none)."""
    return min(config.explain_examples, EXPLAINED_EXAMPLES)


def explained_note(examples: Sequence[Mapping[str, Any]]) -> str:
    """What a page's note adds about the examples explained by gradient attributions ("" when none)."""
    explained = sum("explained" in example for example in examples)
    if not explained:
        return ""
    if explained == len(examples):
        return "; each explained by gradient attributions too"
    return f"; the first {explained} explained by gradient attributions too"


def views_of(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The view names of a model's explorer examples ("average" first; [] without attention)."""
    return list(examples[0]["weights"]) if examples else []


def explanations_of(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The gradient methods some of a model's explorer examples are explained by, in the order of
    :data:`attnlab.evaluation.attribution.METHODS` ([] when none is)."""
    found = {method for example in examples for method in example.get("explained", {})}
    return [method for method in METHODS if method in found]


def weight_count(example: Mapping[str, Any]) -> int:
    """How many weights an explorer example holds (over all its views and attributions)."""
    matrices = [*example["weights"].values(), *example.get("explained", {}).values()]
    return sum(len(matrix) * len(matrix[0]) for matrix in matrices if matrix)
