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

This module holds what every probe uses: the contract error, the plugin under probe (named in every
message), the checks of tensors, distributions and agreeing paths, and the probe's quiet mode
(eval, no gradients, the random state kept). The probes themselves: :mod:`attnlab.plugins._probe_modules`
(scorers, encoders, decoders) and :mod:`attnlab.plugins._probe_task` (tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import torch
from torch import Tensor, nn

from attnlab.plugins.registry import PluginError, describe_plugins

_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")
_Module = TypeVar("_Module", bound=nn.Module)

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
        return PluginContractError(self.label(), problem, None if expected is None else str(expected), None if got is None else str(got))

    def call(self, what: str, fn: Callable[_Args, _Result], *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
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


def check_tensor(subject: Subject, what: str, value: object, expected: tuple[int, ...], names: str) -> Tensor:
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


def positive_int(subject: Subject, what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise subject.fail(what, "a positive int", repr(value))
    return value


def check_distribution(subject: Subject, what: str, weights: Tensor, mask: Tensor, expected: tuple[int, ...], names: str) -> None:
    """weights [B, ..., Lk]: the given shape, non-negative, exactly 0 where ``mask`` [B, Lk] is
    False, rows summing to 1."""
    check_tensor(subject, what, weights, expected, names)
    keep = mask.view(mask.shape[0], *([1] * (weights.dim() - 2)), mask.shape[-1]).expand_as(weights)
    masked = weights.masked_select(~keep)
    if masked.numel() and bool((masked != 0).any()):
        raise subject.fail(
            f"{what} on masked (padding) keys",
            "exactly 0 (use masked_softmax(scores, mask))",
            f"values up to {float(masked.abs().max()):.3g}",
        )
    if bool((weights < 0).any()):
        raise subject.fail(what, "non-negative weights", f"a weight of {float(weights.min()):.3g}")
    sums = weights.sum(-1)
    worst = float((sums - 1).abs().max())
    if worst > TOLERANCE:
        raise subject.fail(
            f"{what}: rows summed over the unmasked keys", "1", f"sums from {float(sums.min()):.4g} to {float(sums.max()):.4g}"
        )


def check_close(subject: Subject, what: str, a: Tensor, b: Tensor) -> None:
    if a.shape != b.shape:
        raise subject.fail(what, f"shape {shape(b)}", shape(a))
    if not a.numel():
        return
    diff, scale = float((a - b).abs().max()), 1 + float(b.abs().max())
    if diff > TOLERANCE * scale:
        raise subject.fail(what, f"the same values (within {TOLERANCE:g})", f"a difference of {diff:.3g}")


def float_like(module: nn.Module) -> dict[str, Any]:
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


def overrides(obj: object, base: type, name: str) -> bool:
    return getattr(type(obj), name) is not getattr(base, name)


def first_of_each(modules: Iterable[_Module]) -> list[_Module]:
    """One module per (class, query_dim, key_dim): the scorers a decoder built, without repeats."""
    seen, kept = set(), []
    for module in modules:
        key = (type(module), getattr(module, "query_dim", None), getattr(module, "key_dim", None))
        if key not in seen:
            seen.add(key)
            kept.append(module)
    return kept
