"""Conformance probes: run a plugin once on a tiny batch and check what it hands back.

The one place where the plugin contracts are checked at run time. ``build_model`` probes the
plugins of every model it builds, ``attnlab plugins --check`` probes every installed plugin, and
``attnlab.plugins.testing`` gives plugin authors the same checks for their own tests. A violation raises
:class:`PluginContractError`, a :class:`PluginError` (the CLI prints it as one line) that is also
an ``AssertionError`` (pytest shows it as a failed check), naming the plugin and its distribution,
what was expected and what came back::

    scorer 'transposed' (my_scorers:Transposed, from my-scorers 1.0): score(query [3, 2, 8],
    keys [3, 5, 8]): expected a tensor of shape [B, Lq, Lk] = [3, 2, 5], got [3, 5, 2] (transposed?)

Probes run the plugin in eval mode on a few examples (milliseconds) and touch neither its
weights nor the global random state, without gradients.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
from torch import Tensor, nn

from attnlab.plugins.attention import Attention, AttentionOutput
from attnlab.plugins.decoder import Decoder, DecoderOutput
from attnlab.plugins.encoder import Encoder, EncoderOutput
from attnlab.plugins.registry import PluginError, describe_plugins
from attnlab.plugins.task import Example, Task
from attnlab.plugins.tokens import FIRST_CHAR_ID, PAD_ID, SOS_ID

#: Probe sizes: queries, keys (source lengths per row, one padded to a single position) and steps.
QUERIES, LENGTHS, TARGET_STEPS = 2, (5, 3, 1), 4
#: Float tolerance for sums to 1 and for two paths that must agree.
TOLERANCE = 1e-4


class PluginContractError(PluginError, AssertionError):
    """A plugin handed back something its contract does not allow.

    Attributes: ``plugin`` (who: group, name, target and distribution), ``problem`` (what was
    checked), ``expected`` and ``got`` (either may be None).
    """

    def __init__(self, plugin: str, problem: str, expected: str | None = None, got: str | None = None):
        self.plugin, self.problem, self.expected, self.got = plugin, problem, expected, got
        message = f"{plugin}: {problem}"
        if expected is not None or got is not None:
            message += f": expected {expected}, got {got}"
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True)
class Subject:
    """The plugin under probe: its group ("scorers", ...), class and, when known, its name."""

    group: str
    cls: type
    name: str | None = None

    @property
    def target(self) -> str:
        return f"{self.cls.__module__}:{self.cls.__qualname__}"

    def label(self) -> str:
        """``scorer 'cosine' (pkg:Cosine, from attnlab-cosine 0.1.0)``: name, target and
        distribution from the entry points (looked up only when a probe fails)."""
        singular = self.group.removesuffix("s")
        for info in describe_plugins(self.group):
            if info.name == self.name if self.name is not None else info.target == self.target:
                return f"{singular} {info.name!r} ({info.target}, from {info.distribution})"
        if self.name is not None:
            return f"{singular} {self.name!r} ({self.target})"
        return f"{singular} {self.cls.__qualname__} ({self.target}, not installed as a plugin)"

    def fail(self, problem: str, expected: Any = None, got: Any = None) -> PluginContractError:
        return PluginContractError(
            self.label(), problem, None if expected is None else str(expected), None if got is None else str(got)
        )

    def call(self, what: str, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)``; whatever the plugin raises becomes a PluginContractError."""
        try:
            return fn(*args, **kwargs)
        except PluginContractError:
            raise
        except Exception as exc:  # the plugin's own failure, reported as the plugin's
            raise self.fail(f"{what} raised {type(exc).__name__}: {exc}") from exc


def shape(value: object) -> str:
    """``[3, 2, 5]`` for a tensor, else the type's name (for messages)."""
    if isinstance(value, Tensor):
        return f"[{', '.join(map(str, value.shape))}]"
    return "None" if value is None else type(value).__name__


def _tensor(subject: Subject, what: str, value: object, expected: tuple[int, ...], names: str) -> Tensor:
    """``value`` must be a tensor of shape ``expected`` with finite values; ``names`` spells the
    shape symbolically, e.g. ``[B, Lq, Lk]``."""
    want = f"a tensor of shape {names} = [{', '.join(map(str, expected))}]"
    if not isinstance(value, Tensor):
        raise subject.fail(what, want, shape(value))
    if tuple(value.shape) != expected:
        hint = " (transposed?)" if sorted(value.shape) == sorted(expected) else ""
        raise subject.fail(what, want, f"{shape(value)}{hint}")
    if value.is_floating_point() and not torch.isfinite(value).all():
        bad = int((~torch.isfinite(value)).sum())
        raise subject.fail(what, "finite values", f"{bad} NaN or infinite value(s)")
    return value


