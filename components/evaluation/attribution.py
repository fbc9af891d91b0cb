"""Gradient attributions of a model's own outputs to its source tokens, beside its attention.

For each output token the model produced (its greedy output, EOS included), how much each source
token mattered to it, by a gradient method (Captum's layer attributions):

- ``saliency``: the L2 norm of the gradient at the token's embedding (Simonyan et al. 2014);
- ``input_x_gradient``: the embedding times that gradient, summed over the embedding
  (Shrikumar et al. 2016); signed;
- ``integrated_gradients``: the gradient integrated on the straight path from a baseline
  embedding to the token's (Sundararajan et al. 2017), ``steps`` points (Gauss-Legendre), summed
  over the embedding; signed, and complete: a step's attributions sum to its output minus the
  output at the baseline.

The output explained at step t is the log-probability of the token the model chose there,
teacher-forced on the model's own prefix (SOS and its outputs before t), so the explanation is
of the model's decision and not of a gold target. Attributions are taken at the output of the
encoder's token embedding (:func:`token_embedding`), which every encoder built to the contract
has, so a third party's scorer, encoder or decoder gets them without code of its own. Padded
source positions get 0 (their embedding is the baseline's).

Cost: per output step, one forward and backward pass of the model over the step's prefix for
each example (``steps`` of them for integrated gradients), :data:`ROWS_AT_ONCE` examples at once.
On 2 cores' one torch thread, 100 examples of the date task (10 source and 13 target tokens) with
the default model take about 0.3 CPU-s by saliency, 0.3 by input x gradient and 10 by integrated
gradients at 32 steps (``python benchmarks/bench_attribution.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from attnlab.data.vocab import EOS, PAD, SOS
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import UNK_ID, PluginError

#: The gradient methods, in the order of the tables.
METHODS = ("saliency", "input_x_gradient", "integrated_gradients")
#: The baselines integrated gradients can start from: the embedding of PAD (zeros, as the
#: contract's ``padding_idx`` keeps it) or of an unknown character.
BASELINES = {"pad": PAD, "unk": UNK_ID}
#: Points on the path of integrated gradients when none is given.
DEFAULT_STEPS = 32
#: Examples explained at once, one step of theirs at a time (times ``steps`` rows through the
#: model for integrated gradients).
ROWS_AT_ONCE = 256


def token_embedding(model: Seq2Seq) -> nn.Embedding:
    """The encoder's embedding of source tokens: its ``nn.Embedding`` of ``vocab_size`` rows (the
    one with ``padding_idx`` PAD, when a table of positions happens to have as many rows).
    PluginError naming the encoder when it has none or several (attributions are taken there)."""
    tables = [m for m in model.encoder.modules() if isinstance(m, nn.Embedding) and m.num_embeddings == model.encoder.vocab_size]
    found = tables if len(tables) < 2 else [m for m in tables if m.padding_idx == PAD]
    if len(found) != 1:
        padded = f", {len(found)} of them with padding_idx {PAD}" if len(tables) > 1 else ""
        raise PluginError(
            f"encoder {type(model.encoder).__name__} has {len(tables)} nn.Embedding modules of vocab_size "
            f"({model.encoder.vocab_size}) rows{padded}: gradient attributions are taken at its one token embedding"
        )
    return found[0]


def check_method(method: str, baseline: str = "pad", steps: int = DEFAULT_STEPS) -> None:
    """ValueError naming the bad value and what is allowed."""
    if method not in METHODS:
        raise ValueError(f"attribution method {method!r}: choose one of {', '.join(METHODS)}")
    if baseline not in BASELINES:
        raise ValueError(f"attribution baseline {baseline!r}: choose one of {', '.join(BASELINES)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"attribution steps {steps!r}: a whole number of at least 2")


def attribute(
    model: Seq2Seq, src: Tensor, src_mask: Tensor, outputs: Tensor, method: str, baseline: str = "pad", steps: int = DEFAULT_STEPS
) -> Tensor:
    """float [B, T, Ls]: ``method``'s attribution of each output token to each source token.

    src long [B, Ls] and src_mask bool [B, Ls] as the model takes them; outputs long [B, T]: the
    model's tokens (PAD after EOS). Steps after a row's EOS, and padded source positions, are 0.
    """
    return attribute_methods(model, src, src_mask, outputs, (method,), baseline, steps)[method]


def attribute_methods(
    model: Seq2Seq, src: Tensor, src_mask: Tensor, outputs: Tensor, methods: tuple[str, ...] = METHODS,
    baseline: str = "pad", steps: int = DEFAULT_STEPS,
) -> dict[str, Tensor]:  # fmt: skip
    """method -> float [B, T, Ls]: :func:`attribute` of each of ``methods``; saliency and input x
    gradient share one gradient per step."""
    for method in methods:
        check_method(method, baseline, steps)
    # One padded column more, which changes no output (the encoder contract): an encoder's fast
    # path for unpadded batches (input gates looked up in a table folded from the embedding)
    # would not run the embedding module, where the attributions are taken.
    src, src_mask = nn.functional.pad(src, (0, 1), value=PAD), nn.functional.pad(src_mask, (0, 1), value=False)
    batch, length = outputs.shape
    live = _live_steps(outputs)
    results = {method: torch.zeros(batch, length, src.shape[1], device=src.device) for method in methods}
    tgt_in = torch.cat([torch.full((batch, 1), SOS, dtype=torch.long, device=src.device), outputs[:, :-1]], dim=1)
    was_training = model.training
    model.eval()
    try:
        for step in range(length):  # the rows of one step share their prefix's length
            explained = live[:, step].nonzero().squeeze(1)
            for rows in explained.split(ROWS_AT_ONCE) if len(explained) else ():
                found = _attribute_rows(
                    model, src[rows], src_mask[rows], tgt_in[rows, : step + 1], outputs[rows, step], methods, baseline, steps
                )
                for method, scores in found.items():
                    results[method][rows, step] = scores.masked_fill(~src_mask[rows], 0.0).detach().float()
    finally:
        model.train(was_training)
    return {method: result[..., :-1].cpu() for method, result in results.items()}


@contextmanager
def _embedding_used(model: Seq2Seq) -> Iterator[None]:
    """PluginError naming the encoder when its forward never ran its token embedding (Captum's
    hook found no output there)."""
    try:
        yield
    except AssertionError as exc:
        if "did not obtain any outputs" not in str(exc):
            raise
        raise PluginError(
            f"encoder {type(model.encoder).__name__} did not run its token embedding: gradient attributions are taken there"
        ) from None


def _live_steps(outputs: Tensor) -> Tensor:
    """bool [B, T]: the steps up to and including each row's first EOS (all when it has none;
    an untrained model may emit PAD itself, which is explained like any token)."""
    ended_before = torch.cumsum(outputs == EOS, dim=1) - (outputs == EOS).long()
    return ended_before == 0


def _attribute_rows(
    model: Seq2Seq, src: Tensor, src_mask: Tensor, prefix: Tensor, token: Tensor, methods: tuple[str, ...], baseline: str, steps: int
) -> dict[str, Tensor]:
    """method -> float [R, Ls] for R rows: the attribution of ``token`` [R], the output after
    ``prefix`` [R, t+1] (SOS and the outputs before it), to each source position, reduced over the
    embedding."""
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    def log_prob(src: Tensor, src_mask: Tensor, prefix: Tensor) -> Tensor:
        logits: Tensor = model(src, src_mask, prefix).logits  # [R', t+1, V]
        return logits[:, -1].log_softmax(dim=-1)  # [R', V]

    layer = token_embedding(model)
    extra = (src_mask, prefix)
    found: dict[str, Tensor] = {}
    with torch.enable_grad(), _embedding_used(model):
        if "integrated_gradients" in methods:
            integrated = LayerIntegratedGradients(log_prob, layer)
            start = torch.full_like(src, BASELINES[baseline]).masked_fill(~src_mask, PAD)
            paths = integrated.attribute(src, baselines=start, target=token, additional_forward_args=extra, n_steps=steps)
            found["integrated_gradients"] = paths.sum(dim=-1)
        if {"saliency", "input_x_gradient"} & set(methods):
            gradient = LayerGradientXActivation(log_prob, layer, multiply_by_inputs=False).attribute(
                src, target=token, additional_forward_args=extra
            )  # [R, Ls, E]
            if "saliency" in methods:
                found["saliency"] = gradient.norm(dim=-1)
            if "input_x_gradient" in methods:
                with torch.no_grad():
                    found["input_x_gradient"] = (gradient * layer(src)).sum(dim=-1)  # the embedding the gradient was taken at
    return found
