"""Conformance kit for plugin authors: does my plugin keep its contract?

Call one check per plugin class from your own pytest; each builds the plugin at tiny sizes with
the options you give (as a config's ``scorer_options`` etc. would), runs it once on a small
batch and raises :class:`PluginContractError` (an ``AssertionError`` and a
:class:`attnlab.plugins.PluginError`) naming the plugin, what was expected and what came back::

    from attnlab.plugins.testing import check_scorer
    from my_scorers import CosineAttention

    def test_cosine_keeps_the_scorer_contract():
        check_scorer(CosineAttention)
        check_scorer(CosineAttention, temperature=5.0)   # with options

The checks are the probes ``build_model`` runs on every model (``attnlab.plugins._probe_base``) plus,
here only, that a backward pass reaches every parameter. A few milliseconds each.

- :func:`check_scorer`: ``score`` [B, Lq, Lk]; ``forward`` context [B, Lq, output_dim] and weights
  [B, Lq, Lk] summing to 1 over unmasked keys and exactly 0 on masked ones (None when
  ``attends = False``); head_weights [B, H, Lq, Lk] or None; one query alone the same as among
  others; ``context_only`` equal to ``forward(...).context``. Built with query_dim = key_dim = 8,
  and with key_dim = 6 unless the scorer refuses unequal sizes with a ValueError.
- :func:`check_encoder`: outputs [B, Ls, output_dim] and summary [B, output_dim], finite, the same
  for a source alone as in a padded batch.
- :func:`check_decoder`: over a random memory, with a bilinear scorer (``q W k``, the built-in
  ``general``'s score) and with one that does not attend (as ``none``):
  ``start``/``step``/``forward`` shapes, batch-first state, logits [B, V] per step and [B, Lt, V]
  for ``forward``, the same logits either way and with ``need_weights=False``.
- :func:`check_task`: alphabets, ``max_source_length`` a property, examples deterministic per
  seed, within the alphabets, alignments one entry per target character with indices inside the
  source.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from attnlab.plugins import Attention, Decoder, Encoder, EncoderOutput, PluginError, Task, load_plugin
from attnlab.plugins._probe_base import PluginContractError, Subject, source_mask
from attnlab.plugins._probe_modules import probe_decoder, probe_encoder, probe_scorer
from attnlab.plugins._probe_task import probe_task
from attnlab.plugins.attention import AttentionOutput, dot_scores
from attnlab.plugins.registry import required_options

__all__ = [
    "PluginContractError",
    "PluginError",
    "check_decoder",
    "check_encoder",
    "check_plugin",
    "check_scorer",
    "check_task",
]

#: Sizes the plugins are built with: small, and different from each other so mixed-up
#: dimensions show.
QUERY_DIM, KEY_DIM, OTHER_KEY_DIM = 8, 8, 6
VOCAB, EMBEDDING, HIDDEN, MEMORY = 13, 6, 8, 10


class _NoContext(Attention):
    """A scorer that does not attend: a zero context [B, Lq, Dv] and no weights."""

    attends = False

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> AttentionOutput:
        return AttentionOutput(values.new_zeros(query.shape[0], query.shape[1], values.shape[-1]), None)


class _Bilinear(Attention):
    """A bilinear score ``q W k``, W of shape [Dq, Dk]: query and key sizes may differ."""

    def __init__(self, query_dim: int, key_dim: int, **options: Any) -> None:
        super().__init__(query_dim, key_dim, **options)
        self.W = nn.Linear(key_dim, query_dim, bias=False)

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_scores(query, self.W(keys))


def check_scorer(cls: type[Attention], **options: Any) -> None:
    """Check a scorer class (see the module docstring); ``options`` go to its ``__init__``."""
    _check_scorer(Subject("scorers", cls), options)


def check_encoder(cls: type[Encoder], **options: Any) -> None:
    """Check an encoder class (see the module docstring); ``options`` go to its ``__init__``."""
    _check_encoder(Subject("encoders", cls), options)


def check_decoder(cls: type[Decoder], **options: Any) -> None:
    """Check a decoder class (see the module docstring); ``options`` go to its ``__init__``."""
    _check_decoder(Subject("decoders", cls), options)


def check_task(cls: type[Task], **options: Any) -> None:
    """Check a task class (see the module docstring); ``options`` go to its ``__init__``."""
    _check_task(Subject("tasks", cls), options)


# --------------------------------------------------------------------------- the checks


def _build(subject: Subject, *args: Any, **options: Any) -> Any:
    try:
        return subject.cls(*args, **options)
    except (TypeError, ValueError) as exc:
        raise subject.fail(f"could not be built with options {options or '{}'}: {type(exc).__name__}: {exc}") from exc


def _gradients(subject: Subject, module: torch.nn.Module, loss: torch.Tensor, what: str) -> None:
    """Backpropagate ``loss``; every parameter must receive a non-zero gradient."""
    subject.call(f"backward through {what}", loss.backward)
    for name, param in module.named_parameters():
        if param.requires_grad and (param.grad is None or not bool(param.grad.abs().sum() > 0)):
            raise subject.fail(
                f"gradient of parameter {name!r} after a backward pass through {what} "
                "(an unused layer, or a computation detached from the graph?)",
                "a non-zero gradient",
                "None" if param.grad is None else "all zeros",
            )


def _check_scorer(subject: Subject, options: dict[str, Any]) -> None:
    scorer = _build(subject, QUERY_DIM, KEY_DIM, **options)
    probe_scorer(scorer, subject)
    try:
        unequal = subject.cls(QUERY_DIM, OTHER_KEY_DIM, **options)
    except ValueError:
        unequal = None  # a scorer may refuse query_dim != key_dim, with a message saying so
    if unequal is not None:
        try:
            probe_scorer(unequal, subject)
        except PluginContractError as exc:
            raise subject.fail(
                f"with query_dim={QUERY_DIM}, key_dim={OTHER_KEY_DIM} (a decoder asks for its own sizes; a "
                f"scorer that needs them equal must raise ValueError in __init__ when they are not): {exc.problem}",
                exc.expected,
                exc.got,
            ) from exc
    if scorer.attends:
        gen = torch.Generator().manual_seed(2)
        query = torch.randn(3, 2, QUERY_DIM, generator=gen).requires_grad_(True)
        keys = torch.randn(3, 5, KEY_DIM, generator=gen)
        mask = source_mask((5, 3, 1))
        scorer.eval()
        out = subject.call("forward(query, keys, values, mask)", scorer, query, keys, keys, mask)
        loss = out.context.pow(2).sum() + out.weights.pow(2).sum()
        _gradients(subject, scorer, loss, "forward(query, keys, values, mask)")
        if query.grad is None or not bool(query.grad.abs().sum() > 0):
            raise subject.fail("gradient of the query after a backward pass", "a non-zero gradient", "none")


def _check_encoder(subject: Subject, options: dict[str, Any]) -> None:
    encoder = _build(subject, VOCAB, EMBEDDING, HIDDEN, **options)
    out, src, src_mask = probe_encoder(encoder, subject)
    encoder.eval()
    out = subject.call("forward(src, src_mask)", encoder, src, src_mask)
    loss = out.outputs[src_mask].pow(2).sum() + out.summary.pow(2).sum()
    _gradients(subject, encoder, loss, "forward(src, src_mask)")


def _memory(lengths: tuple[int, ...] = (6, 4, 1)) -> tuple[EncoderOutput, torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    src_mask = source_mask(lengths)
    outputs = torch.randn(len(lengths), max(lengths), MEMORY, generator=gen) * src_mask.unsqueeze(-1)
    return EncoderOutput(outputs, torch.randn(len(lengths), MEMORY, generator=gen)), src_mask


def _check_decoder(subject: Subject, options: dict[str, Any]) -> None:
    memory, src_mask = _memory()
    for scorer in (_NoContext, _Bilinear):
        decoder = _build(subject, VOCAB, EMBEDDING, HIDDEN, MEMORY, scorer, **options)
        probe_decoder(decoder, memory, src_mask, subject)
    decoder.eval()
    tgt_in = torch.randint(4, VOCAB, (src_mask.shape[0], 3), generator=torch.Generator().manual_seed(4))
    out = subject.call("forward(tgt_in, memory, src_mask)", decoder, tgt_in, memory, src_mask)
    _gradients(subject, decoder, out.logits.pow(2).sum(), "forward(tgt_in, memory, src_mask)")


def _check_task(subject: Subject, options: dict[str, Any]) -> None:
    task = _build(subject, **options)
    probe_task(task, subject, examples=50, seed=0)
    probe_task(task, subject, examples=50, seed=1)


#: Group -> (check, number of positional contract arguments of the plugin's __init__).
_CHECKS = {
    "scorers": (_check_scorer, 2),
    "encoders": (_check_encoder, 3),
    "decoders": (_check_decoder, 5),
    "tasks": (_check_task, 0),
}


def check_plugin(group: str, name: str, **options: Any) -> str | None:
    """Load the installed plugin ``name`` of ``group`` and check it with ``options`` (defaults
    when none are given). Raises PluginError when it cannot load or breaks its contract; returns
    None when checked, or a note when it was not (options without defaults need values)."""
    key = group.removeprefix("attnlab.")
    cls = load_plugin(key, name)
    check, fixed = _CHECKS[key]
    missing = [option for option in required_options(cls, fixed) if option not in options]
    if missing:
        return f"not checked: needs option(s) {', '.join(missing)}"
    check(Subject(key, cls, name), options)
    return None