def _positive_int(subject: Subject, what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise subject.fail(what, "a positive int", repr(value))
    return value


def _check_distribution(
    subject: Subject, what: str, weights: Tensor, mask: Tensor, expected: tuple[int, ...], names: str
) -> None:
    """weights [B, ..., Lk]: the given shape, non-negative, exactly 0 where ``mask`` [B, Lk] is
    False, rows summing to 1."""
    _tensor(subject, what, weights, expected, names)
    keep = mask.view(mask.shape[0], *([1] * (weights.dim() - 2)), mask.shape[-1]).expand_as(weights)
    masked = weights.masked_select(~keep)
    if masked.numel() and bool((masked != 0).any()):
        raise subject.fail(
            f"{what} on masked (padding) keys", "exactly 0 (use masked_softmax(scores, mask))",
            f"values up to {float(masked.abs().max()):.3g}",
        )
    if bool((weights < 0).any()):
        raise subject.fail(what, "non-negative weights", f"a weight of {float(weights.min()):.3g}")
    sums = weights.sum(-1)
    worst = float((sums - 1).abs().max())
    if worst > TOLERANCE:
        raise subject.fail(f"{what}: rows summed over the unmasked keys", "1", f"sums from {float(sums.min()):.4g} to {float(sums.max()):.4g}")


def _close(subject: Subject, what: str, a: Tensor, b: Tensor) -> None:
    if a.shape != b.shape:
        raise subject.fail(what, f"shape {shape(b)}", shape(a))
    if not a.numel():
        return
    diff, scale = float((a - b).abs().max()), 1 + float(b.abs().max())
    if diff > TOLERANCE * scale:
        raise subject.fail(what, f"the same values (within {TOLERANCE:g})", f"a difference of {diff:.3g}")


def _like(module: nn.Module) -> dict[str, Any]:
    """dtype and device of a module's first floating parameter (float32 on the CPU without one)."""
    for param in module.parameters():
        if param.is_floating_point():
            return {"dtype": param.dtype, "device": param.device}
    return {"dtype": torch.float32, "device": torch.device("cpu")}


def source_mask(lengths: Sequence[int], device: torch.device | str = "cpu") -> Tensor:
    """bool [B, max(lengths)], True on the first ``lengths[b]`` positions of row b."""
    width = max(lengths)
    return torch.arange(width, device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]


@contextmanager
def evaluating(*modules: nn.Module) -> Iterator[None]:
    """Every submodule of ``modules`` in eval mode and no gradients; the modes restored
    afterwards, and the global random state too (a probe must not change what a seeded run does
    next)."""
    flags = [(m, m.training) for module in modules for m in module.modules()]
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            for module in modules:
                module.eval()
            yield
    finally:
        for module, flag in flags:
            module.training = flag


def _overrides(obj: object, base: type, name: str) -> bool:
    return getattr(type(obj), name) is not getattr(base, name)


# --------------------------------------------------------------------------- scorers


def probe_scorer(scorer: Attention, subject: Subject | None = None) -> AttentionOutput:
    """Check a scorer on queries [3, 2, query_dim] and keys = values [3, 5, key_dim], with
    5, 3 and 1 unmasked keys per row. Returns its AttentionOutput."""
    subject = subject or Subject("scorers", type(scorer))
    dq = _positive_int(subject, "attribute query_dim", getattr(scorer, "query_dim", None))
    dk = _positive_int(subject, "attribute key_dim", getattr(scorer, "key_dim", None))
    dv = _positive_int(subject, "attribute output_dim", getattr(scorer, "output_dim", None))
    gen = torch.Generator().manual_seed(0)
    like = _like(scorer)
    b, lq, lk = len(LENGTHS), QUERIES, max(LENGTHS)
    query = torch.randn(b, lq, dq, generator=gen).to(**like)
    keys = torch.randn(b, lk, dk, generator=gen).to(**like)
    mask = source_mask(LENGTHS, like["device"])
    args = f"(query {shape(query)}, keys {shape(keys)}"
    with evaluating(scorer):
        if _overrides(scorer, Attention, "score"):
            scores = subject.call(f"score{args})", scorer.score, query, keys)
            _tensor(subject, f"score{args})", scores, (b, lq, lk), "[B, Lq, Lk]")
        call = f"forward{args}, values {shape(keys)}, mask {shape(mask)})"
        out = subject.call(call, scorer, query, keys, keys, mask)
        _attention_output(subject, call, scorer, out, mask, lq)
        one = subject.call(f"forward with one query {shape(query[:, :1])}", scorer, query[:, :1], keys, keys, mask)
        _attention_output(subject, "forward with one query (a decoder step)", scorer, one, mask, 1)
        _close(subject, "context of a single query vs. the same query among others", one.context, out.context[:, :1])
        if _overrides(scorer, Attention, "context_only"):
            context = subject.call(f"context_only{args}, values, mask)", scorer.context_only, query, keys, keys, mask)
            _tensor(subject, "context_only(...)", context, (b, lq, dv), "[B, Lq, output_dim]")
            _close(subject, "context_only(...) vs. forward(...).context", context, out.context)
    return out


def _attention_output(subject: Subject, call: str, scorer: Attention, out: object, mask: Tensor, lq: int) -> None:
    b, lk = mask.shape
    if not isinstance(out, AttentionOutput):
        raise subject.fail(f"{call} result", "AttentionOutput(context, weights, head_weights)", type(out).__name__)
    _tensor(subject, f"{call}: context", out.context, (b, lq, scorer.output_dim), "[B, Lq, output_dim]")
    if not getattr(scorer, "attends", True):
        if out.weights is not None:
            raise subject.fail(f"{call}: weights of a scorer with attends = False", "None", shape(out.weights))
        return
    if out.weights is None:
        raise subject.fail(
            f"{call}: weights (set the class attribute attends = False for a scorer without weights)",
            "a tensor [B, Lq, Lk]", "None",
        )
    _check_distribution(subject, f"{call}: weights", out.weights, mask, (b, lq, lk), "[B, Lq, Lk]")
    heads = out.head_weights
    if heads is not None:
        if not isinstance(heads, Tensor) or heads.dim() != 4:
            raise subject.fail(f"{call}: head_weights", "None or a tensor [B, H, Lq, Lk]", shape(heads))
        _check_distribution(subject, f"{call}: head_weights", heads, mask, (b, heads.shape[1], lq, lk), "[B, H, Lq, Lk]")


# --------------------------------------------------------------------------- encoders


def probe_encoder(encoder: Encoder, subject: Subject | None = None) -> tuple[EncoderOutput, Tensor, Tensor]:
    """Check an encoder on three sources of lengths 6, 4 and 1 (PAD_ID after them): outputs
    [B, Ls, output_dim] and summary [B, output_dim], finite everywhere, and a source's outputs the
    same alone as in a padded batch. Returns (output, src, src_mask)."""
    subject = subject or Subject("encoders", type(encoder))
    vocab = _positive_int(subject, "attribute vocab_size", getattr(encoder, "vocab_size", None))
    dim = _positive_int(subject, "attribute output_dim", getattr(encoder, "output_dim", None))
    device = _like(encoder)["device"]
    width = min(6, getattr(encoder, "max_length", None) or 6)
    lengths = (width, max(1, width - 2), 1)
    gen = torch.Generator().manual_seed(0)
    low = FIRST_CHAR_ID if vocab > FIRST_CHAR_ID else 1
    src_mask = source_mask(lengths, device)
    src = torch.randint(low, max(vocab, low + 1), (len(lengths), width), generator=gen).to(device)
    src = src.masked_fill(~src_mask, PAD_ID)
    call = f"forward(src {shape(src)}, src_mask {shape(src_mask)})"
    with evaluating(encoder):
        out = subject.call(call, encoder, src, src_mask)
        if not isinstance(out, EncoderOutput):
            raise subject.fail(f"{call} result", "EncoderOutput(outputs, summary)", type(out).__name__)
        _tensor(subject, f"{call}: outputs", out.outputs, (len(lengths), width, dim), "[B, Ls, output_dim]")
        _tensor(subject, f"{call}: summary", out.summary, (len(lengths), dim), "[B, output_dim]")
        row, length = 1, lengths[1]
        alone = subject.call(
            f"forward of one source without padding, src [1, {length}]", encoder, src[row : row + 1, :length], src_mask[row : row + 1, :length]
        )
        if not isinstance(alone, EncoderOutput):
            raise subject.fail("forward(...) result", "EncoderOutput(outputs, summary)", type(alone).__name__)
        _close(subject, "outputs of a source alone vs. in a padded batch (padding must not change them)", alone.outputs[0], out.outputs[row, :length])
        _close(subject, "summary of a source alone vs. in a padded batch", alone.summary[0], out.summary[row])
    return out, src, src_mask


# --------------------------------------------------------------------------- decoders


def probe_decoder(
    decoder: Decoder, memory: EncoderOutput, src_mask: Tensor, subject: Subject | None = None
) -> DecoderOutput:
    """Check a decoder over ``memory`` (outputs [B, Ls, memory_dim], summary [B, memory_dim]):
    ``start`` gives batch-first state tensors, ``step`` logits [B, V] and weights [B, 1, Ls] or
    None, ``forward`` logits [B, Lt, V] and weights [B, Lt, Ls] or None, the same logits as the
    steps and with or without weights."""
    subject = subject or Subject("decoders", type(decoder))
    vocab = _positive_int(subject, "attribute vocab_size", getattr(decoder, "vocab_size", None))
    b, ls = src_mask.shape
    steps = min(TARGET_STEPS, getattr(decoder, "max_length", None) or TARGET_STEPS)
    gen = torch.Generator().manual_seed(1)
    low = FIRST_CHAR_ID if vocab > FIRST_CHAR_ID else 1
    tgt_in = torch.randint(low, max(vocab, low + 1), (b, steps), generator=gen).to(src_mask.device)
    tgt_in[:, 0] = SOS_ID
    with evaluating(decoder):
        state = subject.call("start(memory, src_mask)", decoder.start, memory, src_mask)
        _state(subject, "start(memory, src_mask)", state, b)
        stepped = []
        for t in range(steps):
            call = f"step(tokens [{b}], state, memory, src_mask) at step {t}"
            result = subject.call(call, decoder.step, tgt_in[:, t], state, memory, src_mask)
            if not (isinstance(result, tuple) and len(result) == 3):
                raise subject.fail(f"{call} result", "(logits, state, AttentionOutput)", shape(result))
            logits, state, attn = result
            _tensor(subject, f"{call}: logits", logits, (b, vocab), "[B, V]")
            _state(subject, f"{call}: state", state, b)
            if not isinstance(attn, AttentionOutput):
                raise subject.fail(f"{call}: attention", "AttentionOutput", type(attn).__name__)
            if attn.weights is not None:
                _check_distribution(subject, f"{call}: weights", attn.weights, src_mask, (b, 1, ls), "[B, 1, Ls]")
            stepped.append(logits)
        call = f"forward(tgt_in {shape(tgt_in)}, memory, src_mask)"
        out = subject.call(call, decoder, tgt_in, memory, src_mask, need_weights=True)
        if not isinstance(out, DecoderOutput):
            raise subject.fail(f"{call} result", "DecoderOutput(logits, weights, head_weights)", type(out).__name__)
        _tensor(subject, f"{call}: logits", out.logits, (b, steps, vocab), "[B, Lt, V]")
        if out.weights is not None:
            _check_distribution(subject, f"{call}: weights", out.weights, src_mask, (b, steps, ls), "[B, Lt, Ls]")
        _close(subject, "forward(...) logits vs. the same tokens fed to step() one by one", out.logits, torch.stack(stepped, dim=1))
        quick = subject.call(f"{call[:-1]}, need_weights=False)", decoder, tgt_in, memory, src_mask, need_weights=False)
        if not isinstance(quick, DecoderOutput):
            raise subject.fail("forward(..., need_weights=False) result", "DecoderOutput", type(quick).__name__)
        _close(subject, "forward(..., need_weights=False) logits vs. need_weights=True", quick.logits, out.logits)
    return out


def _state(subject: Subject, what: str, state: object, batch: int) -> None:
    """A decoding state is a tuple of tensors whose first axis is the batch (beam search reorders it)."""
    if not isinstance(state, tuple) or not all(isinstance(part, Tensor) for part in state):
        raise subject.fail(what, "a tuple of tensors", shape(state))
    for part in state:
        if part.dim() == 0 or part.shape[0] != batch:
            raise subject.fail(f"{what}: every state tensor batch-first", f"first axis {batch}", shape(part))


# --------------------------------------------------------------------------- tasks


def probe_task(task: Task, subject: Subject | None = None, examples: int = 20, seed: int = 0) -> list[Example]:
    """Check a task: alphabets, ``max_source_length`` (a property), and ``examples`` examples
    drawn twice with the same seed: the same both times, characters within the alphabets,
    sources no longer than max_source_length and accepted by ``check_source``, alignments one
    entry per target character with source indices in range. Returns the examples."""
    subject = subject or Subject("tasks", type(task))
    for name in ("source_alphabet", "target_alphabet"):
        value = getattr(task, name, None)
        if not isinstance(value, str) or not value:
            raise subject.fail(f"attribute {name}", "a non-empty str", repr(value))
    longest = subject.call("max_source_length", getattr, task, "max_source_length")
    if callable(longest):
        raise subject.fail("max_source_length", "a property (add @property)", "a method")
    _positive_int(subject, "max_source_length", longest)
    space = subject.call("space_size", getattr, task, "space_size")
    if space is not None:
        _positive_int(subject, "space_size", space)
    drawn = subject.call(f"generate({examples}, seed={seed})", task.generate, examples, seed)
    again = subject.call(f"generate({examples}, seed={seed})", task.generate, examples, seed)
    if not isinstance(drawn, list) or len(drawn) != examples:
        raise subject.fail(f"generate({examples}, seed={seed})", f"a list of {examples} examples", repr(drawn)[:80])
    for i, example in enumerate(drawn):
        _example(subject, task, example, longest, f"example {i} of generate({examples}, seed={seed})")
    if list(drawn) != list(again):
        first = next(i for i, (a, b) in enumerate(zip(drawn, again)) if a != b)
        raise subject.fail(
            f"generate({examples}, seed={seed}) twice (draw only from the rng given to sample())",
            "the same examples", f"{drawn[first]!r} then {again[first]!r}",
        )
    return drawn


def _example(subject: Subject, task: Task, example: object, longest: int, where: str) -> None:
    if not isinstance(example, Example):
        raise subject.fail(where, "Example(source, target, alignment)", repr(example)[:80])
    source, target, alignment = example
    if not isinstance(source, str) or not source:
        raise subject.fail(f"{where}: source", "a non-empty str", repr(source))
    if not isinstance(target, str):
        raise subject.fail(f"{where}: target", "a str", repr(target))
    for side, text, alphabet in (("source", source, task.source_alphabet), ("target", target, task.target_alphabet)):
        foreign = sorted({ch for ch in text if ch not in alphabet})
        if foreign:
            raise subject.fail(f"{where}: {side} {text!r}", f"characters of {side}_alphabet {alphabet!r}", f"{''.join(foreign)!r}")
    if len(source) > longest:
        raise subject.fail(f"{where}: source {source!r}", f"at most max_source_length = {longest} characters", len(source))
    refused = subject.call(f"check_source({source!r})", task.check_source, source)
    if refused is not None:
        raise subject.fail(f"{where}: check_source({source!r})", "None: a source the task draws is valid", repr(refused))
    if alignment is None:
        return
    if not isinstance(alignment, (tuple, list)) or len(alignment) != len(target):
        got = f"{len(alignment)} entries" if isinstance(alignment, (tuple, list)) else type(alignment).__name__
        raise subject.fail(
            f"{where}: alignment of target {target!r}",
            f"one entry per target character ({len(target)}; none for EOS)", got,
        )
    for t, entry in enumerate(alignment):
        if not isinstance(entry, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in entry):
            raise subject.fail(f"{where}: alignment entry {t}", "a tuple of source indices (ints)", repr(entry))
        outside = [i for i in entry if not 0 <= i < len(source)]
        if outside:
            raise subject.fail(
                f"{where}: alignment entry {t} (target {target[t]!r}) for source {source!r}",
                f"indices in 0..{len(source) - 1}", outside,
            )


# --------------------------------------------------------------------------- helpers


def required_options(cls: type, fixed: int) -> list[str]:
    """Names of the keyword options of ``cls.__init__`` that have no default, skipping the first
    ``fixed`` (positional, contract) parameters."""
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    return [
        p.name for p in params[fixed:]
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]  # fmt: skip


def first_of_each(modules: Iterable[nn.Module]) -> list[nn.Module]:
    """One module per (class, query_dim, key_dim): the scorers a decoder built, without repeats."""
    seen, kept = set(), []
    for module in modules:
        key = (type(module), getattr(module, "query_dim", None), getattr(module, "key_dim", None))
        if key not in seen:
            seen.add(key)
            kept.append(module)
    return kept


__all__ = [
    "PluginContractError",
    "Subject",
    "evaluating",
    "first_of_each",
    "probe_decoder",
    "probe_encoder",
    "probe_scorer",
    "probe_task",
    "required_options",
    "source_mask",
]
