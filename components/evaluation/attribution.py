"""Gradient attributions of a model's outputs to its source tokens, through Captum.

Each method scores, for every output token a model emits (greedy decoding, the model then
teacher-forced on its own prefix, so step t reads the token it fed itself), how much each source
token mattered to the probability of that output token. The attribution is taken at the source
embeddings: the output of the encoder's token embedding (:func:`source_embedding`), so it works
for any model the plugins build (recurrent or transformer, any scorer, ``none`` included) with no
code of the plugins' own.

- ``saliency``: the gradient of the output token's probability with respect to the source
  token's embedding, its L2 norm (Simonyan et al. 2014; Li et al. 2016 for text);
  Captum's ``LayerGradientXActivation`` with ``multiply_by_inputs=False`` (the gradient alone);
- ``input_x_gradient``: the embedding times that gradient, summed over the embedding and taken
  in absolute value (Shrikumar et al. 2017); ``LayerGradientXActivation``;
- ``integrated_gradients``: the gradients integrated along the straight path from a baseline
  embedding to the source's, times the difference (Sundararajan et al. 2017), summed over the
  embedding, absolute; ``LayerIntegratedGradients`` with ``steps`` points (Gauss-Legendre) and
  the baseline token of every real source position (``pad``: the PAD token, whose embedding is
  zero in the built-in encoders; ``unk``: the unknown token).

The scores are non-negative, one [T, Ls] matrix per example, as attention's weights are
(:mod:`attnlab.evaluation.explanations` measures both the same way). :func:`step_attributions`
gives the signed attributions per embedding dimension; integrated gradients' sum to the output's
probability minus the baseline's (completeness), up to the integral's approximation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor, nn

from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import OwnOutputs
from attnlab.plugins import PluginError
from attnlab.plugins.tokens import PAD_ID, UNK_ID

#: The gradient methods, in the order of every table.
GRADIENT_METHODS = ("saliency", "input_x_gradient", "integrated_gradients")
#: The baseline token of integrated gradients (and of the erasure of a source token).
BASELINES = {"pad": PAD_ID, "unk": UNK_ID}
Baseline = Literal["pad", "unk"]
#: Rows (examples x integration points) run at once by integrated gradients.
INTERNAL_BATCH = 4096


@dataclass(frozen=True)
class AttributionOptions:
    """``steps``: integrated gradients' points on the path; ``baseline``: its baseline token
    (:data:`BASELINES`)."""

    steps: int = 16
    baseline: Baseline = "pad"


def source_embedding(model: Seq2Seq) -> nn.Embedding:
    """The encoder's token embedding: its one ``nn.Embedding`` with a row per source token.

    Raises PluginError naming the encoder when it has none or several.
    """
    rows = len(model.src_vocab)
    found = [m for m in model.encoder.modules() if isinstance(m, nn.Embedding) and m.num_embeddings == rows]
    if len(found) != 1:
        raise PluginError(
            f"encoder {type(model.encoder).__name__} has {len(found)} nn.Embedding modules of {rows} rows (one per source "
            "token); the gradient attributions read the source embeddings at exactly one"
        )
    return found[0]


def baseline_tokens(src: Tensor, src_mask: Tensor, baseline: Baseline) -> Tensor:
    """long [B, Ls]: the baseline token at every real position of src, PAD on padding."""
    return torch.where(src_mask, torch.full_like(src, BASELINES[baseline]), torch.full_like(src, PAD_ID))


def _step_probabilities(model: Seq2Seq, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
    """[B, V]: the probabilities of the next token after tgt_in long [B, t + 1] (SOS and the
    model's own outputs), teacher-forced."""
    probabilities: Tensor = model(src, src_mask, tgt_in).logits[:, -1].softmax(dim=-1)
    return probabilities


def step_attributions(model: Seq2Seq, method: str, outputs: OwnOutputs, step: int, options: AttributionOptions) -> Tensor:
    """Signed attributions [B, Ls, E] of each row's output token at ``step`` (the probability
    of ``outputs.tokens[:, step]``) to the source embeddings (E: the embedding size)."""
    embedding = source_embedding(model)
    args = (outputs.src_mask, outputs.tgt_in[:, : step + 1])
    target = outputs.tokens[:, step]

    def forward(src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        return _step_probabilities(model, src, src_mask, tgt_in)

    try:
        with torch.enable_grad():
            if method == "integrated_gradients":
                integrated = LayerIntegratedGradients(forward, embedding)
                baselines = baseline_tokens(outputs.src, outputs.src_mask, options.baseline)
                attributed = integrated.attribute(
                    outputs.src, baselines, target=target, additional_forward_args=args, n_steps=options.steps,
                    internal_batch_size=INTERNAL_BATCH,
                )  # fmt: skip
            elif method in ("saliency", "input_x_gradient"):
                gradient = LayerGradientXActivation(forward, embedding, multiply_by_inputs=method == "input_x_gradient")
                attributed = gradient.attribute(outputs.src, target=target, additional_forward_args=args)
            else:
                raise ValueError(f"unknown attribution method {method!r}; known: {', '.join(GRADIENT_METHODS)}")
    except AssertionError as exc:  # Captum's hook saw no call of the embedding
        raise PluginError(
            f"encoder {type(model.encoder).__name__} did not call its token embedding on the source ({exc}); "
            "the gradient attributions read the source embeddings there"
        ) from None
    result: Tensor = attributed.detach()
    return result


def reduce_embedding(method: str, attributed: Tensor) -> Tensor:
    """[..., Ls, E] signed attributions -> [..., Ls] non-negative scores: the L2 norm for
    saliency (a gradient), the absolute sum over the embedding for the others."""
    scores: Tensor = attributed.norm(dim=-1) if method == "saliency" else attributed.sum(dim=-1).abs()
    return scores


def gradient_scores(model: Seq2Seq, method: str, outputs: OwnOutputs, options: AttributionOptions | None = None) -> Tensor:
    """Scores [B, T, Ls] of ``method`` for every output token of ``outputs`` (0 on padding and
    after a row's last output token). One attribution pass per step, over the rows still
    decoding there; the model is put in eval mode and left as it was."""
    options = options or AttributionOptions()
    batch, steps = outputs.tokens.shape
    scores = torch.zeros(batch, steps, outputs.src.shape[1], device=outputs.src.device)
    was_training = model.training
    model.eval()
    try:
        for step in range(steps):
            rows = (outputs.lengths > step).nonzero().squeeze(1)
            if rows.numel() == 0:
                break
            part = OwnOutputs(*(tensor[rows] for tensor in outputs))
            attributed = step_attributions(model, method, part, step, options)
            scores[rows, step] = (reduce_embedding(method, attributed) * part.src_mask).float()
    finally:
        model.train(was_training)
    return scores.cpu()
